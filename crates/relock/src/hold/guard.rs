//! [`LockGuard`]: proof of one hold, released by [`LockGuard::unlock`] or on drop.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::hold::backend::Backend;
use crate::hold::detach;
use crate::hold::holds::Hold;
use crate::hold::lease;
use crate::hold::meter;
use crate::hold::reentry;

/// One hold of a distributed lock. The lock is released when the guard is unlocked or dropped
/// (and, for a re-entered hold, when the last guard of the hold goes).
///
/// Unlike a local mutex guard, the hold can end without the guard: its lease can run out or
/// the lock can be deleted. [`lost`](LockGuard::lost) tells you when (no later than
/// [`valid_until`](LockGuard::valid_until)), and [`fencing_token`](LockGuard::fencing_token)
/// lets the resource you protect refuse a holder that kept going after that; see
/// [`guide::safety`](crate::guide::safety#fencing-tokens-closing-the-gap).
///
/// Dropping the guard stops it counting at once and releases on the server in the
/// background; use [`unlock`](LockGuard::unlock) to learn the outcome. A guard dropped on a
/// thread outside any tokio runtime (a `Drop` of a struct moved to `std::thread`) releases
/// through the runtime it was made on, as promptly; only when that runtime is gone is it
/// forgotten locally, its lock then expiring with its lease.
#[must_use = "if unused the lock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct LockGuard {
    backend: Arc<dyn Backend>,
    hold: Arc<Hold>,
    watchdog: bool,
    released: bool,
    /// The runtime the guard was made on: a drop outside any runtime releases through it.
    runtime: Option<tokio::runtime::Handle>,
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("name", &self.hold.keys.lock)
            .field("field", &self.hold.field)
            .field("token", &self.hold.token)
            .field("count", &self.hold.count())
            .field("renewed", &self.watchdog)
            .field("remaining", &self.remaining())
            .field("lost", &self.is_lost())
            .finish()
    }
}

impl LockGuard {
    pub(crate) fn new(backend: Arc<dyn Backend>, hold: Arc<Hold>, watchdog: bool) -> Self {
        LockGuard {
            backend,
            hold,
            watchdog,
            released: false,
            runtime: tokio::runtime::Handle::try_current().ok(),
        }
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.hold.keys.lock
    }

    /// The hold's owner field in the lock hash (`<client id>:<n>`): what `HGETALL` on the lock
    /// shows while this hold has it, and what no other hold ever has.
    pub fn owner(&self) -> &str {
        &self.hold.field
    }

    /// The fencing token of this hold: it is larger than the token of every earlier hold of
    /// this lock name, and the same for all re-entrant guards of one hold.
    ///
    /// Pass it with every write to the protected resource, and have the resource reject a
    /// token lower than the highest it has seen.
    ///
    /// Tokens are about 1.8 × 10¹⁵ (seeded from the server clock in µs): store them in a
    /// 64-bit column (`BIGINT`), never a 32-bit one. A fenced write in SQL:
    ///
    /// ```sql
    /// UPDATE orders SET status = $2, fence = $3 WHERE id = $1 AND fence <= $3;
    /// -- 0 rows: a later holder already wrote; stop, this hold is stale
    /// ```
    pub fn fencing_token(&self) -> u64 {
        self.hold.token
    }

    /// Whether the watchdog renews this hold (it was taken without a fixed lease).
    pub fn is_renewed(&self) -> bool {
        self.watchdog
    }

    /// When the lease ends at the latest, on this process's monotonic clock, unless renewed
    /// meanwhile: the send time of the last successful acquire or renewal plus its lease.
    pub fn valid_until(&self) -> std::time::Instant {
        self.hold.valid_until().into_std()
    }

    /// How long the lease has left on the local clock (zero once it has run out).
    pub fn remaining(&self) -> Duration {
        self.hold
            .valid_until()
            .saturating_duration_since(Instant::now())
    }

    /// Whether the hold is known to be lost, or its lease has run out on the local clock.
    pub fn is_lost(&self) -> bool {
        self.hold.is_lost()
    }

    /// Resolves once the hold is lost: its lease ran out on the local clock (renewals kept
    /// failing, or a fixed lease ended), or it was found gone (expired, deleted,
    /// force-unlocked, Redis restarted empty). It never resolves later than
    /// [`valid_until`](LockGuard::valid_until) (plus scheduling noise).
    ///
    /// # Cancel safety
    /// Cancel safe: it only observes.
    pub async fn lost(&self) {
        self.hold.lost().await
    }

    /// Lengthens the hold's lease to at least `lease` from now, as redis-py's and
    /// node-redlock's `extend`: for a hold taken with a fixed lease ([`Lock::with_lease`](crate::Lock::with_lease))
    /// that needs more time. It never shortens a lease, on the server or here (a hold with more
    /// left keeps it), and it never brings back a hold that is gone. On success
    /// [`valid_until`](LockGuard::valid_until) moves to at least the call's send time plus
    /// `lease` (less the clock-drift allowance on a quorum). A watchdog-renewed hold may be
    /// extended too: the watchdog goes on renewing, and the longer lease is what a crash of this
    /// process leaves behind. Every guard of the hold sees the new lease.
    ///
    /// Extend before the lease runs out: an extension answered after the local deadline is a
    /// loss, not a rescue (the lock may have been someone else's meanwhile; see
    /// [`guide::safety`](crate::guide::safety#extending-a-hold)).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// use std::time::Duration;
    /// let lock = client.lock("exports:extend").with_lease(Duration::from_secs(10));
    /// let guard = lock.lock().await?;
    /// // … the work runs long:
    /// guard.extend(Duration::from_secs(20)).await?;
    /// assert!(guard.remaining() > Duration::from_secs(19));
    /// guard.unlock().await?;
    /// # client.shutdown().await; Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::LockLost`] if the hold was lost (or is found gone); [`Error::InvalidArgument`]
    /// for a lease under 1 ms or over 30 years; connection errors and
    /// [`Error::QuorumNotReached`] (a quorum lock whose majority did not answer), after which
    /// the local lease is unchanged and the hold stands until it ends.
    ///
    /// # Cancel safety
    /// The extension runs in its own task: dropping this future does not stop it (it may
    /// still lengthen the lease, on the server and here).
    pub async fn extend(&self, lease: Duration) -> Result<()> {
        lease::validate_lease("lease", lease)?;
        let work = self.backend.clone().extend(self.hold.clone(), lease);
        // In a task of its own, run to its end: a quorum's round holds the hold's gate until
        // its put-backs are answered, and a release must not overtake them (an extension
        // dropped mid-round would otherwise let a put-back land after the release).
        match self.backend.shared().tracker.spawn(work).await {
            Ok(r) => r,
            Err(_) => Err(Error::Shutdown),
        }
    }

    /// Runs `future` inside this hold's scope: a `lock()` (or `try_lock`) of the same lock in
    /// it, however deeply nested, re-enters this hold (count + 1, same fencing token) instead
    /// of waiting for it. Other locks, and other clients, are not affected.
    ///
    /// The returned future does not borrow the guard, so it can be spawned
    /// (`tokio::spawn(guard.scope(work))`); a re-entry after the hold ended (released or lost)
    /// fails with [`Error::LockLost`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let lock = client.lock("doctest:guard:scope");
    /// let guard = lock.lock().await?;
    /// guard.scope(async {
    ///     let nested = lock.lock().await?; // re-enters
    /// #   assert_eq!(nested.fencing_token(), guard.fencing_token());
    ///     nested.unlock().await
    /// }).await?;
    /// # assert!(lock.is_locked().await?); // still held by `guard`
    /// # guard.unlock().await?;
    /// # client.shutdown().await; Ok(()) }
    /// ```
    ///
    /// # Cancel safety
    /// Dropping the returned future drops `future`; nothing else happens.
    pub fn scope<F: Future>(&self, future: F) -> impl Future<Output = F::Output> + use<F> {
        reentry::scope(self.backend.shared().id, self.hold.clone(), future)
    }

    /// Releases this guard's count of the hold (the whole hold if it is the last) and reports
    /// how that went.
    ///
    /// # Errors
    /// [`Error::LockLost`] if the hold had already been lost (anything done under it since then
    /// may have overlapped another holder); connection errors, after which relock keeps
    /// retrying the release in the background until the lease would have ended.
    ///
    /// # Cancel safety
    /// The release runs in its own task, so dropping this future does not stop it.
    pub async fn unlock(mut self) -> Result<()> {
        meter::step("unlock");
        self.released = true;
        let (remaining, lost) = self.hold.remove_guard(self.watchdog);
        self.release_removed(remaining, lost).await
    }
}

/// What a kind's "keep instead of release" call (see [`LockGuard::unlock_or_keep`]) found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeepOutcome {
    /// The hold was alone (count 1) and is now left to expire on the server, where no
    /// re-entry can find it again.
    Kept,
    /// The hold has other counts on the server (a re-entry in flight): it was not kept.
    NotAlone,
    /// The hold is not on the server.
    Gone,
}

impl LockGuard {
    /// Ends this guard: if it is its hold's last, the hold is first closed to joins (no
    /// re-entry can add a guard from here), then `keep` runs with the hold's field; if it kept
    /// the hold, the hold leaves this client without a release (its lease ends it on the
    /// server). Otherwise, or if the hold was lost or has other guards, this is
    /// [`unlock`](LockGuard::unlock). For a kind that keeps a finished hold for a while (a
    /// job's at-least time). An error of `keep` leaves the hold to its lease (never sooner).
    /// The hold this guard is of: its keys and its own field, for a kind's scripts.
    pub(crate) fn hold(&self) -> &Arc<Hold> {
        &self.hold
    }

    /// The backend its hold is on.
    pub(crate) fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    pub(crate) async fn unlock_or_keep<F, Fut>(mut self, keep: F) -> Result<()>
    where
        F: FnOnce(String) -> Fut,
        Fut: Future<Output = Result<KeepOutcome>>,
    {
        self.released = true;
        // Closed to joins before the keep is sent (otherwise a re-entry answered between a
        // local "last guard" check and the keep would get a guard past the kept TTL).
        let (remaining, lost) = self.hold.remove_guard(self.watchdog);
        if remaining > 0 || lost || self.hold.is_lost() {
            return self.release_removed(remaining, lost).await;
        }
        let leave = |hold: &Arc<Hold>, backend: &Arc<dyn Backend>| {
            hold.mark_ended();
            backend.shared().holds.remove(hold);
        };
        match keep(self.hold.field.clone()).await {
            Ok(KeepOutcome::Kept) => {
                leave(&self.hold, &self.backend);
                Ok(())
            }
            // The whole hold goes (its field, whatever its count): the re-entry in flight
            // finds it closed here and gone there.
            Ok(KeepOutcome::NotAlone | KeepOutcome::Gone) => self.release_removed(0, false).await,
            Err(e) => {
                leave(&self.hold, &self.backend);
                Err(e)
            }
        }
    }

    /// The release of a guard already removed from its hold, `remaining` guards being left.
    async fn release_removed(&self, remaining: u32, lost: bool) -> Result<()> {
        // Whether the hold was lost when the caller let it go (not after the release's reply:
        // a renewal or a short lease ending meanwhile says nothing of what the caller did).
        let was_lost = lost || self.hold.is_lost();
        let fut = self
            .backend
            .clone()
            .release(self.hold.clone(), remaining, lost);
        // A task of its own, not the caller's: the release changes what others see (the hold
        // stays "releasing", and a quorum hold's gate stays taken, until its reply is
        // handled), so it must not wait for a caller that may stop polling this future (a
        // kept, unpolled unlock would stall the next lock() of the name and a quorum client's
        // whole watchdog).
        match self.backend.shared().tracker.spawn(fut).await {
            // A hold that was already lost when its release failed (a timeout, a connection
            // down) is reported as lost, as documented: its release's fate does not change
            // what the caller must know, that its exclusion ended (a server down past the
            // lease would otherwise give `Timeout { operation: "release" }`).
            Ok(Err(e)) if was_lost && e.may_have_run() => Err(Error::LockLost {
                name: self.hold.keys.lock.clone(),
            }),
            Ok(r) => r,
            Err(_) => Err(Error::Shutdown),
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        meter::step("unlock");
        // Stop counting at once: from here on no `lock()` can re-enter a hold whose last guard
        // is gone, even before the release below has run.
        let (remaining, lost) = self.hold.remove_guard(self.watchdog);
        let fut = self
            .backend
            .clone()
            .release(self.hold.clone(), remaining, lost);
        // If the release cannot even be spawned (no runtime to run it on, or the guard's
        // runtime is gone: a closed runtime drops a task at once, inside the spawn call), the
        // hold is forgotten locally instead: the watchdog stops renewing it, and its lease
        // ends it on the server. A release dropped later, by a runtime shutting down, leaves
        // the hold recorded, so that the client's last handle names it.
        let spawning = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let forget = ForgetUnlessRun {
            backend: self.backend.clone(),
            hold: self.hold.clone(),
            armed: remaining == 0,
            spawning: spawning.clone(),
        };
        let work = async move {
            let r = fut.await;
            forget.disarm();
            if let Err(e) = r {
                if !matches!(e, Error::LockLost { .. } | Error::Shutdown) {
                    tracing::warn!(error = %e, "background release failed; retrying until the lease would end");
                }
            }
        };
        // Without a runtime to run it, `work` is dropped unrun: `forget` forgets the hold.
        detach::spawn(&self.backend.shared().tracker, self.runtime.as_ref(), work);
        spawning.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Forgets a hold locally when its release is dropped before it ran (see `LockGuard`'s drop).
struct ForgetUnlessRun {
    backend: Arc<dyn Backend>,
    hold: Arc<Hold>,
    armed: bool,
    /// Still inside the guard's drop: the task was refused by its runtime, not dropped later.
    spawning: Arc<std::sync::atomic::AtomicBool>,
}

impl ForgetUnlessRun {
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for ForgetUnlessRun {
    fn drop(&mut self) {
        if !self.armed || !self.spawning.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        // A hold already ended (by shutdown, which released it, or lost) has nothing to say.
        if !self.hold.is_lost() {
            tracing::warn!(lock = %self.hold.keys.lock, "guard dropped where its release cannot run (its runtime is gone); the lock expires with its lease");
        }
        self.hold.mark_ended();
        self.backend.shared().holds.remove(&self.hold);
    }
}

/// `with`'s body for every lock kind: runs `f` inside `guard`'s scope, then releases, also after
/// an error or a panic in `f` (the panic is resumed after the release).
pub(crate) async fn run_within<T>(
    guard: LockGuard,
    f: impl AsyncFnOnce(&LockGuard) -> T,
    failed: impl FnOnce(&T) -> bool,
) -> Result<T> {
    let name = guard.hold.keys.lock.clone();
    let out = catch_unwind(guard.scope(f(&guard))).await;
    let released = guard.unlock().await;
    match out {
        Err(panic) => std::panic::resume_unwind(panic),
        Ok(v) => settle(&name, v, released, failed),
    }
}

/// The body's output `v` and the release's outcome as one result: the release's error wins,
/// unless the body itself `failed` (its own error is what its caller must see; the release's
/// is logged).
fn settle<T>(name: &str, v: T, released: Result<()>, failed: impl FnOnce(&T) -> bool) -> Result<T> {
    match released {
        Ok(()) => Ok(v),
        Err(e) if failed(&v) => {
            tracing::warn!(lock = %name, error = %e, "the release after a failed body failed too; the body's error is returned");
            Ok(v)
        }
        Err(e) => Err(e),
    }
}

/// `with_until_lost`'s body for every lock kind: as [`run_within`], but if the hold is lost
/// while `f` runs, `f` is dropped there and then (at the await it is parked on) and the result
/// is `LockLost`.
pub(crate) async fn run_while_held<T>(
    guard: LockGuard,
    f: impl AsyncFnOnce(&LockGuard) -> T,
    failed: impl FnOnce(&T) -> bool,
) -> Result<T> {
    let name = guard.hold.keys.lock.clone();
    let out = {
        let body = catch_unwind(guard.scope(f(&guard)));
        tokio::select! {
            // A loss seen at the same poll as the body's end wins: the body's output may have
            // been made after the exclusion ended.
            biased;
            () = guard.lost() => None,
            out = body => Some(out),
        }
    };
    let released = guard.unlock().await;
    match out {
        None => Err(Error::LockLost { name }),
        Some(Err(panic)) => std::panic::resume_unwind(panic),
        Some(Ok(v)) => settle(&name, v, released, failed),
    }
}

/// Runs `fut`, turning a panic inside it into an `Err` with the panic's payload (so that the
/// caller can release a lock before resuming the panic).
pub(crate) async fn catch_unwind<F: Future>(fut: F) -> std::thread::Result<F::Output> {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(move |cx| {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(panic) => Poll::Ready(Err(panic)),
        }
    })
    .await
}
