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

use tracing::field::Empty;
use tracing::Instrument;

use crate::client::handle::Inner;
use crate::client::settings::validate_lease;
use crate::error::Result;
use crate::exclusive::attempt::{record_acquire, reenter, Fresh};
use crate::hold::guard::LockGuard;
use crate::hold::holds::Hold;
use crate::hold::keys::LockKeys;
use crate::hold::meter::Kind;
use crate::hold::owner::Owner;

/// What a `lock()` does, as the kind decides it: re-enter `hold`, or acquire a fresh hold
/// for `owner`, counted as `kind`, with whatever else the kind's wait needs (`with`).
pub(crate) enum Plan<T> {
    Reenter(Arc<Hold>),
    Fresh {
        owner: Option<Owner>,
        kind: Kind,
        with: T,
    },
}

/// One exclusive kind's lock, named `name` (`side`: which side of a read-write lock), as
/// seen by [`acquire`].
pub(crate) struct Acquire<'a> {
    pub(crate) inner: &'a Arc<Inner>,
    pub(crate) name: &'a str,
    pub(crate) side: Option<&'static str>,
    /// The keys, or the error of a bad name (reported by the first operation).
    pub(crate) keys: Result<Arc<LockKeys>>,
    /// A fixed lease, or `None` for the watchdog's.
    pub(crate) lease: Option<Duration>,
}

/// Acquires as the kind plans (`plan`) and waits (`wait`, for a fresh hold), bounded by
/// `wait_for` (`None`: until granted); records the outcome on the `acquire` span.
pub(crate) async fn acquire<T, W, Fut>(
    lock: Acquire<'_>,
    wait_for: Option<Duration>,
    plan: impl FnOnce(&Arc<LockKeys>) -> Result<Plan<T>>,
    wait: W,
) -> Result<Option<LockGuard>>
where
    W: FnOnce(Arc<LockKeys>, Fresh, T, Option<Duration>) -> Fut,
    Fut: Future<Output = Result<Option<LockGuard>>>,
{
    let Acquire {
        inner,
        name,
        side,
        keys,
        lease,
    } = lock;
    inner.check_running()?;
    let keys = keys?;
    if let Some(lease) = lease {
        validate_lease("lease", lease)?;
    }
    match plan(&keys)? {
        Plan::Reenter(hold) => {
            let span = tracing::debug_span!("reenter", lock = %name, side, field = %hold.field);
            reenter(inner, keys, hold, lease)
                .instrument(span)
                .await
                .map(Some)
        }
        Plan::Fresh { owner, kind, with } => {
            let span = tracing::debug_span!(
                "acquire",
                lock = %name,
                side,
                outcome = Empty,
                wait_ms = Empty,
                token = Empty,
                attempts = Empty
            );
            let fresh = Fresh::new(inner, owner, kind, lease);
            let (started, attempts) = (fresh.started, fresh.attempts.clone());
            let r = wait(keys, fresh, with, wait_for)
                .instrument(span.clone())
                .await;
            record_acquire(&span, &r, started, attempts.load(Ordering::Relaxed));
            r
        }
    }
}
