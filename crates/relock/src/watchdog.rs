//! The watchdog: one task per client renews every watchdog-managed hold every lease/3, in
//! batches, through its [`Backend`] (one server, or every master of a quorum).
//!
//! A renewal that fails (timeout, connection loss) is retried sooner, until the lease would
//! have run out on the local monotonic clock; only then is the hold marked lost. A renewal that
//! finds the owner field gone marks the hold lost at once. Renewal never re-creates a lock.

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::backend::Backend;
use crate::holds::Hold;

/// Starts the watchdog of `backend`; it ends with the backend (or at shutdown).
pub(crate) fn spawn<B: Backend>(backend: Weak<B>, mut shutdown: watch::Receiver<bool>) {
    tokio::spawn(async move {
        let Some(period) = backend.upgrade().map(|b| b.renew_period()) else {
            return;
        };
        let mut delay = period;
        loop {
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
            let Some(backend) = backend.upgrade() else {
                return;
            };
            let ok = renew_all(&backend).await;
            // After a failure, try again well before the lease can run out.
            delay = if ok {
                period
            } else {
                (period / 4).max(Duration::from_millis(10))
            };
        }
    });
}

/// One round over every hold that wants renewal, its batches at once; false if any failed.
async fn renew_all<B: Backend>(backend: &Arc<B>) -> bool {
    let holds: Vec<Arc<Hold>> = backend
        .shared()
        .holds
        .all()
        .into_iter()
        .filter(|h| h.wants_renewal())
        .collect();
    if holds.is_empty() {
        return true;
    }
    let mut batches = JoinSet::new();
    for batch in backend.renewal_batches(holds) {
        batches.spawn(backend.clone().renew_batch(batch));
    }
    let mut ok = true;
    while let Some(r) = batches.join_next().await {
        ok &= r.unwrap_or(false);
    }
    ok
}
