//! [`LockGuard`]: proof of one hold, released by [`LockGuard::unlock`] or on drop.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument;

use crate::client::Inner;
use crate::error::{Error, Result};
use crate::holds::{Hold, Holds};
use crate::quorum::QuorumInner;

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
    backend: Backend,
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

/// Where a guard's hold lives: one Redis server, or a quorum of independent masters.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    Single(Arc<Inner>),
    Quorum(Arc<QuorumInner>),
}

impl Backend {
    /// Releases one guard's worth of `hold` on the server(s): `remaining` guards are left.
    async fn release(self, hold: Arc<Hold>, remaining: u32, lost: bool) -> Result<()> {
        match self {
            Backend::Single(inner) => release(inner, hold, remaining, lost).await,
            Backend::Quorum(q) => crate::quorum::release(q, hold, remaining, lost).await,
        }
    }

    fn client_id(&self) -> u64 {
        match self {
            Backend::Single(inner) => inner.id,
            Backend::Quorum(q) => q.id,
        }
    }

    fn holds(&self) -> &Holds {
        match self {
            Backend::Single(inner) => &inner.holds,
            Backend::Quorum(q) => &q.holds,
        }
    }

    /// Spawns `fut` on the backend's task tracker, which shutdown waits for.
    fn spawn<F>(&self, fut: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match self {
            Backend::Single(inner) => inner.tracker.spawn(fut),
            Backend::Quorum(q) => q.tracker.spawn(fut),
        }
    }
}

impl LockGuard {
    pub(crate) fn new(inner: Arc<Inner>, hold: Arc<Hold>, watchdog: bool) -> Self {
        LockGuard {
            backend: Backend::Single(inner),
            hold,
            watchdog,
            released: false,
        }
    }

    pub(crate) fn quorum(q: Arc<QuorumInner>, hold: Arc<Hold>, watchdog: bool) -> Self {
        LockGuard {
            backend: Backend::Quorum(q),
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
        crate::reentry::scope(self.backend.client_id(), self.hold.clone(), future)
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
        match self.backend.spawn(fut).await {
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
            self.backend.spawn(async move {
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
            self.backend.holds().remove(&self.hold);
        }
    }
}

/// Releases one guard's worth of `hold` on one server, `remaining` guards being left.
pub(crate) async fn release(
    inner: Arc<Inner>,
    hold: Arc<Hold>,
    remaining: u32,
    lost: bool,
) -> Result<()> {
    let span = tracing::debug_span!(
        "release",
        lock = %hold.keys.lock,
        field = %hold.field,
        remaining,
        outcome = tracing::field::Empty
    );
    let r = release_hold(inner, hold, remaining, lost)
        .instrument(span.clone())
        .await;
    span.record(
        "outcome",
        match &r {
            Ok(()) => "released",
            Err(Error::LockLost { .. }) => "lost",
            Err(e) => crate::meter::cause(e),
        },
    );
    r
}

async fn release_hold(
    inner: Arc<Inner>,
    hold: Arc<Hold>,
    remaining: u32,
    lost: bool,
) -> Result<()> {
    let lost_error = || Error::LockLost {
        name: hold.keys.lock.clone(),
    };
    if remaining > 0 {
        // A nested guard: one count off. Only this hold's field is touched.
        if lost {
            return Err(lost_error());
        }
        return match inner.run_release(&hold.keys, &hold.field, false).await {
            Ok(Some(_)) => Ok(()),
            // The hold's final release got there first: nothing left to do.
            Ok(None) if hold.is_releasing() => Ok(()),
            Ok(None) => {
                hold.mark_lost(
                    "a release found the hold gone (expired, deleted or force-unlocked)",
                );
                Err(lost_error())
            }
            Err(e) => Err(inner.error("release", &hold.keys.lock, e)),
        };
    }
    // The last guard: remove the hold's field whatever its count. Safe even if the hold was
    // lost meanwhile: the field is this hold's alone, so a lock that now belongs to someone
    // else (another field) is left alone.
    let result = match inner.run_release(&hold.keys, &hold.field, true).await {
        Ok(Some(_)) if !lost => Ok(()),
        Ok(Some(_)) => Err(lost_error()),
        Ok(None) => {
            hold.mark_lost(
                "the final release found the hold gone (expired, deleted or force-unlocked)",
            );
            Err(lost_error())
        }
        Err(e) => {
            let err = inner.error("release", &hold.keys.lock, e);
            if err.is_transient() {
                inner
                    .tracker
                    .spawn(retry_release(inner.clone(), hold.clone()));
            }
            Err(err)
        }
    };
    inner.holds.remove(&hold);
    crate::meter::released(hold.kind, hold.granted_at.elapsed());
    result
}

/// Retries a final release that failed (timed out, connection lost) until it gets a reply or
/// the hold's lease has ended on the local clock (the server has dropped it by then). When
/// shutdown begins it makes one last attempt at once (shutdown waits for it). Safe to repeat,
/// and safe to land late: it names only this hold's field.
async fn retry_release(inner: Arc<Inner>, hold: Arc<Hold>) {
    let mut stopping = inner.stopping.subscribe();
    let mut backoff = Duration::from_millis(50);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = stopping.wait_for(|s| *s) => {}
        }
        if Instant::now() >= hold.valid_until() {
            return;
        }
        if *stopping.borrow() {
            // Shutdown waits about one command timeout for us: keep trying (a connection may
            // still be reconnecting) until then.
            let until = Instant::now() + inner.settings.command_timeout;
            loop {
                match inner.run_release(&hold.keys, &hold.field, true).await {
                    Ok(_) => return,
                    Err(e) if Instant::now() + Duration::from_millis(50) >= until => {
                        tracing::warn!(lock = %hold.keys.lock, error = %e, "release at shutdown failed; the lease will expire");
                        return;
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        }
        match inner.run_release(&hold.keys, &hold.field, true).await {
            Ok(_) => return,
            Err(e) => tracing::debug!(lock = %hold.keys.lock, error = %e, "release retry failed"),
        }
        backoff = (backoff * 2).min(Duration::from_secs(1));
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
