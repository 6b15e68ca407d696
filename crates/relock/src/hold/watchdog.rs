//! The watchdog: one task per client renews every watchdog-managed hold every lease/3, in
//! batches, through its [`Backend`] (one server, or every master of a quorum).
//!
//! A renewal that fails (timeout, connection loss) is retried sooner, until the lease would
//! have run out on the local monotonic clock; only then is the hold marked lost. A renewal that
//! finds the owner field gone marks the hold lost at once. Renewal never re-creates a lock.

use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::hold::backend::{Backend, BoxFuture};
use crate::hold::every;
use crate::hold::holds::Hold;

/// Starts the watchdog of `backend`: a round (`renew_all`) every renewal period, after a
/// round that failed every period/4 (at least 10 ms, so that a retry comes well before a lease
/// can run out). It ends with the backend or at shutdown.
pub(crate) fn spawn<B: Backend>(backend: Weak<B>, shutdown: watch::Receiver<bool>) {
    let Some(period) = backend.upgrade().map(|b| b.renew_period()) else {
        return;
    };
    tokio::spawn(every::every(
        backend,
        shutdown,
        period,
        move |backend| async move {
            Some(if renew_all(&backend).await {
                period
            } else {
                (period / 4).max(Duration::from_millis(10))
            })
        },
    ));
}

/// How long the first call of a round every `period` goes alone before the rest are sent
/// anyway: a twentieth of the period, at most 200 ms. Long enough for a NOSCRIPT and the EVAL
/// after it on a healthy server (well under a millisecond), short enough that a slow node's
/// calls cannot stretch a round past what the lease allows: with 200 ms, a quorum client with
/// a 1.5 s lease and one node 430 ms slow lost holds.
pub(crate) fn first_alone(period: Duration) -> Duration {
    (period / 20).min(Duration::from_millis(200))
}

/// Runs `calls` (each in its own task), the first alone for up to `first_alone`, then the rest
/// at once; true if every one returned true.
pub(crate) async fn all_succeed<Fut>(
    calls: impl IntoIterator<Item = Fut>,
    first_alone: Duration,
) -> bool
where
    Fut: Future<Output = bool> + Send + 'static,
{
    // The first call alone: on a server that lacks the script (new, restarted empty, or a
    // replica just promoted) its NOSCRIPT and EVAL cache it, instead of every call in flight
    // meeting NOSCRIPT and being sent twice (t77; bench-watchdog counted 1.02 calls per 100
    // locks per period for that).
    let mut calls = calls.into_iter();
    let Some(first) = calls.next() else {
        return true;
    };
    let mut running = JoinSet::new();
    running.spawn(first);
    let mut ok = true;
    if let Ok(Some(r)) = tokio::time::timeout(first_alone, running.join_next()).await {
        ok &= r.unwrap_or(false);
    }
    for call in calls {
        running.spawn(call);
    }
    while let Some(r) = running.join_next().await {
        ok &= r.unwrap_or(false);
    }
    ok
}

/// One round over every hold that wants renewal, and whatever else the backend renews with
/// them (`Backend::other_renewals`), its batches at once; false if any failed.
async fn renew_all<B: Backend>(backend: &Arc<B>) -> bool {
    let holds: Vec<Arc<Hold>> = backend
        .shared()
        .holds
        .all()
        .into_iter()
        .filter(|h| h.wants_renewal())
        .collect();
    let mut calls: Vec<BoxFuture<bool>> = Vec::new();
    if !holds.is_empty() {
        let batches = backend.renewal_batches(holds);
        calls.extend(batches.into_iter().map(|b| backend.clone().renew_batch(b)));
    }
    calls.extend(backend.clone().other_renewals());
    all_succeed(calls, first_alone(backend.renew_period())).await
}
