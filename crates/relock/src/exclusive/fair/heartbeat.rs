//! The client's heartbeat scheduler for its fair waiters: every heartbeat deadline / 5 it
//! refreshes the deadline of each queued waiter (100 per script call), which also evicts
//! dead waiters and tells which of ours should try now.

use std::sync::{Arc, Weak};

use tokio::sync::watch;
use tracing::Instrument;

use crate::client::inner::Inner;
use crate::client::scripts;
use crate::exclusive::fair::line;
use crate::exclusive::fair::line::{Line, QueueEntry};
use crate::exclusive::fair::settings::heartbeat;
use crate::hold::every;
use crate::hold::watchdog;

/// Starts the client's heartbeat scheduler: every heartbeat deadline / 5 it refreshes the
/// deadline of each queued waiter (100 per script call), which also evicts dead waiters and
/// tells us which of ours should try now.
pub(crate) fn spawn_heartbeats(inner: Weak<Inner>, shutdown: watch::Receiver<bool>) {
    let Some((runtime, period)) = inner
        .upgrade()
        .map(|i| (i.runtime().clone(), heartbeat(&i) / 5))
    else {
        return;
    };
    runtime.spawn(every::every(
        inner,
        shutdown,
        period,
        move |inner| async move {
            beat_all(&inner).await;
            Some(period)
        },
    ));
}

async fn beat_all(inner: &Arc<Inner>) {
    let entries = inner.state::<Line>().queued();
    if entries.is_empty() {
        return;
    }
    let calls = inner
        .batches(&entries, |e| e.keys.lock.as_str())
        .into_iter()
        .map(|batch| {
            let inner = inner.clone();
            let span = tracing::debug_span!("heartbeat", waiters = batch.len());
            async move {
                beat_batch(&inner, &batch).await;
                true
            }
            .instrument(span)
        });
    // The first batch alone, then the rest at once (see `all_succeed`: one NOSCRIPT, not one
    // per batch in flight, on a server that lacks the script).
    let period = heartbeat(inner) / 5;
    watchdog::all_succeed(calls, watchdog::first_alone(period)).await;
}

async fn beat_batch(inner: &Inner, batch: &[Arc<QueueEntry>]) {
    let hb = heartbeat(inner);
    let mut keys = Vec::with_capacity(batch.len() * 4);
    let mut args = Vec::with_capacity(2 * batch.len() + 3);
    args.push(hb.as_millis().to_string());
    args.push(inner.publish_cmd().to_string());
    args.push(inner.grace_ms().to_string());
    for e in batch {
        keys.extend(e.line.group(&e.keys));
        args.push(e.field.clone());
        args.push(e.keys.wake.clone());
    }
    let limit = inner.settings().command_timeout.min(hb / 5);
    let sent = tokio::time::Instant::now();
    let call = line::FAIR_HEARTBEAT.run::<Vec<i64>>(inner.conn(), keys, args);
    let outcome = match tokio::time::timeout(limit, call).await {
        Ok(Ok(reply)) => scripts::one_each(reply, batch.len()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no reply within {}", crate::error::Human(limit))),
    };
    match outcome {
        Ok(results) => {
            for (e, r) in batch.iter().zip(results) {
                let (in_line, try_now) = beat(r);
                if in_line {
                    // In line when the script ran: a later handoff's lease counts from here.
                    e.seen_in_line(sent);
                }
                if try_now {
                    e.wake.notify_one();
                }
            }
        }
        Err(cause) => {
            tracing::warn!(%cause, waiters = batch.len(), "fair-queue heartbeat failed; retrying next period");
        }
    }
}

/// One waiter's heartbeat answer: (in line when the script ran, try now). 1: in line; 2: first
/// in line while the lock is free (our wake-up may have been lost); 0: out of line: handed the
/// lock (its message may have been lost) or evicted (a stall longer than the deadline), and
/// trying reports the grant or rejoins. Any other number is read as 2.
pub(crate) fn beat(answer: i64) -> (bool, bool) {
    (answer != 0, answer != 1)
}
