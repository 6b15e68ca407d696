//! The start of every single-server wait: the attempts made before subscribing, then the
//! subscription, made before the next attempt so that a release between the two cannot pass
//! the waiter by (Redisson #1763). Each kind's loop goes on from there with its own attempts
//! and `Inner::park`.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::attempt::{attempt, Attempt, Fresh, Mode};
use crate::client::Inner;
use crate::error::Result;
use crate::guard::LockGuard;
use crate::keys::LockKeys;
use crate::pubsub::Subscription;

/// How a wait started.
pub(crate) enum Start {
    /// The first attempt was granted.
    Acquired(LockGuard),
    /// Not granted, and the caller does not wait (any longer).
    GaveUp,
    /// Subscribed: go on with the kind's loop. `joining`: other local waiters were already
    /// subscribed, so no attempt was made (the lock is most likely taken: one round trip
    /// fewer per handoff).
    Wait {
        sub: Subscription,
        joining: bool,
        deadline: Option<Instant>,
    },
}

/// Makes the first attempt with `first` (unless local waiters show the lock is taken), retried
/// on transient errors under a new field; then subscribes to the lock's release channel,
/// within the caller's deadline (`wait` from now; `None`: no deadline), which it returns.
///
/// # Cancel safety
/// Cancel safe: an attempt runs in its own task, and the subscription is dropped with it.
pub(crate) async fn start(
    inner: &Arc<Inner>,
    keys: &Arc<LockKeys>,
    fresh: &mut Fresh,
    first: Mode,
    wait: Option<Duration>,
) -> Result<Start> {
    let deadline = wait.and_then(|w| Instant::now().checked_add(w));
    let joining = wait != Some(Duration::ZERO) && inner.pubsub.is_subscribed(&keys.channel);
    if !joining {
        // The uncontended path: one round trip, no subscription.
        loop {
            match attempt(inner, keys, fresh, first.clone()).await {
                Ok(Attempt::Acquired(g)) => return Ok(Start::Acquired(g)),
                Ok(_) => {
                    fresh.refused("held");
                    break;
                }
                Err(e) => fresh.after_error(inner, e).await?,
            }
        }
        if wait == Some(Duration::ZERO) || deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(Start::GaveUp);
        }
    }
    // Joining an existing subscription costs no round trip.
    let channel = crate::pubsub::mutated_channel(&keys.channel);
    let subscribe = inner.pubsub.subscribe(&channel);
    let sub = match deadline {
        Some(d) => match tokio::time::timeout_at(d, subscribe).await {
            Ok(r) => r,
            Err(_) => return Ok(Start::GaveUp),
        },
        None => subscribe.await,
    }
    .map_err(|e| inner.error("subscribe", &keys.channel, e))?;
    Ok(Start::Wait {
        sub,
        joining,
        deadline,
    })
}
