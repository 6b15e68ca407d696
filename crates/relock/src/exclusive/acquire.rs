//! The acquire that every exclusive kind shares, written once: the running check, the keys,
//! the lease check, the kind's plan (re-enter a hold, or acquire fresh), the span, and the
//! fresh acquisition's wait, which is the kind's own (the plain and read-write locks'
//! `wait::lease_bounded`, the fair lock's line).
//!
//! A kind answers two questions in its own file: what a `lock()` of the calling code means
//! here ([`Plan`]: which hold it re-enters, or who owns a fresh one), and how it waits.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tracing::Instrument;

use crate::client::handle::Inner;
use crate::client::settings::validate_lease;
use crate::error::Result;
use crate::exclusive::attempt::{record_acquire, reenter, Fresh};
use crate::hold::guard::LockGuard;
use crate::hold::holds::Hold;
use crate::hold::kind::LockKeys;
use crate::hold::owner::Owner;

/// What a `lock()` does, as the kind decides it: re-enter `hold`, or acquire a fresh hold
/// for `owner`, with whatever else the kind's wait needs (`with`).
pub(crate) enum Plan<T> {
    Reenter(Arc<Hold>),
    Fresh { owner: Option<Owner>, with: T },
}

/// One exclusive kind's lock, as seen by [`acquire`].
pub(crate) struct Acquire<'a, F, R> {
    pub(crate) inner: &'a Arc<Inner>,
    /// The keys, or the error of a bad name (reported by the first operation).
    pub(crate) keys: Result<Arc<LockKeys>>,
    /// A fixed lease, or `None` for the watchdog's.
    pub(crate) lease: Option<Duration>,
    /// Its spans, made in the kind's own file so that their target is the kind's module (a
    /// log filter on it keeps working): the `acquire` span of a fresh acquisition (with the
    /// fields `outcome`, `wait_ms`, `token` and `attempts` empty, recorded here), and the
    /// `reenter` span of a re-entry, given the hold's field.
    pub(crate) spans: Spans<F, R>,
}

/// See [`Acquire::spans`].
pub(crate) struct Spans<F, R> {
    pub(crate) fresh: F,
    pub(crate) reenter: R,
}

/// A kind's [`Spans`] for the lock `$name` (and, for a read-write side, its `$side` field):
/// a macro, so that the spans are made where it is written and their target is the kind's
/// module.
macro_rules! acquire_spans {
    ($name:expr $(, $side:ident)?) => {
        $crate::exclusive::acquire::Spans {
            fresh: || {
                tracing::debug_span!(
                    "acquire",
                    lock = %$name,
                    $($side,)?
                    outcome = tracing::field::Empty,
                    wait_ms = tracing::field::Empty,
                    token = tracing::field::Empty,
                    attempts = tracing::field::Empty
                )
            },
            reenter: |field: &str| {
                tracing::debug_span!("reenter", lock = %$name, $($side,)? field = %field)
            },
        }
    };
}
pub(crate) use acquire_spans;

/// Acquires as the kind plans (`plan`) and waits (`wait`, for a fresh hold), bounded by
/// `wait_for` (`None`: until granted); records the outcome on the `acquire` span.
pub(crate) async fn acquire<T, W, Fut, F, R>(
    lock: Acquire<'_, F, R>,
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
    let Acquire {
        inner,
        keys,
        lease,
        spans,
    } = lock;
    inner.check_running()?;
    let keys = keys?;
    if let Some(lease) = lease {
        validate_lease("lease", lease)?;
    }
    match plan(&keys)? {
        Plan::Reenter(hold) => {
            let span = (spans.reenter)(&hold.field);
            reenter(inner, keys, hold, lease)
                .instrument(span)
                .await
                .map(Some)
        }
        Plan::Fresh { owner, with } => {
            let span = (spans.fresh)();
            let fresh = Fresh::new(inner, keys.kind, owner, lease);
            let (started, attempts) = (fresh.started, fresh.attempts.clone());
            let r = wait(keys, fresh, with, wait_for)
                .instrument(span.clone())
                .await;
            record_acquire(&span, &r, started, attempts.load(Ordering::Relaxed));
            r
        }
    }
}
