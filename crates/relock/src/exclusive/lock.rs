//! [`Lock`]: the handle to one named lock (plain or fair), and the acquire/wait loop.

use std::sync::Arc;
use std::time::Duration;

use fred::interfaces::SortedSetsInterface;

use futures_util::future::BoxFuture;

use crate::client::guarded;
use crate::client::handle::Client;
use crate::client::identity;
use crate::client::inner::Inner;
use crate::client::lock_scripts;
use crate::client::scripts;
use crate::error::Result;
use crate::exclusive::acquire::{acquire_exclusive, acquire_spans, ExclusiveAcquire, Plan};
use crate::exclusive::attempt::{AcquireCall, Fresh};
use crate::exclusive::channel::LOCK_CHANNEL;
use crate::exclusive::coalesce;
use crate::exclusive::hash_field_holds;
use crate::exclusive::queries;
use crate::exclusive::wait;
use crate::hold::distributed_lock;
use crate::hold::guard::LockGuard;
use crate::hold::holds::Hold;
use crate::hold::kind::{CallContext, Coalescible, HoldKind, LockKeys, ScriptCall};
use crate::hold::reentry::{self, Target};
use crate::hold::wake::Format;

/// A distributed lock, wire-compatible with Redisson's `RLock`.
///
/// A cheap handle (`Clone + Send + Sync`) made by [`Client::lock`](crate::Client::lock),
/// [`Client::fair_lock`](crate::Client::fair_lock) or
/// [`Client::spin_lock`](crate::Client::spin_lock). Compared with `tokio::sync::Mutex`:
/// - **Exclusion.** The same: every `lock()` waits until no one else holds the lock, also
///   when the other holder is a future of the same task (a branch of `join!` or `select!`).
/// - **Re-entry** is explicit: inside [`LockGuard::scope`] (or [`Lock::with`]) a `lock()` of
///   the same lock re-enters the hold (its count goes up, same fencing token) instead of
///   waiting; see [`Reentrancy`](crate::Reentrancy) for explicit owners and the opt-in
///   per-task mode.
/// - **Lease.** Without [`with_lease`](Lock::with_lease) the lease is the client's watchdog
///   lease (30 s) and the watchdog renews it while a guard lives; with a fixed lease the lock
///   simply expires after it. Either way a crashed holder frees the lock after its lease.
/// - **Waiting.** Waiters sleep until a release message (pub/sub) or until the holder's lease
///   ends, whichever is first. Not fair: any waiter may win (a fair lock serves arrival
///   order). No polling (a spin lock, [`Client::spin_lock`](crate::Client::spin_lock), polls
///   instead, and uses no pub/sub).
/// - **Loss.** A hold can be lost (lease ran out, key deleted, Redis restarted empty);
///   [`LockGuard::lost`] resolves then, no later than [`LockGuard::valid_until`]. Fence your
///   writes with [`LockGuard::fencing_token`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
/// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
/// use std::time::Duration;
/// let client = relock::Client::connect(&url).await?;
/// let lock = client.lock("carts:42");
/// let guard = lock.lock().await?;                          // waits as long as it takes
/// guard.scope(async {
///     let again = lock.lock().await?;                      // re-enters: count 2
///     assert_eq!(lock.hold_count().await?, 2);
///     again.unlock().await
/// }).await?;
/// guard.unlock().await?;
/// # assert!(!lock.is_locked().await?);
///
/// // Or: acquire, run, release (also on error or panic), in one call.
/// let n = lock.with(async |guard| guard.fencing_token()).await?;
///
/// if let Some(guard) = lock.try_lock_for(Duration::from_secs(3)).await? {
///     println!("token {} after {n}", guard.fencing_token());
/// #   assert!(guard.fencing_token() > n);
/// }
/// # else { panic!("the lock was free") }
/// # client.shutdown().await; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Lock {
    pub(crate) inner: Arc<Inner>,
    name: Arc<str>,
    keys: Option<Arc<LockKeys>>,
    lease: Option<Duration>,
    /// What a lock that is not the plain lock adds (the fair lock); `None`: the plain lock.
    variant: Option<&'static dyn Variant>,
}

/// What a lock that is not the plain lock brings to the [`Lock`] handle, in the way lock_api
/// adds `RawMutexFair` to `RawMutex`: its keys, its wait, its line. Each is a `static` in its
/// own folder (the fair lock's: `fair::FAIR_LOCK`), made by its own `Client` method; the
/// plain lock is the lock without one, and this file names none.
pub(crate) trait Variant: Send + Sync + std::fmt::Debug + 'static {
    /// What [`Lock::is_fair`] says.
    fn is_fair(&self) -> bool;
    /// The keys of the lock `name`.
    fn keys(&self, name: &str) -> Result<LockKeys>;
    /// The wait of a fresh acquisition (after the shared checks and re-entry).
    fn wait<'a>(
        &'a self,
        inner: &'a Arc<Inner>,
        keys: Arc<LockKeys>,
        fresh: Fresh,
        wait: Option<Duration>,
    ) -> BoxFuture<'a, Result<Option<LockGuard>>>;
    /// Its waiting line's keys, if it keeps one.
    fn line(&self, keys: &LockKeys) -> Option<LineKeys>;
    /// Its force-unlock call: delete the lock whoever holds it, and wake its waiters.
    fn force_unlock(&self, keys: &LockKeys, ctx: &CallContext) -> ScriptCall;
    /// The fields of this client's waiters in its line.
    fn local_waiters(&self, inner: &Inner, lock: &str) -> Vec<String>;
}

/// A lock's waiting line, as its queries read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineKeys {
    /// A sorted set: owner → ticket (arrival order), beside members of other kinds scored
    /// below every ticket.
    pub(crate) line: String,
    /// The lowest score of a ticket: the waiters are the members scored this or more.
    pub(crate) tickets_from: i64,
    /// The record of the last handoff of the lock to a waiter.
    pub(crate) grant: String,
}

/// The lock kinds of this module, made by the client.
impl Client {
    /// A handle to the reentrant lock called `name`. Cheap; nothing is sent until it is used.
    /// A bad name is reported by the first operation, as [`Error::InvalidArgument`](crate::Error::InvalidArgument).
    pub fn lock(&self, name: impl Into<String>) -> Lock {
        Lock::new(self.inner.clone(), self.inner.named(name.into()), None)
    }
}

/// The keys of the lock `name`: the plain lock's, or its variant's.
fn lock_keys(name: &str, variant: Option<&'static dyn Variant>) -> Result<LockKeys> {
    match variant {
        Some(v) => v.keys(name),
        None => LockKeys::new(name, &PLAIN),
    }
}

/// The plain lock's holds: Redisson's `RLock` hash, released by `release.lua` (which the
/// client's batcher may coalesce) and renewed by `renew.lua`.
#[derive(Debug)]
pub(crate) struct Plain;

/// The plain lock's [`HoldKind`].
pub(crate) static PLAIN: Plain = Plain;

impl HoldKind for Plain {
    fn label(&self) -> &'static str {
        "plain"
    }

    fn release(&self, keys: &LockKeys, field: &str, all: bool, ctx: &CallContext) -> ScriptCall {
        ScriptCall {
            script: &lock_scripts::RELEASE,
            keys: vec![keys.lock.clone()],
            args: vec![
                field.to_string(),
                hash_field_holds::release_mode(all).into(),
                ctx.publish.into(),
                keys.channel.clone(),
            ],
            coalesce: Some(coalesce::RELEASE),
        }
    }

    fn renewal_group(&self) -> &'static str {
        hash_field_holds::LOCK_HOLDS
    }

    fn renew(&self, batch: &[(&LockKeys, &str)], lease_ms: u64, _: &CallContext) -> ScriptCall {
        hash_field_holds::renew(batch, lease_ms)
    }

    fn wake(&self) -> Format {
        LOCK_CHANNEL
    }
}

impl Lock {
    pub(crate) fn new(
        inner: Arc<Inner>,
        name: String,
        variant: Option<&'static dyn Variant>,
    ) -> Self {
        let keys = lock_keys(&name, variant).ok().map(Arc::new);
        Lock {
            inner,
            name: name.into(),
            keys,
            lease: None,
            variant,
        }
    }

    /// Whether this is a fair lock (made by [`Client::fair_lock`](crate::Client::fair_lock)).
    pub fn is_fair(&self) -> bool {
        self.variant.is_some_and(|v| v.is_fair())
    }

    /// The lock's name (also the key of its hash).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Who holds `field` (one of this lock's owner fields, as [`status`](Lock::status) lists
    /// them), if its client was given a name
    /// ([`ClientBuilder::client_name`](crate::ClientBuilder::client_name)) and is connected:
    /// its name, host, process id and address, from the `CLIENT LIST` of the lock's server.
    /// `None` for a client without a name (Redisson's, or one not named) or one that is gone.
    /// For tools (`relock status`); it needs the `client|list` permission.
    ///
    /// # Errors
    /// Connection errors; [`Error::Permission`](crate::Error::Permission) without
    /// `client|list`.
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    pub async fn describe_owner(&self, field: &str) -> Result<Option<crate::OwnerInfo>> {
        let keys = self.keys()?;
        identity::describe(&self.inner, &keys.lock, field).await
    }

    /// A guarded write ([`LockGuard::write`]) on behalf of the hold whose owner field is
    /// `owner`, for a process that its holder handed that field to: the command that `relock
    /// run` starts gets it as `RELOCK_OWNER`. The batch runs only while that hold is on the
    /// lock, as from its guard. (The owner field is the hold's credential for this: pass it
    /// only to what works under the hold.)
    ///
    /// # Errors
    /// As [`LockGuard::write`].
    ///
    /// # Cancel safety
    /// As [`LockGuard::write`].
    pub async fn write_as(
        &self,
        owner: &str,
        commands: crate::Commands,
    ) -> Result<Vec<fred::types::Value>> {
        let keys = self.keys()?;
        commands.check(&keys.lock)?;
        if owner.is_empty() {
            return Err(crate::Error::invalid(
                "owner",
                "empty: pass the hold's owner field (relock run gives it as RELOCK_OWNER)",
            ));
        }
        guarded::send(
            &self.inner,
            vec![keys.lock.clone()],
            owner,
            &commands,
            false,
        )
        .await
    }

    /// The same lock with a fixed lease: holds taken through it expire after `lease` and the
    /// watchdog leaves them alone. A re-entry with a fixed lease lengthens the hold's lease to
    /// it if needed, and nothing shortens it again. Validated when used (at least 1 ms).
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }

    /// Where the lock's data lives and its name (see [`DistributedLock::resource`](crate::DistributedLock::resource)).
    fn resource(&self) -> String {
        queries::resource(&self.inner, &self.name)
    }

    fn resources(&self) -> Vec<String> {
        vec![self.resource()]
    }

    /// The fixed lease, if any.
    pub fn lease(&self) -> Option<Duration> {
        self.lease
    }

    /// A fair lock's waiting line.
    pub(crate) fn line(&self, keys: &LockKeys) -> Option<LineKeys> {
        self.variant.and_then(|v| v.line(keys))
    }

    /// The force-unlock call of its kind: the plain lock's, or its variant's.
    fn force_unlock_call(&self, keys: &LockKeys, ctx: &CallContext) -> ScriptCall {
        match self.variant {
            Some(v) => v.force_unlock(keys, ctx),
            None => queries::delete_and_publish(keys, ctx, false),
        }
    }

    pub(crate) fn keys(&self) -> Result<Arc<LockKeys>> {
        queries::keys(&self.keys, || lock_keys(&self.name, self.variant))
    }

    async fn acquire(&self, wait: Option<Duration>) -> Result<Option<LockGuard>> {
        let inner = &self.inner;
        let name = &*self.name;
        let lock = ExclusiveAcquire {
            inner,
            keys: self.keys(),
            lease: self.lease,
            spans: acquire_spans!(name),
        };
        let plan = |keys: &Arc<LockKeys>| {
            let target = reentry::resolve(
                inner.shared().id,
                inner.settings().reentrancy,
                &inner.shared().holds,
                &keys.lock,
            )?;
            Ok(match target {
                Target::Reenter(hold) => Plan::Reenter(hold),
                Target::Fresh { owner } => Plan::Fresh { owner, with: () },
            })
        };
        let variant = self.variant;
        acquire_exclusive(lock, wait, plan, |keys, fresh, (), wait| async move {
            match variant {
                Some(v) => v.wait(inner, keys, fresh, wait).await,
                None => wait::lease_bounded(inner, keys, fresh, wait, PlainCall).await,
            }
        })
        .await
    }

    /// The hold the calling code would re-enter or holds: the enclosing scope's, the explicit
    /// (or per-task) owner's, else a live hold taken by the current task.
    fn current_hold(&self, keys: &LockKeys) -> Option<Arc<Hold>> {
        let inner = &self.inner;
        if let Some(h) = reentry::scoped_hold(inner.shared().id, &keys.lock) {
            return Some(h);
        }
        if let Ok(Target::Reenter(h)) = reentry::resolve(
            inner.shared().id,
            inner.settings().reentrancy,
            &inner.shared().holds,
            &keys.lock,
        ) {
            return Some(h);
        }
        let caller = reentry::Caller::current();
        inner.shared().holds.find(&keys.lock, |h| {
            h.task == caller && h.is_live() && h.keys.kind.shared_reentry()
        })
    }

    /// Whether anyone holds the lock.
    ///
    /// # Errors
    /// Connection errors; [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a bad
    /// name; [`Error::NotALock`](crate::Error::NotALock) or
    /// [`Error::WrongType`](crate::Error::WrongType) if the key holds something else than a lock.
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    pub async fn is_locked(&self) -> Result<bool> {
        queries::is_locked(&self.inner, &*self.keys()?).await
    }

    /// One read of whether the lock is held and of `field`'s hold count (see
    /// [`Inner::check`]).
    async fn check(&self, keys: &LockKeys, field: String) -> Result<(bool, u32)> {
        let (exists, count) = self.inner.check(&keys.lock, field).await?;
        Ok((exists, count.and_then(|c| c.parse().ok()).unwrap_or(0)))
    }

    /// Whether the calling code holds the lock: inside a hold's scope, as the owner of a hold
    /// ([`Owner::scope`](crate::Owner::scope), or per-task mode), or as the task that took a live hold.
    ///
    /// # Errors
    /// As [`is_locked`](Lock::is_locked).
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    pub async fn is_held_by_current_task(&self) -> Result<bool> {
        Ok(self.hold_count().await? > 0)
    }

    /// The hold count on the server of the hold the calling code holds (see
    /// [`is_held_by_current_task`](Lock::is_held_by_current_task)); 0 if none.
    ///
    /// # Errors
    /// As [`is_locked`](Lock::is_locked); [`Error::WrongType`](crate::Error::WrongType) if the key is not a lock.
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    pub async fn hold_count(&self) -> Result<u32> {
        let keys = self.keys()?;
        // Without a hold, ask for a field no hold has: the answer is 0, and a key that is not
        // a lock still gets its WRONGTYPE error.
        let field = self
            .current_hold(&keys)
            .map_or(String::new(), |h| h.field.clone());
        Ok(self.check(&keys, field).await?.1)
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
        // Through the shape check: a data hash's TTL is not a lease.
        let (_, _, ms) = self
            .inner
            .check_with_pttl(&keys.lock, String::new())
            .await?;
        Ok((ms >= 0).then(|| Duration::from_millis(ms as u64)))
    }

    /// How many waiters are in a fair lock's line (0 for a plain lock, which has none). Reads
    /// the line only, not the lock's hash.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a bad name; connection and
    /// timeout errors as for [`is_locked`](Lock::is_locked).
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    pub async fn queue_len(&self) -> Result<usize> {
        let keys = self.keys()?;
        let Some(q) = self.line(&keys) else {
            return Ok(0);
        };
        // The waiters are the line's tickets; its other members score below them.
        let n: usize = self
            .inner
            .pool()
            .next()
            .zcount(q.line.as_str(), q.tickets_from as f64, f64::INFINITY)
            .await
            .map_err(|e| self.inner.error("zcount", &q.line, e))?;
        Ok(n)
    }

    /// The place in a fair lock's line (0: next to get it) of the first waiter of this client
    /// on this lock, or `None` if none is waiting (or the lock is not fair).
    ///
    /// An honest wait estimate from it: the holder's
    /// [`remaining_lease`](Lock::remaining_lease), plus, for each waiter ahead, how long it
    /// will hold the lock (at most its lease, if it uses a fixed one). The line itself stores
    /// no estimates, so nothing drifts when waiters leave. Reads the line only, not the lock's
    /// hash.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a bad name; connection and
    /// timeout errors as for [`is_locked`](Lock::is_locked).
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    pub async fn queue_position(&self) -> Result<Option<usize>> {
        let keys = self.keys()?;
        let Some(q) = self.line(&keys) else {
            return Ok(None);
        };
        let fields = self
            .variant
            .map_or(Vec::new(), |v| v.local_waiters(&self.inner, &keys.lock));
        let mut best: Option<usize> = None;
        for field in fields {
            // The waiters ahead are the tickets below ours (the line's other members, deadlines
            // and first leases, score below every ticket).
            let conn = self.inner.pool().next();
            let ticket: Option<f64> = conn
                .zscore(q.line.as_str(), field.as_str())
                .await
                .map_err(|e| self.inner.error("zscore", &q.line, e))?;
            let rank = match ticket {
                // Tickets are integers below 2^53, exact in an f64.
                Some(t) if t >= q.tickets_from as f64 => Some(
                    conn.zcount::<usize, _>(q.line.as_str(), q.tickets_from as f64, t - 1.0)
                        .await
                        .map_err(|e| self.inner.error("zcount", &q.line, e))?,
                ),
                _ => None,
            };
            best = match (best, rank) {
                (Some(b), Some(r)) => Some(b.min(r)),
                (b, r) => b.or(r),
            };
        }
        Ok(best)
    }

    /// Deletes the lock whoever holds it and wakes a waiter. Returns whether there was one.
    /// This client's holds of it report themselves lost at once; other clients' holders learn
    /// of it at their next renewal.
    ///
    /// # Errors
    /// As [`is_locked`](Lock::is_locked).
    ///
    /// # Cancel safety
    /// If dropped after the command was sent, the lock may or may not have been deleted.
    pub async fn force_unlock(&self) -> Result<bool> {
        let call = |keys: &LockKeys, ctx: &CallContext| self.force_unlock_call(keys, ctx);
        queries::force_unlock(&self.inner, self.keys(), call).await
    }
}

distributed_lock::lock_methods!(
    Lock,
    errors: "[`Error::InvalidArgument`](crate::Error::InvalidArgument) for a bad name or lease, [`Error::WrongType`](crate::Error::WrongType) or [`Error::NotALock`](crate::Error::NotALock) if the key holds something else (at once: nothing is changed or waited on), connection errors, [`Error::Shutdown`](crate::Error::Shutdown), and [`Error::LockLost`](crate::Error::LockLost) when called inside the scope of a hold that has ended. While Redis does not answer (an outage, a restart), `lock` keeps trying (about once a second, with one warning) until it answers or the client shuts down; `try_lock_for` until its bound, then returns the transient error; `try_lock` for one command timeout. An attempt whose reply was lost never becomes a hold of the caller: it is released in the background (`Error::Timeout` says the call holds nothing).",
    cancel: "Cancel safe: if the future is dropped, any acquisition that was already granted is released, and its subscription is dropped. Like `tokio::sync::Mutex::lock`, you lose your chance at the lock.",
    doc_make: "let client = relock::Client::connect(&url).await?; let make = |name: &str| client.lock(name);"
);

/// The plain lock's attempt: `acquire.lua` on the lock and its fencing counter, coalesced
/// with others when the client batches (`exclusive/coalesce.rs`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlainCall;

impl AcquireCall for PlainCall {
    type Outcome = std::convert::Infallible;

    fn call(
        &self,
        _: &Inner,
        keys: &LockKeys,
        _: &str,
        _: &mut Vec<String>,
    ) -> (&'static scripts::Script, Vec<String>) {
        (
            &lock_scripts::ACQUIRE,
            vec![keys.lock.clone(), keys.token.clone()],
        )
    }
    fn coalesced(&self) -> Option<Coalescible> {
        Some(coalesce::ACQUIRE)
    }
}
