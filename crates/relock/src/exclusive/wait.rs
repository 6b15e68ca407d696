//! Waiting for a single-server lock. Every wait starts the same way ([`start`]): the attempts
//! made before subscribing, then the subscription, made before the next attempt so that a
//! release between the two cannot pass the waiter by (Redisson #1763). A kind whose holders
//! have leases then goes on with [`lease_bounded`] (the plain lock, a read-write lock's two
//! sides); the fair lock with its own loop in `fair`.

use std::convert::Infallible;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::client::inner::Inner;
use crate::client::pubsub;
use crate::client::pubsub::Subscription;
use crate::error::Result;
use crate::exclusive::attempt::{
    attempt, await_local_release, AcquireCall, Attempt, Fresh, NO_TTL_RECHECK,
};
use crate::hold::guard::LockGuard;
use crate::hold::kind::LockKeys;
use crate::hold::meter;
use crate::hold::reentry;

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
pub(crate) async fn start<M: AcquireCall>(
    inner: &Arc<Inner>,
    keys: &Arc<LockKeys>,
    fresh: &mut Fresh,
    first: M,
    wait: Option<Duration>,
) -> Result<Start> {
    let deadline = wait.and_then(|w| Instant::now().checked_add(w));
    fresh.set_wait(wait != Some(Duration::ZERO), deadline);
    if first.coalesced().is_some() {
        // After the deadline is set: a caller's bound includes this wait. `try_lock` (no
        // wait at all) still lets this client's own release land first, so that it finds
        // the lock free right after the unlock or drop of a guard.
        let bound = deadline.filter(|_| wait != Some(Duration::ZERO));
        await_local_release(inner, &keys.lock, bound).await;
    }
    // A waiter that may share with holders (a reader) never skips its attempt.
    let mut joining = first.exclusive()
        && wait != Some(Duration::ZERO)
        && inner.pubsub().is_subscribed(&keys.wake);
    // Joining an existing subscription costs no round trip.
    let channel = pubsub::mutated_channel(&keys.wake);
    let kind = first.wake();
    let sub = loop {
        if !joining {
            // The uncontended path: one round trip, no subscription.
            loop {
                match attempt(inner, keys, fresh, first.clone()).await {
                    Ok(Attempt::Acquired(g)) => return Ok(Start::Acquired(g)),
                    Ok(_) => {
                        fresh.succeeded();
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
        // Boxed: a subscription's future holds fred's (several KB), and only waiters need it.
        let subscribe = Box::pin(inner.pubsub().subscribe(&channel, kind));
        let r = match deadline {
            Some(d) => match tokio::time::timeout_at(d, subscribe).await {
                Ok(r) => r,
                Err(_) => return Ok(Start::GaveUp),
            },
            None => subscribe.await,
        };
        match r {
            Ok(sub) => break sub,
            // A subscription that fails (the server or the subscriber connection away) is
            // retried as an attempt is: a waiting call waits through an outage, until its
            // deadline, and tries the lock again before each new subscription (a lock freed
            // meanwhile is taken without one).
            Err(e) => {
                let e = inner.error("subscribe", &keys.wake, e);
                fresh.wait_out(inner, e).await?;
                joining = false;
            }
        }
    };
    fresh.succeeded();
    Ok(Start::Wait {
        sub,
        joining,
        deadline,
    })
}

/// The wait loop of a lock whose holders have leases (the plain lock, and each side of a
/// read-write lock): after `start`, park until a release message or the holder's lease end,
/// then try again with `mode`.
pub(crate) async fn lease_bounded(
    inner: &Arc<Inner>,
    keys: Arc<LockKeys>,
    mut fresh: Fresh,
    wait: Option<Duration>,
    mode: impl AcquireCall<Outcome = Infallible>,
) -> Result<Option<LockGuard>> {
    // What local waiters know (the lock is held, until when) holds for an exclusive lock
    // only: a read-write lock's waiter may be a reader that can share with the holders.
    let exclusive = mode.exclusive();
    let (sub, joining, deadline) = match start(inner, &keys, &mut fresh, mode.clone(), wait).await?
    {
        Start::Acquired(g) => return Ok(Some(g)),
        Start::GaveUp => return Ok(None),
        Start::Wait {
            sub,
            joining,
            deadline,
        } => (sub, joining, deadline),
    };
    // Other local waiters already know the lock is held, and until when: park first
    // instead of asking Redis again (one fewer script call per handoff).
    let mut known = if joining && exclusive {
        sub.known_held_for()
    } else {
        None
    };
    let mut warned = false;
    let mut woken_by_message = false;
    loop {
        let mut woken = pin!(sub.notified());
        woken.as_mut().enable();
        let sleep = match known.take() {
            Some(held_for) => held_for,
            None => match attempt(inner, &keys, &fresh, mode.clone()).await {
                Err(e) => {
                    woken_by_message = false;
                    fresh.after_error(inner, e).await?;
                    continue;
                }
                Ok(Attempt::Acquired(g)) => {
                    // Local waiters arriving now can park until our release message.
                    if exclusive {
                        sub.set_held_for(g.remaining());
                    }
                    return Ok(Some(g));
                }
                Ok(Attempt::Held(p)) if p > 0 => {
                    fresh.succeeded();
                    fresh.refused("held");
                    if std::mem::take(&mut woken_by_message) {
                        meter::wasted_wakeup();
                    }
                    let held_for = Duration::from_millis(p as u64 + 1);
                    if exclusive {
                        sub.set_held_for(held_for);
                    }
                    held_for
                }
                Ok(Attempt::Held(-1)) => NO_TTL_RECHECK,
                Ok(Attempt::Held(_)) => continue,
                Ok(Attempt::Kind(none)) => match none {},
            },
        };
        reentry::warn_if_waiting_on_own_task(&inner.shared().holds, &keys.lock, &mut warned);
        match inner.park(sleep, deadline, woken).await? {
            None => return Ok(None),
            Some(w) => woken_by_message = w,
        }
    }
}
