//! A holder hears at once that its hold was deleted: every release, force-unlock
//! or handoff of a lock is announced on its channel, so a holder that listens there learns of a
//! `force_unlock` (relock's, Redisson's `forceUnlock`, `relock force-unlock`) within a round
//! trip, not at the watchdog's next renewal (up to a third of the lease later).
//!
//! A hold released within [`SETTLE`] (most holds under contention) costs a place in a queue
//! and nothing else: one task per client ([`Watches`]) starts the watch of each hold still live
//! when its time comes. The watch subscribes to the lock's channel (shared with the client's
//! waiters on it; a holder never takes a waiter's wake-up) and checks its field once (a deletion
//! before the subscription is caught so), then again after every message on the channel.
//! (A task and a timer per acquisition, the first version, cost the uncontended bench 1.3–2.4
//! µs of client CPU per pair and the contended handoff about 0.1 ms at p50.) A field found gone marks the hold lost: `lost()` fires. A message that was lost
//! costs nothing but time: the watchdog's renewal still finds the field gone.
//!
//! At most [`MAX_WATCHED`] holds of a client are watched at once; beyond that, holds rely on
//! the renewal alone, so a client holding 100,000 locks keeps 10,000 subscriptions, not 100,000.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio::time::Instant;

use fred::interfaces::HashesInterface;

use crate::client::pubsub::PubSub;
use crate::hold::backend;
use crate::hold::holds::Hold;
use crate::hold::wake::Format;

/// How long a hold lives before its watch subscribes. With the check made once subscribed,
/// `lost()` still fires within this plus a few round trips of a force-unlock.
pub(crate) const SETTLE: Duration = Duration::from_millis(30);

/// The most holds of one client watched at once.
pub(crate) const MAX_WATCHED: usize = 10_000;

/// The holds waiting for their watch to start, in order of acquisition (so of due time), and
/// the one task per client that starts them.
#[derive(Debug, Default)]
pub(crate) struct Watches {
    pending: Mutex<VecDeque<(Instant, Weak<Hold>)>>,
    wake: Notify,
    started: AtomicBool,
}

/// Queues `hold` for a watch [`SETTLE`] from now: the only cost on the acquisition's path.
/// `shutdown` ends the client's starter task; `rt` (the client's runtime, not the caller's,
/// which may be a short-lived one) runs it and the watches.
pub(crate) fn watch(
    watches: &Arc<Watches>,
    pubsub: &Arc<PubSub>,
    pool: &fred::clients::Pool,
    rt: &tokio::runtime::Handle,
    shutdown: &watch::Sender<bool>,
    hold: &Arc<Hold>,
) {
    let first = {
        let mut q = watches.pending.lock().unwrap();
        q.push_back((Instant::now() + SETTLE, Arc::downgrade(hold)));
        q.len() == 1
    };
    if !watches.started.swap(true, Ordering::SeqCst) {
        rt.spawn(starter(
            watches.clone(),
            Arc::downgrade(pubsub),
            pool.clone(),
            rt.clone(),
            shutdown.subscribe(),
        ));
    }
    if first {
        watches.wake.notify_one();
    }
}

/// Starts the watch of each queued hold that is still live when its time comes; ends with the
/// client.
async fn starter(
    watches: Arc<Watches>,
    pubsub: Weak<PubSub>,
    pool: fred::clients::Pool,
    rt: tokio::runtime::Handle,
    mut shutdown: watch::Receiver<bool>,
) {
    // However this task ends (shutdown, the client gone, a panic, its runtime dropping it),
    // the next acquisition starts another: the queue is never left without one.
    let _restart = Restart(watches.clone());
    loop {
        let next = watches.pending.lock().unwrap().front().map(|(due, _)| *due);
        tokio::select! {
            _ = async {
                match next {
                    Some(due) => tokio::time::sleep_until(due).await,
                    None => watches.wake.notified().await,
                }
            } => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
        let now = Instant::now();
        loop {
            let item = {
                let mut q = watches.pending.lock().unwrap();
                match q.front() {
                    Some((due, _)) if *due <= now => q.pop_front(),
                    _ => None,
                }
            };
            let Some((_, hold)) = item else { break };
            let Some(hold) = hold.upgrade().filter(|h| h.is_live()) else {
                continue;
            };
            let Some(ps) = pubsub.upgrade() else { return };
            start(&ps, &pool, &rt, hold);
        }
    }
}

/// Lets the next [`watch`] start a starter again once this one has ended.
struct Restart(Arc<Watches>);

impl Drop for Restart {
    fn drop(&mut self) {
        self.0.started.store(false, Ordering::SeqCst);
    }
}

/// Watches `hold` until it ends (released or lost) or the client is gone: see the module.
/// `pool` answers the field checks; `rt` is the client's runtime.
fn start(
    pubsub: &Arc<PubSub>,
    pool: &fred::clients::Pool,
    rt: &tokio::runtime::Handle,
    hold: Arc<Hold>,
) {
    // The starter already waited SETTLE.
    spawn_watch(pubsub, pool, rt, hold, Duration::ZERO);
}

/// What a watch watches: a hold of a lock, or what a kind holds under a lease of its own (a
/// permit: `leases`).
pub(crate) trait Watched: Send + Sync + 'static {
    /// The channel where its deletion is announced, and how that channel's messages read.
    fn channel(&self) -> (&str, Format);
    /// Resolves once it is released, lost or past its deadline: the watch ends.
    fn ended(&self) -> impl std::future::Future<Output = ()> + Send + '_;
    /// Whether it is still on the server (one read).
    fn check(&self, pool: &fred::clients::Pool) -> backend::BoxFuture<FredResult<bool>>;
    /// Found gone on the server: marks it lost if it is still live (not being released).
    fn found_gone(&self);
}

pub(crate) type FredResult<T> = Result<T, fred::error::Error>;

impl Watched for Hold {
    fn channel(&self) -> (&str, Format) {
        (&self.keys.channel, self.keys.kind.wake())
    }
    fn ended(&self) -> impl std::future::Future<Output = ()> + Send + '_ {
        Hold::ended(self)
    }
    fn check(&self, pool: &fred::clients::Pool) -> backend::BoxFuture<FredResult<bool>> {
        let (client, lock, field) = (
            pool.next().clone(),
            self.keys.lock.clone(),
            self.field.clone(),
        );
        Box::pin(async move { client.hexists::<bool, _, _>(lock, field).await })
    }
    fn found_gone(&self) {
        if self.is_live() {
            self.mark_lost("its watch found the hold gone (force-unlocked or deleted)");
        }
    }
}

/// The watch of one hold or permit, after `settle`: it subscribes to its channel (retried
/// while it lives: a watch given up in an outage would leave it unwatched once the server is
/// back), checks it once subscribed (a deletion before the subscription is caught so) and
/// again after every message there, and ends when it ends. A failed check (the pool still
/// reconnecting after an outage, whose resubscription woke the watch) is tried again after a
/// backoff doubling up to a second. At most [`MAX_WATCHED`] per client at once.
pub(crate) fn spawn_watch<W: Watched>(
    pubsub: &Arc<PubSub>,
    pool: &fred::clients::Pool,
    rt: &tokio::runtime::Handle,
    watched: Arc<W>,
    settle: Duration,
) {
    if pubsub.watched.fetch_add(1, Ordering::SeqCst) >= MAX_WATCHED {
        pubsub.watched.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    // Made before the spawn and moved into the task: a task dropped before it first runs (its
    // runtime ending) still gives its place back.
    let slot = Slot(Arc::downgrade(pubsub));
    let (pubsub, pool) = (Arc::downgrade(pubsub), pool.clone());
    rt.spawn(async move {
        let _slot = slot;
        if !settle.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(settle) => {}
                _ = watched.ended() => return,
            }
        }
        let mut retry = Duration::from_millis(50);
        let sub = loop {
            // Upgraded per try: a watch retrying in an outage does not keep a dropped
            // client's pub/sub alive. Boxed: fred's futures are several KB, and the task of a
            // hold released within SETTLE (most of them) stays small.
            let Some(ps) = pubsub.upgrade() else { return };
            let (channel, kind) = watched.channel();
            let channel = channel.to_string();
            let subscribe = Box::pin(async move { ps.subscribe(&channel, kind).await });
            tokio::select! {
                s = subscribe => if let Ok(s) = s { break s },
                _ = watched.ended() => return,
            }
            tokio::select! {
                _ = tokio::time::sleep(retry) => {}
                _ = watched.ended() => return,
            }
            retry = (retry * 2).min(Duration::from_secs(1));
        };
        retry = Duration::from_millis(50);
        loop {
            // Registered before the check, so that a message during it is not missed.
            let message = sub.holder_notified();
            tokio::pin!(message);
            message.as_mut().enable();
            let there = tokio::select! {
                r = watched.check(&pool) => r,
                // Ended meanwhile: the answer no longer matters (and a stalled connection
                // must not keep the subscription).
                _ = watched.ended() => return,
            };
            match there {
                Ok(false) => {
                    watched.found_gone();
                    return;
                }
                Ok(true) => retry = Duration::from_millis(50),
                Err(_) => {
                    tokio::select! {
                        _ = tokio::time::sleep(retry) => {}
                        _ = &mut message => {}
                        _ = watched.ended() => return,
                    }
                    retry = (retry * 2).min(Duration::from_secs(1));
                    continue;
                }
            }
            tokio::select! {
                _ = message => {}
                _ = watched.ended() => return,
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
