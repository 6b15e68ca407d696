//! The acquire every lock kind shares, written once over any client (one server or a
//! quorum): the running check, the keys (or the name's error), the lease check, the kind's
//! plan (re-enter a hold, or acquire fresh), the span of each, and its record (outcome, wait,
//! token, attempts). The kind gives its plan, its re-entry and its fresh acquisition's wait.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument;

use crate::error::Result;
use crate::hold::guard::LockGuard;
use crate::hold::holds::Hold;
use crate::hold::kind::LockKeys;
use crate::hold::owner::Owner;

pub(crate) use crate::hold::lease::{validate_lease, MAX_LEASE};
use crate::hold::meter;

/// What a `lock()` does, as the kind decides it: re-enter `hold`, or acquire a fresh hold
/// for `owner`, with whatever else the kind's wait needs (`with`).
pub(crate) enum Plan<T> {
    Reenter(Arc<Hold>),
    Fresh { owner: Option<Owner>, with: T },
}

/// One kind's lock, as seen by [`acquire_shared`].
pub(crate) struct SharedAcquire<F, R> {
    /// The client's running check (`Err(Shutdown)` once shutdown has begun).
    pub(crate) running: Result<()>,
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

/// See [`SharedAcquire::spans`].
pub(crate) struct Spans<F, R> {
    pub(crate) fresh: F,
    pub(crate) reenter: R,
}

/// A kind's [`Spans`] for the lock `$name` (and, for a read-write side, its `$side` field):
/// a macro, so that the spans are made where it is written and their target is the kind's
/// module.
macro_rules! acquire_spans {
    ($name:expr_2021 $(, $side:ident)?) => {
        $crate::hold::acquire::Spans {
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

/// Acquires as the kind plans (`plan`): re-enters (`reenter`, given the keys, the hold and
/// the fixed lease) or waits for a fresh hold (`fresh`, given the keys, the owner, the plan's
/// `with` and `wait_for`, and returning its outcome and how many attempts it sent), bounded by
/// `wait_for` (`None`: until granted); records the outcome on the `acquire` span.
pub(crate) async fn acquire_shared<T, P, RE, REFut, W, WFut, F, R>(
    lock: SharedAcquire<F, R>,
    wait_for: Option<Duration>,
    plan: P,
    reenter: RE,
    fresh: W,
) -> Result<Option<LockGuard>>
where
    P: FnOnce(&Arc<LockKeys>) -> Result<Plan<T>>,
    RE: FnOnce(Arc<LockKeys>, Arc<Hold>, Option<Duration>) -> REFut,
    REFut: Future<Output = Result<LockGuard>>,
    W: FnOnce(Arc<LockKeys>, Option<Owner>, T, Option<Duration>) -> WFut,
    WFut: Future<Output = (Result<Option<LockGuard>>, u32)>,
    F: FnOnce() -> tracing::Span,
    R: FnOnce(&str) -> tracing::Span,
{
    let SharedAcquire {
        running,
        keys,
        lease,
        spans,
    } = lock;
    running?;
    let keys = keys?;
    if let Some(lease) = lease {
        validate_lease("lease", lease)?;
    }
    match plan(&keys)? {
        Plan::Reenter(hold) => {
            let span = (spans.reenter)(&hold.field);
            reenter(keys, hold, lease).instrument(span).await.map(Some)
        }
        Plan::Fresh { owner, with } => {
            let span = (spans.fresh)();
            let started = Instant::now();
            let (r, attempts) = fresh(keys, owner, with, wait_for)
                .instrument(span.clone())
                .await;
            record_acquire(&span, &r, started, attempts);
            r
        }
    }
}

/// Records how an acquisition ended on its `acquire` span: outcome (`acquired`, `timed_out`,
/// or the error's cause), wait time, token and the number of script calls.
fn record_acquire(
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
            span.record("outcome", meter::cause(e));
        }
    }
}
