//! [`Lock`]: the handle to one named reentrant lock, and the acquire/wait loop.

use std::pin::pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use fred::interfaces::{HashesInterface, KeysInterface, SortedSetsInterface};
use tokio::sync::OwnedMutexGuard;
use tokio::time::Instant;
use tracing::Instrument;

use crate::client::{validate_lease, Inner};
use crate::error::{Error, Result};
use crate::fair::QueueEntry;
use crate::guard::LockGuard;
use crate::holds::{Hold, HoldKey};
use crate::keys::LockKeys;
use crate::owner::Owner;
use crate::scripts;

/// How long a waiter sleeps when the holder's key has no TTL (a foreign holder), between
/// checks. Release messages still wake it at once.
pub(crate) const NO_TTL_RECHECK: Duration = Duration::from_secs(1);

/// A reentrant distributed lock, wire-compatible with Redisson's `RLock`.
///
/// A cheap handle (`Clone + Send + Sync`) made by [`Client::lock`](crate::Client::lock).
/// Compared with `tokio::sync::Mutex`:
/// - **Owner.** The holder is an [`Owner`], by default the current tokio task; the same owner
///   can lock again without waiting (the hold count goes up) and each guard takes one off.
/// - **Lease.** Without [`with_lease`](Lock::with_lease) the lease is the client's watchdog
///   lease (30 s) and the watchdog renews it while a guard lives; with a fixed lease the lock
///   simply expires after it. Either way a crashed holder frees the lock after its lease.
/// - **Waiting.** Waiters sleep until a release message (pub/sub) or until the holder's lease
///   ends, whichever is first. Not fair: any waiter may win. No polling.
/// - **Loss.** A hold can be lost (lease ran out, key deleted, Redis restarted empty);
///   [`LockGuard::lost`] resolves then. Fence your writes with
///   [`LockGuard::fencing_token`].
///
/// ```no_run
/// # async fn f() -> relock::Result<()> {
/// use std::time::Duration;
/// let client = relock::Client::connect("redis://127.0.0.1:6379").await?;
/// let lock = client.lock("orders:42");
/// {
///     let guard = lock.lock().await?;            // waits as long as it takes
///     let again = lock.lock().await?;            // same task: re-enters, count 2
///     assert_eq!(lock.hold_count().await?, 2);
///     drop(again);
///     guard.unlock().await?;
/// }
/// if let Some(guard) = lock.try_lock_for(Duration::from_secs(3)).await? {
///     println!("token {}", guard.fencing_token());
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Lock {
    inner: Arc<Inner>,
    name: Arc<str>,
    keys: Option<Arc<LockKeys>>,
    lease: Option<Duration>,
    fair: bool,
}

pub(crate) enum Attempt {
    Acquired(LockGuard),
    /// Held by someone else; their remaining lease in ms (-1: no expiry, -2: just vanished).
    Held(i64),
    /// Fair lock: free, but another waiter is first; it has this many ms to take it.
    Behind(i64),
    /// Our own release of this lock is in flight; try again once it is done.
    Retry,
}

/// Which acquire script an attempt runs, and how.
#[derive(Debug, Clone)]
pub(crate) enum Mode {
    /// `acquire.lua`: the plain lock.
    Plain,
    /// `fair_acquire.lua` without joining the line (`try_lock`, and the first attempt).
    FairTry,
    /// `fair_acquire.lua`, joining the line (or staying in it) if not granted.
    FairWait(Arc<QueueEntry>),
}

impl Lock {
    pub(crate) fn new(inner: Arc<Inner>, name: String, fair: bool) -> Self {
        let keys = LockKeys::new(&name, fair).ok().map(Arc::new);
        Lock {
            inner,
            name: name.into(),
            keys,
            lease: None,
            fair,
        }
    }

    pub(crate) fn inner(&self) -> &Arc<Inner> {
        &self.inner
    }

    /// Whether this is a fair lock (made by [`Client::fair_lock`](crate::Client::fair_lock)).
    pub fn is_fair(&self) -> bool {
        self.fair
    }

    /// The lock's name (also the key of its hash).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The same lock with a fixed lease: holds taken through it expire after `lease` and the
    /// watchdog leaves them alone. Validated when used (at least 1 ms).
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }

    /// The fixed lease, if any.
    pub fn lease(&self) -> Option<Duration> {
        self.lease
    }

    fn keys(&self) -> Result<Arc<LockKeys>> {
        match &self.keys {
            Some(k) => Ok(k.clone()),
            None => {
                Err(LockKeys::new(&self.name, self.fair).expect_err("keys failed to build before"))
            }
        }
    }

    fn field(&self, owner: &Owner) -> String {
        format!("{}:{}", self.inner.settings.client_id, owner)
    }

    /// Acquires the lock, waiting as long as it takes.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad name or lease, [`Error::WrongType`] if the key
    /// holds something else, connection errors and [`Error::Shutdown`].
    ///
    /// # Cancel safety
    /// Cancel safe: if the future is dropped, any acquisition that was already granted is
    /// released, and its subscription is dropped. Like `tokio::sync::Mutex::lock`, you lose
    /// your chance at the lock.
    pub async fn lock(&self) -> Result<LockGuard> {
        loop {
            if let Some(g) = self.acquire(None).await? {
                return Ok(g);
            }
        }
    }

    /// Acquires the lock if it is free (or already held by this owner); never waits.
    /// `Ok(None)` means another owner holds it.
    ///
    /// # Errors
    /// As [`lock`](Lock::lock).
    ///
    /// # Cancel safety
    /// As [`lock`](Lock::lock).
    pub async fn try_lock(&self) -> Result<Option<LockGuard>> {
        self.acquire(Some(Duration::ZERO)).await
    }

    /// Acquires the lock, waiting at most about `wait`. `Ok(None)` means it was still held.
    ///
    /// # Errors
    /// As [`lock`](Lock::lock).
    ///
    /// # Cancel safety
    /// As [`lock`](Lock::lock).
    pub async fn try_lock_for(&self, wait: Duration) -> Result<Option<LockGuard>> {
        self.acquire(Some(wait)).await
    }

    async fn acquire(&self, wait: Option<Duration>) -> Result<Option<LockGuard>> {
        self.inner.check_running()?;
        let keys = self.keys()?;
        if let Some(lease) = self.lease {
            validate_lease("lease", lease)?;
        }
        let field = self.field(&Owner::current());
        let span = tracing::debug_span!("acquire", lock = %self.name, owner = %field);
        self.acquire_as(keys, field, wait).instrument(span).await
    }

    async fn acquire_as(
        &self,
        keys: Arc<LockKeys>,
        field: String,
        wait: Option<Duration>,
    ) -> Result<Option<LockGuard>> {
        let hold_key: HoldKey = (keys.lock.clone(), field);
        if self.fair {
            return self.acquire_fair(keys, hold_key, wait).await;
        }
        let deadline = wait.and_then(|w| Instant::now().checked_add(w));
        let expired = |now: Instant| deadline.is_some_and(|d| now >= d);
        let own_hold = self
            .inner
            .holds
            .get(&hold_key)
            .is_some_and(|h| h.count() > 0);
        let joining = wait != Some(Duration::ZERO)
            && !own_hold
            && self.inner.pubsub.is_subscribed(&keys.channel);
        if !joining {
            // The uncontended path: one round trip, no subscription.
            if let Attempt::Acquired(g) = self.attempt(&keys, &hold_key, Mode::Plain).await? {
                return Ok(Some(g));
            }
            if expired(Instant::now()) || wait == Some(Duration::ZERO) {
                return Ok(None);
            }
        }
        // Subscribe before retrying, so a release between our attempt and our sleep still
        // wakes us (Redisson #1763). Joining an existing subscription costs no round trip.
        let subscribe = self.inner.pubsub.subscribe(&keys.channel);
        let sub = match deadline {
            Some(d) => match tokio::time::timeout_at(d, subscribe).await {
                Ok(r) => r,
                Err(_) => return Ok(None),
            },
            None => subscribe.await,
        }
        .map_err(|e| self.inner.error("subscribe", &keys.channel, e))?;
        // Other local waiters already know the lock is held, and until when: park first
        // instead of asking Redis again (one fewer script call per handoff).
        let mut known = if joining { sub.known_held_for() } else { None };
        loop {
            let mut woken = pin!(sub.notified());
            woken.as_mut().enable();
            let sleep = match known.take() {
                Some(held_for) => held_for,
                None => match self.attempt(&keys, &hold_key, Mode::Plain).await? {
                    Attempt::Acquired(g) => {
                        // Local waiters arriving now can park until our release message.
                        sub.set_held_for(g.remaining());
                        return Ok(Some(g));
                    }
                    Attempt::Held(p) if p > 0 => {
                        let held_for = Duration::from_millis(p as u64 + 1);
                        sub.set_held_for(held_for);
                        held_for
                    }
                    Attempt::Held(-1) => NO_TTL_RECHECK,
                    Attempt::Held(_) | Attempt::Behind(_) | Attempt::Retry => continue,
                },
            };
            if !self.inner.park(sleep, deadline, woken).await? {
                return Ok(None);
            }
        }
    }

    /// One acquire script call. It runs in its own task, so that a reply arriving after the
    /// caller gave up still becomes a guard, and that guard's drop releases it.
    ///
    /// A transient failure (a stale connection after a Redis restart, a timeout) is retried
    /// with a short backoff for up to one command timeout; the failed attempt has already
    /// removed any hold it may have left. Then the error is returned.
    pub(crate) async fn attempt(
        &self,
        keys: &Arc<LockKeys>,
        hold_key: &HoldKey,
        mode: Mode,
    ) -> Result<Attempt> {
        let give_up = Instant::now() + self.inner.settings.command_timeout;
        let mut backoff = Duration::from_millis(5);
        loop {
            await_release(&self.inner, hold_key).await;
            // A leave of the line must not overtake this attempt (it would put us back).
            let gate = match &mode {
                Mode::FairWait(e) => Some(e.gate.clone().lock_owned().await),
                _ => None,
            };
            let task = attempt_task(
                self.inner.clone(),
                keys.clone(),
                hold_key.clone(),
                self.lease,
                mode.clone(),
                gate,
            );
            match tokio::spawn(task).await.map_err(|_| Error::Shutdown)? {
                Err(e) if e.is_transient() && Instant::now() + backoff < give_up => {
                    tracing::debug!(error = %e, "acquire failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_millis(200));
                    self.inner.check_running()?;
                }
                other => return other,
            }
        }
    }

    /// Whether anyone holds the lock.
    ///
    /// # Errors
    /// Connection errors; [`Error::InvalidArgument`] for a bad name.
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    pub async fn is_locked(&self) -> Result<bool> {
        let keys = self.keys()?;
        let n: i64 = self
            .inner
            .pool
            .next()
            .exists(keys.lock.as_str())
            .await
            .map_err(|e| self.inner.error("exists", &keys.lock, e))?;
        Ok(n == 1)
    }

    /// Whether the calling owner ([`Owner::current`]) holds the lock.
    ///
    /// # Errors
    /// As [`is_locked`](Lock::is_locked).
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    pub async fn is_held_by_current_task(&self) -> Result<bool> {
        Ok(self.hold_count().await? > 0)
    }

    /// How many holds the calling owner has on the lock (0 if none).
    ///
    /// # Errors
    /// As [`is_locked`](Lock::is_locked); [`Error::WrongType`] if the key is not a lock.
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    pub async fn hold_count(&self) -> Result<u32> {
        let keys = self.keys()?;
        let field = self.field(&Owner::current());
        let n: Option<u32> = self
            .inner
            .pool
            .next()
            .hget(keys.lock.as_str(), field.as_str())
            .await
            .map_err(|e| self.inner.error("hget", &keys.lock, e))?;
        Ok(n.unwrap_or(0))
    }

    /// The lock's remaining lease on the server, or `None` if it is free (or has no expiry).
    ///
    /// # Errors
    /// As [`is_locked`](Lock::is_locked).
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    pub async fn remaining_lease(&self) -> Result<Option<Duration>> {
        let keys = self.keys()?;
        let ms: i64 = self
            .inner
            .pool
            .next()
            .pttl(keys.lock.as_str())
            .await
            .map_err(|e| self.inner.error("pttl", &keys.lock, e))?;
        Ok((ms >= 0).then(|| Duration::from_millis(ms as u64)))
    }

    /// How many owners wait in a fair lock's line (0 for a plain lock, which has none).
    ///
    /// # Errors
    /// As [`is_locked`](Lock::is_locked).
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    pub async fn queue_len(&self) -> Result<usize> {
        let keys = self.keys()?;
        let Some(q) = &keys.queue else { return Ok(0) };
        let n: usize = self
            .inner
            .pool
            .next()
            .zcard(q.queue.as_str())
            .await
            .map_err(|e| self.inner.error("zcard", &q.queue, e))?;
        Ok(n)
    }

    /// The calling owner's place in a fair lock's line (0: next to get it), or `None` if it
    /// is not waiting (or the lock is not fair).
    ///
    /// An honest wait estimate from it: the holder's
    /// [`remaining_lease`](Lock::remaining_lease), plus, for each owner ahead, how long it
    /// will hold the lock (at most its lease, if it uses a fixed one). The line itself stores
    /// no estimates, so nothing drifts when waiters leave.
    ///
    /// # Errors
    /// As [`is_locked`](Lock::is_locked).
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    pub async fn queue_position(&self) -> Result<Option<usize>> {
        let keys = self.keys()?;
        let Some(q) = &keys.queue else {
            return Ok(None);
        };
        let field = self.field(&Owner::current());
        let rank: Option<usize> = self
            .inner
            .pool
            .next()
            .zrank(q.queue.as_str(), field.as_str(), false)
            .await
            .map_err(|e| self.inner.error("zrank", &q.queue, e))?;
        Ok(rank)
    }

    /// Deletes the lock whoever holds it and wakes a waiter. Returns whether there was one.
    /// The old holder learns of it at its next renewal (`lost()` resolves).
    ///
    /// # Errors
    /// As [`is_locked`](Lock::is_locked).
    ///
    /// # Cancel safety
    /// If dropped after the command was sent, the lock may or may not have been deleted.
    pub async fn force_unlock(&self) -> Result<bool> {
        self.inner.check_running()?;
        let keys = self.keys()?;
        let r: i64 = scripts::FORCE_UNLOCK
            .run(
                self.inner.pool.next(),
                keys.release_keys(),
                vec![
                    self.inner.grace_ms().to_string(),
                    self.inner.publish_cmd().into(),
                ],
            )
            .await
            .map_err(|e| self.inner.error("force_unlock", &keys.lock, e))?;
        // Holds of this client on the lock are gone now; say so without waiting for renewal.
        for h in self.inner.holds.iter().filter(|h| h.key().0 == keys.lock) {
            h.value().mark_lost();
        }
        Ok(r == 1)
    }
}

/// Waits (bounded by the command timeout) while our own release of this lock is in flight,
/// so a quick re-lock by the same owner cannot be swallowed by that release.
async fn await_release(inner: &Inner, key: &HoldKey) {
    let Some(hold) = inner.holds.get(key).map(|h| h.value().clone()) else {
        return;
    };
    let mut gone = pin!(hold.gone.notified());
    gone.as_mut().enable();
    let still_there =
        || hold.is_releasing() && inner.holds.get(key).is_some_and(|h| Arc::ptr_eq(&h, &hold));
    if still_there() {
        let _ = tokio::time::timeout(inner.settings.command_timeout, gone).await;
    }
}

async fn attempt_task(
    inner: Arc<Inner>,
    keys: Arc<LockKeys>,
    hold_key: HoldKey,
    fixed_lease: Option<Duration>,
    mode: Mode,
    _gate: Option<OwnedMutexGuard<()>>,
) -> Result<Attempt> {
    let watchdog = fixed_lease.is_none();
    let lease = fixed_lease.unwrap_or(inner.settings.watchdog_lease);
    let field = hold_key.1.clone();
    let mut args = vec![
        lease.as_millis().to_string(),
        field.clone(),
        inner.grace_ms().to_string(),
    ];
    let (script, script_keys) = match (&mode, keys.queue_group()) {
        (Mode::FairTry | Mode::FairWait(_), Some([lock, channel, queue, alive, seq])) => {
            let (join, ticket) = match &mode {
                Mode::FairWait(e) => {
                    // Set before sending: if the reply is lost we may be in line.
                    e.queued.store(true, Ordering::SeqCst);
                    ("wait", e.ticket.load(Ordering::SeqCst))
                }
                _ => ("try", 0),
            };
            args.extend([
                inner.settings.fair_heartbeat.as_millis().to_string(),
                join.to_string(),
                ticket.to_string(),
                inner.publish_cmd().to_string(),
            ]);
            let k = vec![lock, keys.token.clone(), channel, queue, alive, seq];
            (&*scripts::FAIR_ACQUIRE, k)
        }
        _ => (
            &*scripts::ACQUIRE,
            vec![keys.lock.clone(), keys.token.clone()],
        ),
    };
    let sent = Instant::now();
    let conn = inner.pool.next();
    let reply = script.run::<Vec<i64>>(conn, script_keys, args).await;
    if let (Mode::FairWait(e), Ok(r)) = (&mode, &reply) {
        match r.as_slice() {
            [0, _, ticket, _, _] => e.ticket.store(*ticket, Ordering::SeqCst),
            // Granted or re-entered: the script took us out of the line.
            _ => e.queued.store(false, Ordering::SeqCst),
        }
    }
    let reply = match reply {
        Ok(r) => r,
        Err(e) => {
            let err = inner.error("acquire", &keys.lock, e);
            // A WRONGTYPE reply means the script ran and changed nothing.
            if !matches!(err, Error::WrongType { .. }) {
                clean_up_unknown_outcome(&inner, &keys, &hold_key).await;
            }
            return Err(err);
        }
    };
    let valid_until = sent + lease;
    let new_hold = |token: i64| {
        let hold = Arc::new(Hold::new(
            keys.clone(),
            field.clone(),
            token as u64,
            valid_until,
        ));
        hold.add_guard(watchdog, valid_until);
        if let Some(old) = inner.holds.insert(hold_key.clone(), hold.clone()) {
            // The server says our earlier hold is gone (or we adopt a hold it still has).
            old.mark_lost();
            old.gone.notify_waiters();
        }
        hold
    };
    match reply.as_slice() {
        [1, token] => {
            if let Some((wanted, timeout)) = inner.settings.sync_replicas {
                // Before anyone relies on it, the grant must be on `wanted` replicas.
                let acked = wait_replicas(conn, &keys.lock, wanted, timeout).await;
                if acked.as_ref().map_or(true, |a| *a < i64::from(wanted)) {
                    clean_up_unknown_outcome(&inner, &keys, &hold_key).await;
                    return Err(match acked {
                        Ok(acked) => Error::ReplicationFailed {
                            name: keys.lock.clone(),
                            acked: acked.max(0) as u32,
                            wanted,
                            timeout,
                        },
                        Err(e) => inner.error("wait", &keys.lock, e),
                    });
                }
            }
            Ok(Attempt::Acquired(LockGuard::new(
                inner.clone(),
                new_hold(*token),
                watchdog,
            )))
        }
        [2, token, _count] => {
            let existing = inner.holds.get(&hold_key).map(|h| h.value().clone());
            match existing {
                Some(h) if h.add_guard(watchdog, valid_until) => Ok(Attempt::Acquired(
                    LockGuard::new(inner.clone(), h, watchdog),
                )),
                // Our own release of every hold is racing this re-entry and will undo it.
                Some(h) if h.is_releasing() && !h.is_lost() => Ok(Attempt::Retry),
                // The server has a hold we don't know of (a reply that was lost) or one we had
                // given up on: adopt it. Its extra counts go with the final release ("all").
                _ => Ok(Attempt::Acquired(LockGuard::new(
                    inner.clone(),
                    new_hold(*token),
                    watchdog,
                ))),
            }
        }
        [0, pttl] | [0, pttl, _, _, 0] => Ok(Attempt::Held(*pttl)),
        [0, bound, _, _, 1] => Ok(Attempt::Behind(*bound)),
        other => Err(Error::Redis {
            operation: "acquire",
            server: inner.server(),
            source: fred::error::Error::new(
                fred::error::ErrorKind::Protocol,
                format!("unexpected acquire reply {other:?}"),
            ),
        }),
    }
}

/// `WAIT wanted timeout` on the connection that ran the acquire (on a cluster, to the node
/// that owns the lock's slot): how many replicas acknowledged every write sent before it.
async fn wait_replicas(
    conn: &fred::clients::Client,
    lock: &str,
    wanted: u32,
    timeout: Duration,
) -> std::result::Result<i64, fred::error::Error> {
    use fred::interfaces::{ClusterInterface, ServerInterface};
    let ms = timeout.as_millis() as i64;
    let slot = fred::types::Key::from(lock).cluster_hash();
    match conn
        .cached_cluster_state()
        .and_then(|s| s.get_server(slot).cloned())
    {
        Some(node) => {
            conn.with_cluster_node(node)
                .wait(i64::from(wanted), ms)
                .await
        }
        None => conn.wait(i64::from(wanted), ms).await,
    }
}

/// An acquire whose reply never came may have been granted. If this owner has no live hold
/// of the lock, any server-side hold is such a ghost: remove it now rather than let it block
/// others until its lease ends. Done before the error is returned, so the caller's retry
/// cannot race it.
async fn clean_up_unknown_outcome(inner: &Inner, keys: &LockKeys, hold_key: &HoldKey) {
    if inner.holds.get(hold_key).is_some_and(|h| h.count() > 0) {
        return;
    }
    if let Err(e) = inner.run_release(keys, &hold_key.1, true).await {
        tracing::debug!(lock = %keys.lock, error = %e, "could not clean up after a failed acquire; the lease will expire it");
    }
}
