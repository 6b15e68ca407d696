//! [`Lock`]: the handle to one named lock (plain or fair), and the acquire/wait loop.

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
use crate::holds::Hold;
use crate::keys::LockKeys;
use crate::owner::Owner;
use crate::reentry::{self, Target};
use crate::scripts;

/// How long a waiter sleeps when the holder's key has no TTL (a foreign holder), between
/// checks. Release messages still wake it at once.
pub(crate) const NO_TTL_RECHECK: Duration = Duration::from_secs(1);

/// A distributed lock, wire-compatible with Redisson's `RLock`.
///
/// A cheap handle (`Clone + Send + Sync`) made by [`Client::lock`](crate::Client::lock) or
/// [`Client::fair_lock`](crate::Client::fair_lock). Compared with `tokio::sync::Mutex`:
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
///   order). No polling.
/// - **Loss.** A hold can be lost (lease ran out, key deleted, Redis restarted empty);
///   [`LockGuard::lost`] resolves then, no later than [`LockGuard::valid_until`]. Fence your
///   writes with [`LockGuard::fencing_token`].
///
/// ```no_run
/// # async fn f() -> relock::Result<()> {
/// use std::time::Duration;
/// let client = relock::Client::connect("redis://127.0.0.1:6379").await?;
/// let lock = client.lock("orders:42");
/// let guard = lock.lock().await?;                          // waits as long as it takes
/// guard.scope(async {
///     let again = lock.lock().await?;                      // re-enters: count 2
///     assert_eq!(lock.hold_count().await?, 2);
///     again.unlock().await
/// }).await?;
/// guard.unlock().await?;
///
/// // Or: acquire, run, release (also on error or panic), in one call.
/// let n = lock.with(async |guard| guard.fencing_token()).await?;
///
/// if let Some(guard) = lock.try_lock_for(Duration::from_secs(3)).await? {
///     println!("token {} after {n}", guard.fencing_token());
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Lock {
    pub(crate) inner: Arc<Inner>,
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

/// A fresh acquisition in progress: the field it asks for, and who will own the hold.
#[derive(Debug)]
pub(crate) struct Fresh {
    /// The field this acquisition asks for. Retired (replaced by a new one) after any attempt
    /// whose outcome is unknown, so that the clean-up of that attempt, wherever and whenever
    /// it lands, can only remove what that attempt took.
    pub(crate) field: String,
    pub(crate) owner: Option<Owner>,
    /// The task that called `lock()` (the attempt runs in a task of its own).
    pub(crate) task: crate::reentry::Caller,
    /// When `lock()` was called, for the wait-time metric.
    pub(crate) started: Instant,
    /// Acquire script calls made so far, for the `acquire` span.
    pub(crate) attempts: Arc<std::sync::atomic::AtomicU32>,
    /// The lock kind, for metrics.
    pub(crate) kind: crate::meter::Kind,
    retry: Retry,
}

impl Fresh {
    pub(crate) fn new(inner: &Inner, owner: Option<Owner>, fair: bool) -> Self {
        Fresh {
            field: inner.fields.next(),
            owner,
            task: crate::reentry::Caller::current(),
            started: Instant::now(),
            attempts: Arc::default(),
            kind: if fair {
                crate::meter::Kind::Fair
            } else {
                crate::meter::Kind::Plain
            },
            retry: Retry::default(),
        }
    }

    /// Counts an attempt that did not grant, by cause.
    pub(crate) fn refused(&self, cause: &'static str) {
        crate::meter::failed_attempt(self.kind, cause);
    }

    /// After a failed attempt: retires the field, then waits a backoff and returns `Ok` to
    /// try again, or returns the error once retrying is pointless or the budget (one command
    /// timeout from the first error in a row) is spent.
    pub(crate) async fn after_error(&mut self, inner: &Inner, e: Error) -> Result<()> {
        crate::meter::failed_attempt(self.kind, crate::meter::cause(&e));
        self.field = inner.fields.next();
        self.retry.after(inner, e).await
    }

    pub(crate) fn succeeded(&mut self) {
        self.retry = Retry::default();
    }
}

/// Backoff for transient errors: a stale connection after a Redis restart, a timeout.
#[derive(Debug)]
struct Retry {
    give_up: Option<Instant>,
    backoff: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            give_up: None,
            backoff: Duration::from_millis(5),
        }
    }
}

impl Retry {
    async fn after(&mut self, inner: &Inner, e: Error) -> Result<()> {
        if !e.is_transient() {
            return Err(e);
        }
        let now = Instant::now();
        let give_up = *self
            .give_up
            .get_or_insert(now + inner.settings.command_timeout);
        if now + self.backoff >= give_up {
            return Err(e);
        }
        tracing::debug!(error = %e, "acquire failed; retrying under a new field");
        tokio::time::sleep(self.backoff).await;
        self.backoff = (self.backoff * 2).min(Duration::from_millis(200));
        inner.check_running()
    }
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
    /// watchdog leaves them alone. A re-entry with a fixed lease lengthens the hold's lease to
    /// it if needed, and nothing shortens it again. Validated when used (at least 1 ms).
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }

    /// The fixed lease, if any.
    pub fn lease(&self) -> Option<Duration> {
        self.lease
    }

    pub(crate) fn keys(&self) -> Result<Arc<LockKeys>> {
        match &self.keys {
            Some(k) => Ok(k.clone()),
            None => {
                Err(LockKeys::new(&self.name, self.fair).expect_err("keys failed to build before"))
            }
        }
    }

    /// Acquires the lock, waiting as long as it takes; inside the scope of a hold of this lock,
    /// re-enters it instead.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad name or lease, [`Error::WrongType`] if the key
    /// holds something else, connection errors, [`Error::Shutdown`], and [`Error::LockLost`]
    /// when called inside the scope of a hold that has ended.
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

    /// Acquires the lock if it is free (or re-enters it inside its scope); never waits.
    /// `Ok(None)` means someone else holds it.
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

    /// Acquires the lock, runs `f` inside the hold's scope (so nested `lock()` calls on this
    /// lock re-enter it), and releases it before returning, also when `f` returns an error or
    /// panics (the panic is resumed after the release).
    ///
    /// ```no_run
    /// # async fn f(lock: relock::Lock) -> relock::Result<()> {
    /// let token = lock.with(async |guard| {
    ///     nested(&lock).await;        // re-enters instead of waiting for itself
    ///     guard.fencing_token()
    /// }).await?;
    /// # Ok(()) }
    /// # async fn nested(lock: &relock::Lock) { drop(lock.lock().await); }
    /// ```
    ///
    /// # Errors
    /// As [`lock`](Lock::lock); and [`Error::LockLost`] (with `f`'s output dropped) if the
    /// hold was lost before the release: `f` may have overlapped another holder.
    ///
    /// # Cancel safety
    /// If dropped, `f` is dropped and the hold is released in the background.
    pub async fn with<T>(&self, f: impl AsyncFnOnce(&LockGuard) -> T) -> Result<T> {
        crate::guard::run_within(self.lock().await?, f).await
    }

    async fn acquire(&self, wait: Option<Duration>) -> Result<Option<LockGuard>> {
        self.inner.check_running()?;
        let keys = self.keys()?;
        if let Some(lease) = self.lease {
            validate_lease("lease", lease)?;
        }
        let inner = &self.inner;
        match reentry::resolve(
            inner.id,
            inner.settings.reentrancy,
            &inner.holds,
            &keys.lock,
        )? {
            Target::Reenter(hold) => {
                let span = tracing::debug_span!("reenter", lock = %self.name, field = %hold.field);
                self.reenter(keys, hold).instrument(span).await.map(Some)
            }
            Target::Fresh { owner } => {
                use tracing::field::Empty;
                let span = tracing::debug_span!(
                    "acquire",
                    lock = %self.name,
                    outcome = Empty,
                    wait_ms = Empty,
                    token = Empty,
                    attempts = Empty
                );
                let fresh = Fresh::new(inner, owner, self.fair);
                let (started, attempts) = (fresh.started, fresh.attempts.clone());
                let r = if self.fair {
                    self.acquire_fair(keys, fresh, wait)
                        .instrument(span.clone())
                        .await
                } else {
                    self.acquire_plain(keys, fresh, wait)
                        .instrument(span.clone())
                        .await
                };
                record_acquire(&span, &r, started, attempts.load(Ordering::Relaxed));
                r
            }
        }
    }

    /// One more guard on `hold`, in its own task (a reply that arrives after the caller gave
    /// up still becomes a guard, whose drop takes the count off again).
    async fn reenter(&self, keys: Arc<LockKeys>, hold: Arc<Hold>) -> Result<LockGuard> {
        let (inner, lease) = (self.inner.clone(), self.lease);
        let task = self.inner.tracker.spawn(async move {
            let watchdog = lease.is_none();
            let lease = lease.unwrap_or(inner.settings.watchdog_lease);
            let sent = Instant::now();
            let reply: Option<i64> = scripts::REENTER
                .run(
                    inner.pool.next(),
                    vec![keys.lock.clone()],
                    vec![lease.as_millis().to_string(), hold.field.clone()],
                )
                .await
                .map_err(|e| inner.error("reenter", &keys.lock, e))?;
            let lost = || Error::LockLost {
                name: keys.lock.clone(),
            };
            match reply {
                Some(_) if hold.add_guard(watchdog, sent + lease) => {
                    Ok(LockGuard::new(inner, hold, watchdog))
                }
                // The hold's last guard went meanwhile: its release removes this count too.
                Some(_) => Err(lost()),
                None => {
                    hold.mark_lost(
                        "a re-entry found the hold gone (expired, deleted or force-unlocked)",
                    );
                    Err(lost())
                }
            }
        });
        task.await.map_err(|_| Error::Shutdown)?
    }

    async fn acquire_plain(
        &self,
        keys: Arc<LockKeys>,
        mut fresh: Fresh,
        wait: Option<Duration>,
    ) -> Result<Option<LockGuard>> {
        let inner = &self.inner;
        let deadline = wait.and_then(|w| Instant::now().checked_add(w));
        let expired = |now: Instant| deadline.is_some_and(|d| now >= d);
        await_local_release(inner, &keys.lock).await;
        let joining = wait != Some(Duration::ZERO) && inner.pubsub.is_subscribed(&keys.channel);
        if !joining {
            // The uncontended path: one round trip, no subscription.
            loop {
                match self.attempt(&keys, &fresh, Mode::Plain).await {
                    Ok(Attempt::Acquired(g)) => return Ok(Some(g)),
                    Ok(_) => {
                        fresh.refused("held");
                        break;
                    }
                    Err(e) => fresh.after_error(inner, e).await?,
                }
            }
            if expired(Instant::now()) || wait == Some(Duration::ZERO) {
                return Ok(None);
            }
        }
        // Subscribe before retrying, so a release between our attempt and our sleep still
        // wakes us (Redisson #1763). Joining an existing subscription costs no round trip.
        let channel = crate::pubsub::mutated_channel(&keys.channel);
        let subscribe = inner.pubsub.subscribe(&channel);
        let sub = match deadline {
            Some(d) => match tokio::time::timeout_at(d, subscribe).await {
                Ok(r) => r,
                Err(_) => return Ok(None),
            },
            None => subscribe.await,
        }
        .map_err(|e| inner.error("subscribe", &keys.channel, e))?;
        // Other local waiters already know the lock is held, and until when: park first
        // instead of asking Redis again (one fewer script call per handoff).
        let mut known = if joining { sub.known_held_for() } else { None };
        let mut warned = false;
        let mut woken_by_message = false;
        loop {
            let mut woken = pin!(sub.notified());
            woken.as_mut().enable();
            let sleep = match known.take() {
                Some(held_for) => held_for,
                None => match self.attempt(&keys, &fresh, Mode::Plain).await {
                    Err(e) => {
                        woken_by_message = false;
                        fresh.after_error(inner, e).await?;
                        continue;
                    }
                    Ok(Attempt::Acquired(g)) => {
                        // Local waiters arriving now can park until our release message.
                        sub.set_held_for(g.remaining());
                        return Ok(Some(g));
                    }
                    Ok(Attempt::Held(p)) if p > 0 => {
                        fresh.succeeded();
                        fresh.refused("held");
                        if std::mem::take(&mut woken_by_message) {
                            crate::meter::wasted_wakeup();
                        }
                        let held_for = Duration::from_millis(p as u64 + 1);
                        sub.set_held_for(held_for);
                        held_for
                    }
                    Ok(Attempt::Held(-1)) => NO_TTL_RECHECK,
                    Ok(Attempt::Held(_) | Attempt::Behind(_)) => continue,
                },
            };
            reentry::warn_if_waiting_on_own_task(&inner.holds, &keys.lock, &mut warned);
            match inner.park(sleep, deadline, woken).await? {
                None => return Ok(None),
                Some(w) => woken_by_message = w,
            }
        }
    }

    /// One acquire script call for `fresh`. It runs in its own task, so that a reply arriving
    /// after the caller gave up still becomes a guard, and that guard's drop releases it.
    /// Errors are returned as they are; the caller retires the field and decides whether to
    /// try again.
    pub(crate) async fn attempt(
        &self,
        keys: &Arc<LockKeys>,
        fresh: &Fresh,
        mode: Mode,
    ) -> Result<Attempt> {
        // Nothing new is sent once shutdown has begun: it could be granted after shutdown
        // took its list of holds to release.
        self.inner.check_running()?;
        fresh.attempts.fetch_add(1, Ordering::Relaxed);
        // A leave of the line must not overtake this attempt (it would put us back).
        let gate = match &mode {
            Mode::FairWait(e) => Some(e.gate.clone().lock_owned().await),
            _ => None,
        };
        let task = attempt_task(AttemptArgs {
            inner: self.inner.clone(),
            keys: keys.clone(),
            field: fresh.field.clone(),
            owner: fresh.owner.clone(),
            task: fresh.task,
            started: fresh.started,
            kind: fresh.kind,
            fixed_lease: self.lease,
            mode,
            _gate: gate,
        });
        self.inner
            .tracker
            .spawn(task)
            .await
            .map_err(|_| Error::Shutdown)?
    }

    /// The hold the calling code would re-enter or holds: the enclosing scope's, the explicit
    /// (or per-task) owner's, else a live hold taken by the current task.
    fn current_hold(&self, keys: &LockKeys) -> Option<Arc<Hold>> {
        let inner = &self.inner;
        if let Some(h) = reentry::scoped_hold(inner.id, &keys.lock) {
            return Some(h);
        }
        if let Ok(Target::Reenter(h)) = reentry::resolve(
            inner.id,
            inner.settings.reentrancy,
            &inner.holds,
            &keys.lock,
        ) {
            return Some(h);
        }
        let caller = crate::reentry::Caller::current();
        inner
            .holds
            .find(&keys.lock, |h| h.task == caller && h.is_live())
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

    /// Whether the calling code holds the lock: inside a hold's scope, as the owner of a hold
    /// ([`Owner::scope`], or per-task mode), or as the task that took a live hold.
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
    /// As [`is_locked`](Lock::is_locked); [`Error::WrongType`] if the key is not a lock.
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

    /// How many waiters are in a fair lock's line (0 for a plain lock, which has none).
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

    /// The place in a fair lock's line (0: next to get it) of the first waiter of this client
    /// on this lock, or `None` if none is waiting (or the lock is not fair).
    ///
    /// An honest wait estimate from it: the holder's
    /// [`remaining_lease`](Lock::remaining_lease), plus, for each waiter ahead, how long it
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
        let fields = self.inner.queued_fields(&keys.lock);
        let mut best: Option<usize> = None;
        for field in fields {
            let rank: Option<usize> = self
                .inner
                .pool
                .next()
                .zrank(q.queue.as_str(), field.as_str(), false)
                .await
                .map_err(|e| self.inner.error("zrank", &q.queue, e))?;
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
        self.inner.check_running()?;
        let keys = self.keys()?;
        let r: i64 = scripts::FORCE_UNLOCK
            .run(
                self.inner.pool.next(),
                keys.release_keys(),
                vec![self.inner.publish_cmd().into()],
            )
            .await
            .map_err(|e| self.inner.error("force_unlock", &keys.lock, e))?;
        for h in self.inner.holds.of_lock(&keys.lock) {
            h.mark_lost("force-unlocked by this client");
        }
        Ok(r == 1)
    }
}

/// Records how an acquisition ended on its `acquire` span: outcome (`acquired`, `timed_out`,
/// or the error's cause), wait time, token and the number of script calls.
pub(crate) fn record_acquire(
    span: &tracing::Span,
    r: &Result<Option<LockGuard>>,
    started: Instant,
    attempts: u32,
) {
    span.record("wait_ms", started.elapsed().as_secs_f64() * 1000.0);
    span.record("attempts", attempts);
    match r {
        Ok(Some(g)) => {
            span.record("outcome", "acquired");
            span.record("token", g.fencing_token());
        }
        Ok(None) => {
            span.record("outcome", "timed_out");
        }
        Err(e) => {
            span.record("outcome", crate::meter::cause(e));
        }
    }
}

/// Waits (bounded by the command timeout) while a release of this lock by this client is in
/// flight: the lock is about to be free, and trying before the release lands would only cost
/// a round trip and a wake-up. (Not needed for safety: a fresh acquisition has its own field,
/// which no release of an older hold can touch.)
async fn await_local_release(inner: &Inner, lock: &str) {
    let Some(hold) = inner.holds.find(lock, |h| h.is_releasing()) else {
        return;
    };
    let mut gone = pin!(hold.gone.notified());
    gone.as_mut().enable();
    if inner.holds.contains(&hold) {
        let _ = tokio::time::timeout(inner.settings.command_timeout, gone).await;
    }
}

struct AttemptArgs {
    inner: Arc<Inner>,
    keys: Arc<LockKeys>,
    field: String,
    owner: Option<Owner>,
    task: crate::reentry::Caller,
    started: Instant,
    kind: crate::meter::Kind,
    fixed_lease: Option<Duration>,
    mode: Mode,
    _gate: Option<OwnedMutexGuard<()>>,
}

async fn attempt_task(a: AttemptArgs) -> Result<Attempt> {
    let AttemptArgs {
        inner,
        keys,
        field,
        owner,
        task,
        started,
        kind,
        fixed_lease,
        mode,
        _gate,
    } = a;
    let watchdog = fixed_lease.is_none();
    let lease = fixed_lease.unwrap_or(inner.settings.watchdog_lease);
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
    let reply = match (&inner.batcher, script_keys.len()) {
        (Some(b), 2) => {
            let op = crate::batch::Op::Acquire {
                keys: [script_keys[0].clone(), script_keys[1].clone()],
                args: [args[0].clone(), args[1].clone(), args[2].clone()],
            };
            b.run::<Vec<i64>>(op).await
        }
        _ => script.run::<Vec<i64>>(conn, script_keys, args).await,
    };
    if let (Mode::FairWait(e), Ok(r)) = (&mode, &reply) {
        match r.as_slice() {
            [0, _, ticket, _, _] => e.ticket.store(*ticket, Ordering::SeqCst),
            // Granted: the script took us out of the line.
            _ => e.queued.store(false, Ordering::SeqCst),
        }
    }
    let reply = match reply {
        Ok(r) => r,
        Err(e) => {
            let err = inner.error("acquire", &keys.lock, e);
            // A WRONGTYPE reply means the script ran and changed nothing.
            if !matches!(err, Error::WrongType { .. }) {
                clean_up_unknown_outcome(&inner, &keys, &field).await;
            }
            return Err(err);
        }
    };
    match reply.as_slice() {
        [1, token] => {
            if let Some((wanted, timeout)) = inner.settings.sync_replicas {
                // Before anyone relies on it, the grant must be on `wanted` replicas.
                let acked = wait_replicas(conn, &keys.lock, wanted, timeout).await;
                if acked.as_ref().map_or(true, |a| *a < i64::from(wanted)) {
                    clean_up_unknown_outcome(&inner, &keys, &field).await;
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
            let valid_until = sent + lease;
            let hold = Arc::new(Hold::new(
                keys.clone(),
                field,
                mutated_token(*token as u64),
                owner,
                task,
                kind,
                valid_until,
            ));
            if !hold.add_guard(watchdog, valid_until) {
                // The reply took longer than the lease: the grant may already have expired
                // and been taken by someone else. Drop it (under its own field); the caller
                // retires the field and tries again.
                clean_up_unknown_outcome(&inner, &keys, &hold.field).await;
                return Err(Error::Timeout {
                    operation: "acquire",
                    server: inner.server(),
                    timeout: lease,
                });
            }
            // Shutdown waits for this task before it releases every recorded hold, so this
            // one is released (and reported lost) too if the client is shutting down.
            inner.holds.insert(hold.clone());
            crate::meter::acquired(kind, started.elapsed());
            Ok(Attempt::Acquired(LockGuard::new(
                inner.clone(),
                hold,
                watchdog,
            )))
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

/// An acquire whose reply never came may have been granted: remove that hold now rather than
/// let it block others until its lease ends. It names the attempt's own field, which the
/// caller then retires, so this clean-up can never touch another hold, whenever it lands. If
/// the acquire itself lands after this clean-up (a connection that delayed it), it leaves a
/// hold nobody renews, which expires with its lease.
async fn clean_up_unknown_outcome(inner: &Inner, keys: &LockKeys, field: &str) {
    if let Err(e) = inner.run_release(keys, field, true).await {
        tracing::debug!(lock = %keys.lock, error = %e, "could not clean up after a failed acquire; the lease will expire it");
    }
}

/// The token a new hold carries: the script's, unless a chaos mutant (`relock::mutant`)
/// breaks that.
fn mutated_token(token: u64) -> u64 {
    #[cfg(feature = "chaos-mutants")]
    let token = crate::mutant::token(token);
    token
}
