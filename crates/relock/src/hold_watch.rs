//! A holder hears at once that its hold was deleted (issue 22): every release, force-unlock
//! or handoff of a lock is announced on its channel, so a holder that listens there learns of a
//! `force_unlock` (relock's, Redisson's `forceUnlock`, `relock force-unlock`) within a round
//! trip, not at the watchdog's next renewal (up to a third of the lease later).
//!
//! One task per hold, no subscription for a hold released within [`SETTLE`] (most holds under
//! contention): the task waits that long, then subscribes to the lock's channel (shared with
//! the client's waiters on it; a holder never takes a waiter's wake-up) and checks its field
//! once (a deletion before the subscription is caught so), then again after every message on
//! the channel. A field found gone marks the hold lost: `lost()` fires. A message that was lost
//! costs nothing but time: the watchdog's renewal still finds the field gone.
//!
//! At most [`MAX_WATCHED`] holds of a client are watched at once; beyond that, holds rely on
//! the renewal alone, so a client holding 100,000 locks keeps 10,000 subscriptions, not 100,000.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use fred::interfaces::HashesInterface;

use crate::holds::Hold;
use crate::pubsub::{ChannelKind, PubSub};

/// How long a hold lives before its watch subscribes. With the check made once subscribed,
/// `lost()` still fires within this plus a few round trips of a force-unlock.
pub(crate) const SETTLE: Duration = Duration::from_millis(30);

/// The most holds of one client watched at once.
pub(crate) const MAX_WATCHED: usize = 10_000;

/// Watches `hold` until it ends (released or lost) or the client is gone: see the module.
/// `pool` answers the field checks; `rt` is the client's runtime, which runs the watch (not
/// the caller's, which may be a short-lived one: its end would drop the watch, and its
/// subscription with it, unreleased).
pub(crate) fn spawn(
    pubsub: &Arc<PubSub>,
    pool: &fred::clients::Pool,
    rt: &tokio::runtime::Handle,
    hold: Arc<Hold>,
) {
    let watched = &pubsub.watched;
    if watched.fetch_add(1, Ordering::SeqCst) >= MAX_WATCHED {
        watched.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    // Made before the spawn and moved into the task: a task dropped before it first runs (its
    // runtime ending) still gives its place back.
    let slot = Slot(Arc::downgrade(pubsub));
    let (pubsub, pool) = (Arc::downgrade(pubsub), pool.clone());
    rt.spawn(async move {
        let _slot = slot;
        tokio::select! {
            _ = hold.ended() => return,
            _ = tokio::time::sleep(SETTLE) => {}
        }
        let kind = if hold.is_read_write() {
            ChannelKind::ReadWrite
        } else {
            ChannelKind::Lock
        };
        let Some(ps) = pubsub.upgrade() else { return };
        // fred's command futures are several KB: boxed, so that the task of a hold released
        // within SETTLE (most of them) stays small.
        let channel = hold.keys.channel.clone();
        let subscribe = Box::pin(async move { ps.subscribe_as(&channel, kind).await });
        let sub = tokio::select! {
            s = subscribe => match s {
                Ok(s) => s,
                // The renewal still notices; nothing else to do.
                Err(_) => return,
            },
            _ = hold.ended() => return,
        };
        loop {
            // Registered before the check, so that a message during it is not missed.
            let message = sub.holder_notified();
            tokio::pin!(message);
            message.as_mut().enable();
            let check = Box::pin(
                pool.next()
                    .hexists::<bool, _, _>(hold.keys.lock.as_str(), hold.field.as_str()),
            );
            let exists = tokio::select! {
                r = check => r,
                // Released meanwhile: the answer no longer matters (and a stalled connection
                // must not keep the subscription).
                _ = hold.ended() => return,
            };
            // Only a hold still live (not being released by its own guard) can be lost here.
            if matches!(exists, Ok(false)) && hold.is_live() {
                hold.mark_lost("its watch found the hold gone (force-unlocked or deleted)");
            }
            tokio::select! {
                _ = message => {}
                _ = hold.ended() => return,
            }
        }
    });
}

/// Gives the watch's place back when its task ends (or is dropped with its runtime).
struct Slot(std::sync::Weak<PubSub>);

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(ps) = self.0.upgrade() {
            ps.watched.fetch_sub(1, Ordering::SeqCst);
        }
    }
}
