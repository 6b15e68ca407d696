//! A quorum holder hears at once that its hold was deleted, as a single-server holder does
//! (`hold_watch`): a force-unlock (`QuorumLock::force_unlock`, or `DEL` and
//! `PUBLISH … 0` on each master as Redisson's `forceUnlock` does on every RedissonRedLock
//! node) is announced on the lock's channel of every node. The watch listens there on every
//! node; once subscribed, and after every message from any node, it checks its field on every
//! node, and a hold that a majority of nodes no longer has is lost: `lost()` fires within a
//! round trip, not at the watchdog's next renewal.
//!
//! The subscriptions are made on the nodes' connections of the moment; a node whose
//! connections are replaced later (a restart) is still checked on its new ones after any
//! message from another node, but is no longer listened to.
//!
//! A hold released within [`SETTLE`] costs a timer and nothing else; at most [`MAX_WATCHED`]
//! holds of a client are watched at once (beyond that, the renewal alone notices). A node
//! whose subscription fails is not listened to (the others still are, and the renewal still
//! checks every node).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use fred::interfaces::HashesInterface;

use crate::client::hold_watch::{MAX_WATCHED, SETTLE};
use crate::hold::holds::Hold;
use crate::quorum::channel::QUORUM_CHANNEL;
use crate::quorum::inner::QuorumInner;

/// Watches `hold` (of `q`) until it ends: see the module.
pub(crate) fn watch(q: &Arc<QuorumInner>, hold: &Arc<Hold>) {
    if !q.watch_holds {
        return;
    }
    if q.watched.fetch_add(1, Ordering::SeqCst) >= MAX_WATCHED {
        q.watched.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    let slot = Slot(Arc::downgrade(q));
    let (q, hold) = (Arc::downgrade(q), hold.clone());
    tokio::spawn(async move {
        let _slot = slot;
        tokio::select! {
            _ = tokio::time::sleep(SETTLE) => {}
            _ = hold.ended() => return,
        }
        let Some(inner) = q.upgrade() else { return };
        let conns: Vec<_> = inner.nodes.iter().filter_map(|n| n.conn()).collect();
        let (nodes, quorum, limit) = (inner.nodes.len(), inner.quorum, inner.node_timeout);
        drop(inner);
        let channel = hold.keys.channel.clone();
        let subscribed = futures_util::future::join_all(conns.iter().map(|c| {
            let channel = channel.clone();
            async move {
                let sub = c.pubsub().subscribe(&channel, QUORUM_CHANNEL);
                tokio::time::timeout(limit * 4, sub).await.ok()?.ok()
            }
        }));
        let subs: Vec<_> = tokio::select! {
            s = subscribed => s.into_iter().flatten().collect(),
            _ = hold.ended() => return,
        };
        if subs.is_empty() {
            return; // the renewal still notices
        }
        loop {
            // Registered before the check, so that a message during it is not missed.
            let mut messages: Vec<_> = subs.iter().map(|s| Box::pin(s.holder_notified())).collect();
            for m in &mut messages {
                m.as_mut().enable();
            }
            // Each node's connections as they are now: a set replaced since (its server
            // restarted, or it broke) is asked on its new connections.
            let Some(inner) = q.upgrade() else { return };
            let now: Vec<_> = inner.nodes.iter().filter_map(|n| n.conn()).collect();
            drop(inner);
            let checks = futures_util::future::join_all(now.iter().map(|c| {
                let (lock, field) = (hold.keys.lock.as_str(), hold.field.as_str());
                async move {
                    // Not the lock's pinned connection: a check never queues in front of a
                    // release or vote of this lock (they keep their order among themselves).
                    let call = c.conn().hexists::<bool, _, _>(lock, field);
                    matches!(tokio::time::timeout(limit, call).await, Ok(Ok(false)))
                }
            }));
            let gone = tokio::select! {
                g = checks => g.into_iter().filter(|gone| *gone).count(),
                _ = hold.ended() => return,
            };
            // Only a hold still live (not being released by its own guard) can be lost here;
            // as the renewal judges it: more nodes lack it than may fail.
            if gone > nodes - quorum && hold.is_live() {
                hold.mark_lost("its watch found the hold gone on a majority of nodes (force-unlocked or deleted)");
                return;
            }
            tokio::select! {
                _ = futures_util::future::select_all(messages) => {}
                _ = hold.ended() => return,
            }
        }
    });
}

/// Gives the watch's place back when its task ends.
struct Slot(Weak<QuorumInner>);

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(q) = self.0.upgrade() {
            q.watched.fetch_sub(1, Ordering::SeqCst);
        }
    }
}
