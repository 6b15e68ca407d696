//! The watchdog: one task per client renews every watchdog-managed hold every lease/3, in
//! batches of up to 100 locks per script call.
//!
//! A renewal that fails (timeout, connection loss) is retried sooner, until the lease would
//! have run out on the local monotonic clock; only then is the hold marked lost. A renewal that
//! finds the owner field gone marks the hold lost at once. Renewal never re-creates a lock.

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tracing::Instrument;

use crate::client::Inner;
use crate::holds::Hold;
use crate::scripts;

pub(crate) fn spawn(inner: Weak<Inner>, mut shutdown: watch::Receiver<bool>) {
    tokio::spawn(async move {
        let mut delay = match inner.upgrade() {
            Some(i) => i.settings.watchdog_lease / 3,
            None => return,
        };
        loop {
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
            let Some(inner) = inner.upgrade() else { return };
            let period = inner.settings.watchdog_lease / 3;
            let ok = renew_all(&inner).await;
            // After a failure, try again well before the lease can run out.
            delay = if ok {
                period
            } else {
                (period / 4).max(Duration::from_millis(10))
            };
        }
    });
}

/// One round over every hold; false if any batch failed.
async fn renew_all(inner: &Arc<Inner>) -> bool {
    let holds: Vec<Arc<Hold>> = inner
        .holds
        .all()
        .into_iter()
        .filter(|h| h.wants_renewal())
        .collect();
    if holds.is_empty() {
        return true;
    }
    let mut batches = JoinSet::new();
    for batch in inner.batches(&holds, |h| h.keys.lock.as_str()) {
        let inner = inner.clone();
        let span = tracing::debug_span!(
            "renew",
            locks = batch.len(),
            renewed = tracing::field::Empty,
            lost = tracing::field::Empty
        );
        batches.spawn(async move { renew_batch(&inner, &batch).await }.instrument(span));
    }
    let mut ok = true;
    while let Some(r) = batches.join_next().await {
        ok &= r.unwrap_or(false);
    }
    ok
}

async fn renew_batch(inner: &Inner, batch: &[Arc<Hold>]) -> bool {
    let lease = inner.settings.watchdog_lease;
    let mut keys = Vec::with_capacity(batch.len());
    let mut args = Vec::with_capacity(batch.len() + 1);
    args.push(lease.as_millis().to_string());
    for h in batch {
        keys.push(h.keys.lock.clone());
        args.push(h.field.clone());
    }
    // Never let one hung call outlast the period: the next round retries.
    let limit = inner.settings.command_timeout.min(lease / 3);
    let sent = Instant::now();
    let call = scripts::RENEW.run::<Vec<i64>>(inner.pool.next(), keys, args);
    match tokio::time::timeout(limit, call).await {
        Ok(Ok(results)) if results.len() == batch.len() => {
            let renewed = results.iter().filter(|r| **r == 1).count();
            tracing::Span::current().record("renewed", renewed);
            tracing::Span::current().record("lost", results.len() - renewed);
            for (h, r) in batch.iter().zip(results) {
                if r == 1 {
                    crate::meter::renewed(h.kind, 1);
                    h.renewed(sent, lease);
                } else {
                    h.mark_lost("the watchdog found the hold gone (expired, deleted, force-unlocked, or Redis restarted empty)");
                }
            }
            true
        }
        outcome => {
            let cause = match outcome {
                Ok(Ok(r)) => format!("unexpected reply of {} items", r.len()),
                Ok(Err(e)) => e.to_string(),
                Err(_) => format!("no reply within {limit:?}"),
            };
            tracing::warn!(%cause, locks = batch.len(), "renewal failed; retrying while the lease lasts");
            for h in batch {
                crate::meter::renewal_failed(h.kind, 1);
            }
            let now = Instant::now();
            for h in batch {
                if now >= h.valid_until() {
                    h.mark_lost("its lease ran out while renewals failed");
                }
            }
            false
        }
    }
}
