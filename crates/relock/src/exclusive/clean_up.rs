//! The clean-up after an acquire attempt whose grant the caller will not keep: an outcome
//! unknown (no reply: one tracked task per acquisition releases its attempts' fields, retried
//! until a grant would have expired), or a grant refused (too few replicas, or a reply after
//! its lease: released in the caller's path).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::client::inner::Inner;
use crate::client::inner_backend;
use crate::client::retry;
use crate::hold::kind::LockKeys;

/// An acquire whose reply never came may have been granted: remove that hold now rather than
/// let it block others until its lease ends. It names the attempt's own field, which the
/// caller then retires, so this clean-up can never touch another hold, whenever it lands. If
/// the acquire itself lands after this clean-up (a connection that delayed it), it leaves a
/// hold nobody renews, which expires with its lease.
///
/// It runs in a tracked task (shutdown waits for it), not in the caller's path: the caller
/// holds nothing either way and goes on (retries under a new field, or returns its error)
/// without a second command timeout when the server is away. One task per acquisition does
/// the clean-ups of all its failed attempts ([`CleanUps`]): a `lock()` waiting through an
/// outage fails an attempt a second, and a task (and a release a second) for each would pile
/// up for a whole lease.
pub(crate) fn clean_up_unknown_outcome(
    inner: &Arc<Inner>,
    keys: &Arc<LockKeys>,
    clean_ups: &Arc<CleanUps>,
    field: &str,
    lease: Duration,
) {
    // A grant that landed by now has expired by then.
    let until = Instant::now() + lease.max(inner.settings().command_timeout);
    clean_ups
        .pending
        .lock()
        .unwrap()
        .push((field.to_string(), until));
    if !clean_ups.running.swap(true, Ordering::SeqCst) {
        let tracker = inner.shared().tracker.clone();
        tracker.spawn(drain(inner.clone(), keys.clone(), clean_ups.clone()));
    }
}

/// The fields of one acquisition's attempts whose outcome is unknown, each until a grant
/// under it would have expired, and whether a task is releasing them.
#[derive(Debug, Default)]
pub(crate) struct CleanUps {
    pending: std::sync::Mutex<Vec<(String, Instant)>>,
    running: std::sync::atomic::AtomicBool,
}

/// Releases the pending fields one by one: the next at once after a reply; after an error,
/// the same again after a backoff (doubling to a second), so that a server that is away costs
/// one release a second, and the rest follow at once when it answers. Fields past their time
/// are dropped. When shutdown begins, every pending field gets one more try (shutdown waits
/// about one command timeout for this task).
async fn drain(inner: Arc<Inner>, keys: Arc<LockKeys>, clean_ups: Arc<CleanUps>) {
    let mut stopping = inner.stopping();
    let mut backoff = Duration::from_millis(50);
    loop {
        let next = {
            let mut pending = clean_ups.pending.lock().unwrap();
            let now = Instant::now();
            pending.retain(|(_, until)| now < *until);
            pending.first().cloned()
        };
        let Some((field, _)) = next else {
            clean_ups.running.store(false, Ordering::SeqCst);
            // A field queued between the look and the store found the task still running.
            if clean_ups.pending.lock().unwrap().is_empty()
                || clean_ups.running.swap(true, Ordering::SeqCst)
            {
                return;
            }
            continue;
        };
        if *stopping.borrow() {
            let fields: Vec<String> = std::mem::take(&mut *clean_ups.pending.lock().unwrap())
                .into_iter()
                .map(|(f, _)| f)
                .collect();
            // Shutdown's last chance (`client::retry::try_until`): each field is tried again
            // every 50 ms until it gets a reply or one command timeout has passed. One try
            // was not enough: a try sent while a connection was being replaced failed at
            // once, and the grant it undid stayed for its whole lease (r98, under load).
            let last = Instant::now() + inner.settings().command_timeout;
            for f in fields {
                let release = || inner.run_release(&keys, &f, true);
                let transient = crate::error::redis_transient;
                retry::try_until(&inner, last, "clean-up", &keys.lock, release, transient).await;
            }
            clean_ups.running.store(false, Ordering::SeqCst);
            return;
        }
        match inner.run_release(&keys, &field, true).await {
            Ok(_) => {
                clean_ups
                    .pending
                    .lock()
                    .unwrap()
                    .retain(|(f, _)| *f != field);
                backoff = Duration::from_millis(50);
            }
            Err(e) => {
                tracing::debug!(lock = %keys.lock, error = %e, "could not clean up after a failed acquire; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = stopping.wait_for(|s| *s) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        }
    }
}

/// The clean-up of a grant the caller will not keep (the server answered: too few replicas
/// acknowledged it, or the reply came after its lease), in the caller's path so that the
/// grant is gone when the caller hears of it; retried in the background if it fails.
pub(crate) async fn clean_up_refused_grant(
    inner: &Arc<Inner>,
    keys: &Arc<LockKeys>,
    field: &str,
    lease: Duration,
) {
    let until = Instant::now() + lease.max(inner.settings().command_timeout);
    if let Err(e) = inner.run_release(keys, field, true).await {
        tracing::debug!(lock = %keys.lock, error = %e, "could not clean up after a failed acquire; retrying in the background");
        inner.shared().tracker.spawn(inner_backend::retry_release(
            inner.clone(),
            keys.clone(),
            field.to_string(),
            until,
        ));
    }
}
