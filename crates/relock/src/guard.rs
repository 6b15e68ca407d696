//! [`LockGuard`]: proof of one hold, released by [`LockGuard::unlock`] or on drop.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::time::Instant;

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::holds::Hold;

/// One hold of a distributed lock. The lock is released when the guard is unlocked or dropped
/// (and, for a re-entered hold, when the last guard of the hold goes).
///
/// Unlike a local mutex guard, the hold can end without the guard: its lease can run out or
/// the lock can be deleted. [`lost`](LockGuard::lost) tells you when (no later than
/// [`valid_until`](LockGuard::valid_until)), and [`fencing_token`](LockGuard::fencing_token)
/// lets the resource you protect refuse a holder that kept going after that; see
/// `docs/safety.md`.
///
/// Dropping the guard stops it counting at once and releases on the server in the
/// background; use [`unlock`](LockGuard::unlock) to learn the outcome. A guard dropped where
/// no tokio runtime runs is forgotten locally, and its lock expires with its lease.
#[must_use = "if unused the lock will immediately unlock"]
#[clippy::has_significant_drop]
pub struct LockGuard {
    backend: Arc<dyn Backend>,
    hold: Arc<Hold>,
    watchdog: bool,
    released: bool,
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

    /// Runs `future` inside this hold's scope: a `lock()` (or `try_lock`) of the same lock in
    /// it, however deeply nested, re-enters this hold (count + 1, same fencing token) instead
    /// of waiting for it. Other locks, and other clients, are not affected.
    ///
    /// The returned future does not borrow the guard, so it can be spawned
    /// (`tokio::spawn(guard.scope(work))`); a re-entry after the hold ended (released or lost)
    /// fails with [`Error::LockLost`].
    ///
    /// ```no_run
    /// # async fn f(lock: relock::Lock) -> relock::Result<()> {
    /// let guard = lock.lock().await?;
    /// guard.scope(async {
    ///     let nested = lock.lock().await?; // re-enters
    ///     nested.unlock().await
    /// }).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Cancel safety
    /// Dropping the returned future drops `future`; nothing else happens.
    pub fn scope<F: Future>(&self, future: F) -> impl Future<Output = F::Output> {
        crate::reentry::scope(self.backend.shared().id, self.hold.clone(), future)
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
        self.released = true;
        let (remaining, lost) = self.hold.remove_guard(self.watchdog);
        let fut = self
            .backend
            .clone()
            .release(self.hold.clone(), remaining, lost);
        // A task of its own, not the caller's: the release changes what others see (the hold
        // stays "releasing", and a quorum hold's gate stays taken, until its reply is
        // handled), so it must not wait for a caller that may stop polling this future (found
        // by review: a kept, unpolled unlock stalled the next lock() of the name and a quorum
        // client's whole watchdog).
        match self.backend.shared().tracker.spawn(fut).await {
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
        // Stop counting at once: from here on no `lock()` can re-enter a hold whose last guard
        // is gone, even before the release below has run.
        let (remaining, lost) = self.hold.remove_guard(self.watchdog);
        if tokio::runtime::Handle::try_current().is_ok() {
            let fut = self
                .backend
                .clone()
                .release(self.hold.clone(), remaining, lost);
            self.backend.shared().tracker.spawn(async move {
                if let Err(e) = fut.await {
                    if !matches!(e, Error::LockLost { .. } | Error::Shutdown) {
                        tracing::warn!(error = %e, "background release failed; retrying until the lease would end");
                    }
                }
            });
        } else if remaining == 0 {
            // No runtime to release on: forget the hold locally (the watchdog stops renewing
            // it) and let its lease end it on the server.
            tracing::warn!(lock = %self.hold.keys.lock, "guard dropped outside a tokio runtime; the lock expires with its lease");
            self.hold.mark_ended();
            self.backend.shared().holds.remove(&self.hold);
        }
    }
}

/// `with`'s body for every lock kind: runs `f` inside `guard`'s scope, then releases, also after
/// an error or a panic in `f` (the panic is resumed after the release).
pub(crate) async fn run_within<T>(
    guard: LockGuard,
    f: impl AsyncFnOnce(&LockGuard) -> T,
) -> Result<T> {
    let out = catch_unwind(guard.scope(f(&guard))).await;
    let released = guard.unlock().await;
    match out {
        Err(panic) => std::panic::resume_unwind(panic),
        Ok(v) => released.map(|()| v),
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
