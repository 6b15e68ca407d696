//! `Inner`, what every clone of a [`Client`] shares: the pool, the subscriber, the settings,
//! the holds, the kinds' per-client state ([`KindState`]), the parking of waiters, the
//! release call, and what a Redis error means for the caller.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fred::clients::Pool;
use fred::interfaces::ClientLike;
use tokio::sync::watch;

use crate::client::batch;
use crate::client::hold_watch;
use crate::client::lock_scripts;
use crate::client::pubsub::PubSub;
use crate::client::redact;
use crate::client::refusal::{not_a_lock_found, refusal};
use crate::client::settings::{Settings, SUBSCRIBER_DOWN_RECHECK};
use crate::error::{Error, Result};
use crate::hold::backend;
use crate::hold::backend::BoxFuture;
use crate::hold::holds;
use crate::hold::holds::FieldMaker;
use crate::hold::kind;
use crate::hold::kind::LockKeys;
use crate::hold::meter;

#[derive(Debug)]
pub(crate) struct Inner {
    /// Becomes true when a command connection fails, for a client whose connections do not
    /// reconnect by themselves (a quorum node): the set must be replaced.
    pub(super) pool_failed: watch::Receiver<bool>,
    /// Coalesces plain acquires and releases (none on a cluster, or when turned off).
    pub(super) batcher: Option<batch::Batcher>,
    /// Its id, its holds and its background work.
    pub(super) shared: backend::Shared,
    /// Makes every hold's own field.
    pub(super) fields: FieldMaker,
    pub(super) settings: Settings,
    pub(super) pool: Pool,
    pub(super) pubsub: Arc<PubSub>,
    /// What each kind keeps per client (created on its first use), and their shutdown steps.
    pub(super) kinds: KindStates,
    /// The runtime the client was built on, where its background tasks run: a task started
    /// later (the fair heartbeat) runs there too, not on the runtime of whatever called it,
    /// which may end sooner.
    pub(super) runtime: tokio::runtime::Handle,
    /// Holds waiting for their watch (`hold_watch`).
    pub(super) watches: Arc<hold_watch::Watches>,
    /// Whether the pool is ours to close (not one given to `build_with_pool`).
    pub(super) owns_pool: bool,
    /// Acquire calls of this client asleep right now, waiting for a wake-up or a timer.
    pub(super) parked: AtomicUsize,
    /// A reconnect to find the current master is under way.
    pub(super) rediscovering: Arc<AtomicBool>,
    pub(super) shutting_down: AtomicBool,
    /// Turns true when `shutdown()` begins (work in flight makes its last attempts).
    pub(super) stopping: watch::Sender<bool>,
    pub(super) shutdown: watch::Sender<bool>,
}

/// What the kinds reach a client through: its fields are the client room's own. A command
/// connection, the subscriber, the settings, the record of holds, a new hold's field, the
/// runtime and the coalescer; and, further below, the running checks, the error mapping, the
/// release call and the kinds' per-client state.
impl Inner {
    /// A command connection: the pool's next.
    pub(crate) fn conn(&self) -> &fred::clients::Client {
        self.pool.next()
    }

    /// The command connections (for what a kind sends on more than one, or closes).
    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The client's subscriber.
    pub(crate) fn pubsub(&self) -> &Arc<PubSub> {
        &self.pubsub
    }

    /// Its id, its holds and its background work.
    pub(crate) fn shared(&self) -> &backend::Shared {
        &self.shared
    }

    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// A new hold's own field (`<client_id>:<n>`, never reused).
    pub(crate) fn new_field(&self) -> String {
        self.fields.next()
    }

    /// The runtime the client was built on, where its background tasks run.
    pub(crate) fn runtime(&self) -> &tokio::runtime::Handle {
        &self.runtime
    }

    /// The coalescer (none on a cluster, with `sync_replicas`, or when turned off).
    pub(crate) fn batcher(&self) -> Option<&batch::Batcher> {
        self.batcher.as_ref()
    }

    /// Turns true when `shutdown()` begins (work in flight makes its last attempts).
    pub(crate) fn stopping(&self) -> watch::Receiver<bool> {
        self.stopping.subscribe()
    }

    /// Turns true once `shutdown()` has released everything: background work ends.
    pub(crate) fn on_shutdown(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    /// A failed command connection (for a client whose connections do not reconnect by
    /// themselves).
    pub(crate) fn pool_failed(&self) -> watch::Receiver<bool> {
        self.pool_failed.clone()
    }
}

/// State that a kind keeps per client beside the client's own (a fair lock's line of waiters,
/// the permits that a semaphore's guards hold), created on the kind's first use on this
/// client ([`Inner::state`]). The client knows no kind: [`Client::shutdown`] runs each
/// created state's [`at_shutdown`](KindState::at_shutdown).
pub(crate) trait KindState: Default + std::fmt::Debug + Send + Sync + 'static {
    /// What shutdown must do for this kind (leave lines, give back permits), spawned on
    /// `work` so that it runs beside the releases of the holds. Called twice: in
    /// [`Round::First`], once the work in flight has settled, and in [`Round::Late`], after
    /// the attempts that passed their running check just before shutdown began have ended,
    /// for what they added. The late round must redo nothing the first did, and must not wait
    /// without a bound on anything a caller's future can hold (a future kept alive but no
    /// longer polled keeps what it holds).
    fn at_shutdown(&self, inner: &Arc<Inner>, work: &mut tokio::task::JoinSet<()>, round: Round);

    /// What shutdown must have done before it releases the holds (a record that must say how
    /// a hold ended before the hold's lock is free for the next), spawned on `work`; shutdown
    /// waits for it (each call bounded by its command timeout) before the releases start.
    /// Nothing by default.
    fn before_releases(&self, inner: &Arc<Inner>, work: &mut tokio::task::JoinSet<()>) {
        let _ = (inner, work);
    }

    /// What this kind renews in the client's watchdog round, beside the holds (a permit
    /// semaphore's leases): one call per batch, each true when it succeeded (a false one
    /// makes the round come again sooner). Nothing by default.
    fn renewals(&self, inner: &Arc<Inner>) -> Vec<BoxFuture<bool>> {
        let _ = inner;
        Vec::new()
    }
}

/// Which of shutdown's two rounds of kinds' steps (see [`KindState::at_shutdown`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Round {
    First,
    Late,
}

/// The kinds' states of one client, by type; a handful at most.
#[derive(Debug, Default)]
pub(crate) struct KindStates(std::sync::Mutex<Vec<Registered>>);

#[derive(Debug)]
struct Registered {
    of: std::any::TypeId,
    state: Arc<dyn std::any::Any + Send + Sync>,
    step: Arc<dyn ShutdownStep>,
}

/// [`KindState`]'s hooks behind a `dyn`.
pub(crate) trait ShutdownStep: std::fmt::Debug + Send + Sync {
    fn before_releases(&self, inner: &Arc<Inner>, work: &mut tokio::task::JoinSet<()>);
    fn at_shutdown(&self, inner: &Arc<Inner>, work: &mut tokio::task::JoinSet<()>, round: Round);
    fn renewals(&self, inner: &Arc<Inner>) -> Vec<BoxFuture<bool>>;
}

impl<T: KindState> ShutdownStep for T {
    fn before_releases(&self, inner: &Arc<Inner>, work: &mut tokio::task::JoinSet<()>) {
        KindState::before_releases(self, inner, work)
    }
    fn at_shutdown(&self, inner: &Arc<Inner>, work: &mut tokio::task::JoinSet<()>, round: Round) {
        KindState::at_shutdown(self, inner, work, round)
    }
    fn renewals(&self, inner: &Arc<Inner>) -> Vec<BoxFuture<bool>> {
        KindState::renewals(self, inner)
    }
}

impl KindStates {
    /// The renewals of every state created so far, for the watchdog's round.
    pub(crate) fn renewals(&self, inner: &Arc<Inner>) -> Vec<BoxFuture<bool>> {
        let steps = self.steps();
        steps.iter().flat_map(|s| s.renewals(inner)).collect()
    }

    /// The shutdown steps of every state created so far.
    pub(crate) fn steps(&self) -> Vec<Arc<dyn ShutdownStep>> {
        let states = self.0.lock().unwrap_or_else(|e| e.into_inner());
        states.iter().map(|r| r.step.clone()).collect()
    }
}

impl Inner {
    /// This client's state of kind `T`, created (and its shutdown step registered) on first
    /// use.
    pub(crate) fn state<T: KindState>(&self) -> Arc<T> {
        let mut states = self.kinds.0.lock().unwrap_or_else(|e| e.into_inner());
        let of = std::any::TypeId::of::<T>();
        if let Some(r) = states.iter().find(|r| r.of == of) {
            if let Ok(state) = r.state.clone().downcast::<T>() {
                return state;
            }
        }
        let state = Arc::new(T::default());
        states.push(Registered {
            of,
            state: state.clone(),
            step: state.clone(),
        });
        state
    }

    /// A waiter's sleep: until `woken`, or for `sleep`, and never past the caller's
    /// `deadline`; counted in [`Client::parked_waiters`]. Returns `None`, without sleeping,
    /// when the deadline has already passed (the caller gives up), else whether `woken`
    /// fired; and [`Error::Shutdown`] if the client shut down meanwhile. While the subscriber
    /// is down, no message can wake it: the sleep is cut to a short re-check.
    pub(crate) async fn park<F: std::future::Future>(
        &self,
        sleep: Duration,
        deadline: Option<tokio::time::Instant>,
        woken: F,
    ) -> Result<Option<bool>> {
        // While the subscriber is down, no release message can wake us: look again soon
        // rather than sleep for the holder's whole lease.
        let sleep = if self.pubsub.is_connected() {
            sleep
        } else {
            sleep.min(SUBSCRIBER_DOWN_RECHECK)
        };
        self.park_for(sleep, deadline, woken).await
    }

    /// The sleep of a waiter that no message wakes (one that polls): exactly `sleep`, never
    /// past the caller's `deadline`, whatever the subscriber's state (it waits on none, so a
    /// pub/sub outage must not make it poll faster); counted in
    /// [`Client::parked_waiters`]. Returns false, without sleeping, when the deadline has
    /// already passed (the caller gives up), else true; and [`Error::Shutdown`] if the client
    /// shut down meanwhile.
    pub(crate) async fn park_polling(
        &self,
        sleep: Duration,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<bool> {
        let never = std::future::pending::<()>();
        Ok(self.park_for(sleep, deadline, never).await?.is_some())
    }

    /// [`park`](Self::park)'s sleep, for exactly `sleep` (cut to the deadline).
    async fn park_for<F: std::future::Future>(
        &self,
        sleep: Duration,
        deadline: Option<tokio::time::Instant>,
        woken: F,
    ) -> Result<Option<bool>> {
        struct Parked<'a>(&'a AtomicUsize);
        impl Drop for Parked<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let now = tokio::time::Instant::now();
        let sleep = match deadline {
            Some(d) if now >= d => return Ok(None),
            Some(d) => sleep.min(d - now),
            None => sleep,
        };
        self.parked.fetch_add(1, Ordering::SeqCst);
        let parked = Parked(&self.parked);
        // Shutdown ends every park at once, whatever wakes it otherwise (a waiter that polls
        // has nothing else to end its sleep early).
        let mut stopping = self.stopping.subscribe();
        let woke = tokio::select! {
            r = tokio::time::timeout(sleep, woken) => r.is_ok(),
            _ = stopping.wait_for(|s| *s) => false,
        };
        if woke {
            meter::step("woken");
        }
        drop(parked);
        self.check_running()?;
        Ok(Some(woke))
    }

    pub(crate) fn check_running(&self) -> Result<()> {
        if self.shutting_down.load(Ordering::SeqCst) {
            Err(Error::Shutdown)
        } else {
            Ok(())
        }
    }

    /// Runs the release call of `keys`' kind for `field` (`all`: the whole hold, else one
    /// count), through the batcher when the kind allows it: `Some(1)` (the hold is gone),
    /// `Some(0)` (counts are left) or `None` (this hold is not there).
    pub(crate) async fn run_release(
        &self,
        keys: &LockKeys,
        field: &str,
        all: bool,
    ) -> std::result::Result<Option<i64>, fred::error::Error> {
        let call = keys.kind.release(keys, field, all, &self.call_context());
        meter::step("release.sent");
        let r = match (&self.batcher, call.coalesce) {
            (Some(b), Some(how)) => {
                let op = batch::Op {
                    script: call.script,
                    keys: call.keys,
                    args: call.args,
                    how,
                };
                b.run(op).await
            }
            _ => {
                call.script
                    .run(self.pool.next(), call.keys, call.args)
                    .await
            }
        };
        meter::step("release.replied");
        r
    }

    /// What a kind's call needs from this client.
    pub(crate) fn call_context(&self) -> kind::CallContext {
        kind::CallContext {
            publish: self.publish_cmd(),
            grace_ms: self.grace_ms(),
        }
    }

    /// The command scripts publish wake-ups with: sharded on a cluster, so that the message
    /// goes to the lock's shard only (and SPUBLISH is allowed in a script on that slot).
    pub(crate) fn publish_cmd(&self) -> &'static str {
        if self.pubsub.sharded {
            "spublish"
        } else {
            "publish"
        }
    }

    /// Splits `items` into script batches of at most `renew_batch`. On a cluster a script may
    /// only touch one slot, so a batch holds the locks of one slot (all keys of a lock share
    /// its slot through the hash tag).
    pub(crate) fn batches<T: Clone>(
        &self,
        items: &[T],
        lock_key: impl Fn(&T) -> &str,
    ) -> Vec<Vec<T>> {
        let size = self.settings.renew_batch;
        if !self.pubsub.cluster {
            return items.chunks(size).map(<[T]>::to_vec).collect();
        }
        let mut by_slot: std::collections::BTreeMap<u16, Vec<T>> = Default::default();
        for item in items {
            let slot = fred::types::Key::from(lock_key(item)).cluster_hash();
            by_slot.entry(slot).or_default().push(item.clone());
        }
        by_slot
            .into_values()
            .flat_map(|v| v.chunks(size).map(<[T]>::to_vec).collect::<Vec<_>>())
            .collect()
    }

    /// The fencing counter's life once seeded, in ms; 0 for counters that never expire
    /// ([`ClientBuilder::persistent_fencing_counters`](crate::ClientBuilder::persistent_fencing_counters)).
    pub(crate) fn grace_ms(&self) -> u64 {
        if self.settings.persistent_counters {
            return 0;
        }
        self.settings.counter_grace.as_millis() as u64
    }

    /// `name` with the client's [`key_prefix`](ClientBuilder::key_prefix), if any.
    pub(crate) fn named(&self, name: String) -> String {
        if self.settings.key_prefix.is_empty() {
            name
        } else {
            format!("{}{name}", self.settings.key_prefix)
        }
    }

    /// The server's URL without credentials, for messages.
    pub(crate) fn server(&self) -> String {
        redact::url(&self.settings.url)
    }

    /// Reconnects every connection (once at a time), so that a Sentinel client finds the
    /// current master and a cluster client the current topology.
    pub(crate) fn rediscover(&self) {
        if self.rediscovering.swap(true, Ordering::SeqCst) {
            return;
        }
        let (pool, sub) = (self.pool.clone(), self.pubsub.clone());
        // A quorum node's connections are never moved to another server instance.
        let auto_reconnect = self.settings.auto_reconnect;
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            self.rediscovering.store(false, Ordering::SeqCst);
            return;
        };
        let done = self.rediscovering.clone();
        rt.spawn(async move {
            tracing::warn!(
                "a master refused writes (READONLY): reconnecting to find the current one"
            );
            if auto_reconnect {
                let _ = pool.force_reconnection().await;
            }
            let _ = sub.subscriber.force_reconnection().await;
            sub.wake_all();
            done.store(false, Ordering::SeqCst);
        });
    }

    /// Queues `hold` for its watch (`hold_watch`), if this client watches holds.
    pub(crate) fn watch_hold(&self, hold: &Arc<holds::Hold>) {
        if self.settings.watch_holds {
            hold_watch::watch(
                &self.watches,
                &self.pubsub,
                &self.pool,
                &self.runtime,
                &self.shutdown,
                hold,
            );
        }
    }

    /// Whether the lock hash `lock` exists, and `field`'s value in it (none for `""`), in one
    /// read that first makes sure the key is a lock: `NotALock` / `WrongType` otherwise
    /// (`lua/check.lua`), so that data under a lock's name is never reported as a held lock.
    pub(crate) async fn check(&self, lock: &str, field: String) -> Result<(bool, Option<String>)> {
        let (exists, value, _) = self.check_with_pttl(lock, field).await?;
        Ok((exists, value))
    }

    /// [`check`](Self::check), with the lock's PTTL (-2: no key, -1: no expiry).
    pub(crate) async fn check_with_pttl(
        &self,
        lock: &str,
        field: String,
    ) -> Result<(bool, Option<String>, i64)> {
        let (exists, value, pttl): (i64, Option<String>, i64) = lock_scripts::CHECK
            .run_read_only(self.pool.next(), vec![lock.to_string()], vec![field])
            .await
            .map_err(|e| self.error("check", lock, e))?;
        Ok((exists == 1, value, pttl))
    }

    /// Turns a fred error into ours, naming the server, what we were doing and on which key.
    pub(crate) fn error(&self, operation: &'static str, key: &str, e: fred::error::Error) -> Error {
        use fred::error::ErrorKind;
        if self.shutting_down.load(Ordering::SeqCst) {
            return Error::Shutdown;
        }
        match e.kind() {
            ErrorKind::Timeout => {
                return Error::Timeout {
                    operation,
                    server: self.server(),
                    timeout: self.settings.command_timeout,
                }
            }
            ErrorKind::IO | ErrorKind::Canceled => {
                return Error::Connection {
                    url: self.server(),
                    cause: redact::in_text(
                        &format!("during `{operation}`: {}", e.details()),
                        &self.settings.url,
                    ),
                }
            }
            _ => {}
        }
        // First: its text names a field of the user's data (escaped, no spaces), which must
        // not be read as another error code.
        if e.details().contains("NOTALOCK ") {
            return Error::NotALock {
                key: key.to_string(),
                found: not_a_lock_found(e.details()),
            };
        }
        if let Some(refused) = refusal(&self.server(), operation, key, &e) {
            return refused;
        }
        if e.details().starts_with("READONLY") {
            // We are talking to a master that was demoted (a Sentinel failover): reconnect,
            // which asks the sentinels for the current master. Callers retry.
            self.rediscover();
        } else if e.details().contains("WRONGTYPE") {
            return Error::WrongType {
                key: key.to_string(),
            };
        }
        Error::Redis {
            operation,
            server: self.server(),
            source: e,
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        if self.shutting_down.load(Ordering::SeqCst) {
            return;
        }
        // The last handle went without `shutdown()` (for example `main` returned and the
        // runtime dropped the release tasks): say what is left to expire on the server.
        let left: Vec<String> = self
            .shared
            .holds
            .all()
            .iter()
            .filter(|h| !h.is_lost())
            .map(|h| h.keys.lock.clone())
            .collect();
        if !left.is_empty() {
            tracing::warn!(
                locks = ?left,
                "relock client dropped while holding locks; they stay held until their lease ends. \
                 Call Client::shutdown().await (or use Lock::with) before the runtime ends"
            );
        }
        let (pool, sub) = (
            self.owns_pool.then(|| self.pool.clone()),
            self.pubsub.subscriber.clone(),
        );
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = sub.quit().await;
                if let Some(pool) = pool {
                    let _ = pool.quit().await;
                }
            });
        }
    }
}
