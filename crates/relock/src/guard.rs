//! [`LockGuard`]: proof of one hold, released by [`LockGuard::unlock`] or on drop.

use std::sync::Arc;
use std::time::Duration;

use tracing::Instrument;

use crate::client::Inner;
use crate::error::{Error, Result};
use crate::holds::Hold;
use crate::quorum::QuorumInner;

/// One hold of a distributed lock. The lock is released when the guard is unlocked or dropped
/// (and, for a reentrant hold, when the last guard of the owner goes).
///
/// Unlike a local mutex guard, the hold can end without the guard: its lease can run out or
/// the lock can be deleted. [`lost`](LockGuard::lost) tells you when, and
/// [`fencing_token`](LockGuard::fencing_token) lets the resource you protect refuse a holder
/// that kept going after that; see `docs/safety.md`.
///
/// Dropping the guard releases in the background on the runtime it was created on; use
/// [`unlock`](LockGuard::unlock) to learn the outcome.
#[must_use = "if unused the lock will immediately unlock"]
#[clippy::has_significant_drop]
#[derive(Debug)]
pub struct LockGuard {
    backend: Backend,
    hold: Arc<Hold>,
    watchdog: bool,
    released: bool,
}

/// Where a guard's hold lives: one Redis server, or a quorum of independent masters.
#[derive(Debug, Clone)]
enum Backend {
    Single(Arc<Inner>),
    Quorum(Arc<QuorumInner>),
}

impl Backend {
    async fn release(self, hold: Arc<Hold>, watchdog: bool) -> Result<()> {
        match self {
            Backend::Single(inner) => release(inner, hold, watchdog).await,
            Backend::Quorum(q) => crate::quorum::release(q, hold, watchdog).await,
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

    /// The fencing token of this hold: it is larger than the token of every earlier hold of
    /// this lock name, and the same for all reentrant guards of one hold.
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
            .saturating_duration_since(tokio::time::Instant::now())
    }

    /// Whether the hold is known to be lost, or its lease has run out on the local clock.
    pub fn is_lost(&self) -> bool {
        self.hold.is_lost()
    }

    /// Resolves once the hold is lost: the watchdog found the lock gone (expired, deleted,
    /// force-unlocked, or Redis restarted empty), renewals kept failing until the lease ran
    /// out, or a fixed lease ended.
    ///
    /// # Cancel safety
    /// Cancel safe: it only observes.
    pub async fn lost(&self) {
        self.hold.lost().await
    }

    /// Releases this hold and reports how that went.
    ///
    /// # Errors
    /// [`Error::LockLost`] if the hold had already been lost (nothing is released then), and
    /// connection errors, after which the lock expires with its lease.
    ///
    /// # Cancel safety
    /// The release runs in its own task, so dropping this future does not stop it.
    pub async fn unlock(mut self) -> Result<()> {
        self.released = true;
        let (backend, hold, watchdog) = (self.backend.clone(), self.hold.clone(), self.watchdog);
        match tokio::spawn(backend.release(hold, watchdog)).await {
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
        let fut = self
            .backend
            .clone()
            .release(self.hold.clone(), self.watchdog);
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(async move {
                    if let Err(e) = fut.await {
                        if !matches!(e, Error::LockLost { .. } | Error::Shutdown) {
                            tracing::warn!(error = %e, "background release failed; the lease will expire");
                        }
                    }
                });
            }
            Err(_) => {
                // No runtime to release on: forget the hold locally; the lease expires it.
                tracing::warn!(lock = %self.hold.keys.lock, "guard dropped outside a tokio runtime; the lock expires with its lease");
                drop(fut);
                let _ = self.hold.remove_guard(self.watchdog);
            }
        }
    }
}

/// Takes one guard off `hold`; when it was the last, removes every hold of the owner on the
/// server (which also clears counts left by acquisitions whose replies were lost).
pub(crate) async fn release(inner: Arc<Inner>, hold: Arc<Hold>, watchdog: bool) -> Result<()> {
    let span = tracing::debug_span!("release", lock = %hold.keys.lock, owner = %hold.field);
    release_hold(inner, hold, watchdog).instrument(span).await
}

async fn release_hold(inner: Arc<Inner>, hold: Arc<Hold>, watchdog: bool) -> Result<()> {
    let (remaining, lost) = hold.remove_guard(watchdog);
    let key = (hold.keys.lock.clone(), hold.field.clone());
    let current = inner
        .holds
        .get(&key)
        .is_some_and(|h| Arc::ptr_eq(&h, &hold));
    let lost_error = || Error::LockLost {
        name: hold.keys.lock.clone(),
    };
    let result = if lost || !current {
        Err(lost_error())
    } else {
        let r = inner
            .run_release(&hold.keys, &hold.field, remaining == 0)
            .await;
        match r {
            Ok(Some(_)) => Ok(()),
            Ok(None) => {
                hold.mark_lost();
                Err(lost_error())
            }
            Err(e) => Err(inner.error("release", &hold.keys.lock, e)),
        }
    };
    if remaining == 0 {
        inner.holds.remove_if(&key, |_, h| Arc::ptr_eq(h, &hold));
        hold.gone.notify_waiters();
    }
    result
}
