//! The acquire of the exclusive kinds: the shared acquire (`hold::acquire`) with this room's
//! re-entry (`attempt::reenter`) and fresh acquisition (`attempt::Fresh`, which the kind's own
//! wait drives).
//!
//! A kind answers two questions in its own file: what a `lock()` of the calling code means
//! here ([`Plan`]: which hold it re-enters, or who owns a fresh one), and how it waits.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::client::inner::Inner;
use crate::error::Result;
use crate::exclusive::attempt::{reenter, Fresh};
use crate::hold::guard::LockGuard;
use crate::hold::kind::LockKeys;

use crate::hold::acquire;
pub(crate) use crate::hold::acquire::{acquire_spans, Plan, Spans};

/// One exclusive kind's lock, as seen by [`acquire_exclusive`].
pub(crate) struct ExclusiveAcquire<'a, F, R> {
    pub(crate) inner: &'a Arc<Inner>,
    /// The keys, or the error of a bad name (reported by the first operation).
    pub(crate) keys: Result<Arc<LockKeys>>,
    /// A fixed lease, or `None` for the watchdog's.
    pub(crate) lease: Option<Duration>,
    /// Its spans (`acquire_spans!`, written in the kind's file).
    pub(crate) spans: Spans<F, R>,
}

/// Acquires as the kind plans (`plan`) and waits (`wait`, for a fresh hold), bounded by
/// `wait_for` (`None`: until granted), through the shared acquire.
pub(crate) async fn acquire_exclusive<T, W, Fut, F, R>(
    lock: ExclusiveAcquire<'_, F, R>,
    wait_for: Option<Duration>,
    plan: impl FnOnce(&Arc<LockKeys>) -> Result<Plan<T>>,
    wait: W,
) -> Result<Option<LockGuard>>
where
    W: FnOnce(Arc<LockKeys>, Fresh, T, Option<Duration>) -> Fut,
    Fut: Future<Output = Result<Option<LockGuard>>>,
    F: FnOnce() -> tracing::Span,
    R: FnOnce(&str) -> tracing::Span,
{
    let ExclusiveAcquire {
        inner,
        keys,
        lease,
        spans,
    } = lock;
    let shared = acquire::SharedAcquire {
        running: inner.check_running(),
        keys,
        lease,
        spans,
    };
    let reenter = |keys, hold, lease| reenter(inner, keys, hold, lease);
    let fresh = |keys: Arc<LockKeys>, owner, with, wait_for| {
        let fresh = Fresh::new(inner, keys.kind, owner, lease);
        let attempts = fresh.attempts.clone();
        async move {
            let r = wait(keys, fresh, with, wait_for).await;
            (r, attempts.load(Ordering::Relaxed))
        }
    };
    acquire::acquire_shared(shared, wait_for, plan, reenter, fresh).await
}
