//! Keeping a client's subscriptions able to deliver: on a cluster, the topology watch that
//! re-subscribes shard channels on the node that now owns their slot; after a reconnect, every
//! channel subscribed again and confirmed; a subscription confirmed by a PING routed as fred
//! routes it; and the keep-alive that finds a half-open subscriber connection.

use std::sync::Arc;
use std::time::Duration;

use fred::interfaces::{ClusterInterface, EventInterface};
use tokio::sync::{broadcast::error::RecvError, watch};

use crate::client::pubsub::{Channel, PubSub, SubState};
use crate::hold::every;

impl PubSub {
    /// On a cluster: when any connection sees the topology change (a failover, a reshard),
    /// re-learn it on the subscriber, subscribe every shard channel again on the node that now
    /// owns its slot (a demoted master drops its shard subscribers without closing the
    /// connection), and wake every waiter to retry.
    pub(crate) fn spawn_topology_watch(
        self: &Arc<Self>,
        pool: &fred::clients::Pool,
        mut shutdown: watch::Receiver<bool>,
    ) {
        if !self.sharded {
            return;
        }
        let (tx, mut rx) = tokio::sync::mpsc::channel::<()>(1);
        let sources = pool
            .clients()
            .iter()
            .map(|c| c.cluster_change_rx())
            .chain([self.subscriber.cluster_change_rx()]);
        for mut changes in sources {
            let (tx, mut stop) = (tx.clone(), shutdown.clone());
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        r = changes.recv() => match r {
                            Ok(_) | Err(RecvError::Lagged(_)) => { let _ = tx.try_send(()); }
                            Err(RecvError::Closed) => return,
                        },
                        _ = stop.wait_for(|s| *s) => return,
                    }
                }
            });
        }
        drop(tx);
        let this = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    r = rx.recv() => if r.is_none() { return },
                    _ = shutdown.wait_for(|s| *s) => return,
                }
                let Some(this) = this.upgrade() else { return };
                tracing::debug!("cluster topology changed; resubscribing shard channels");
                if let Err(e) = this.subscriber.sync_cluster().await {
                    tracing::debug!(error = %e, "subscriber could not re-learn the topology");
                }
                this.wake_all();
                // Subscribe every channel in use on the node that now owns its slot (a demoted
                // master drops its shard subscribers), confirm it, and wake everyone again.
                this.reconfirm_all().await;
                this.wake_all();
            }
        });
    }

    /// After the subscriber reconnected (fred re-subscribes in the background, unconfirmed)
    /// or the cluster topology changed: subscribe every channel in use again and confirm it,
    /// so that waiters woken afterwards retry only once releases reach them again.
    pub(crate) async fn reconfirm_all(&self) {
        let channels: Vec<(String, Arc<Channel>)> = self
            .channels
            .lock()
            .unwrap()
            .iter()
            .map(|(n, c)| (n.clone(), c.clone()))
            .collect();
        // Many at once (they are pipelined on the subscriber connection): one by one, the
        // post-reconnect wake-up of waiters came after 2,000 watched holds' channels were
        // re-confirmed, 0.9 s later.
        use futures_util::StreamExt;
        futures_util::stream::iter(channels)
            .for_each_concurrent(64, |(name, channel)| async move {
                let mut state = channel.subscribed.lock().await;
                if *state == SubState::None {
                    return;
                }
                *state = SubState::Sent;
                if let Err(e) = self.ensure(&name, &mut state).await {
                    tracing::debug!(channel = %name, error = %e, "re-subscribing failed; waiters stay bounded by the lease");
                }
            })
            .await;
    }

    /// Waits until the server has processed everything sent on the connection that carries
    /// `channel`'s subscription: a PING routed exactly as fred routes the (S)SUBSCRIBE.
    pub(crate) async fn confirm(&self, channel: &str) -> Result<(), fred::error::Error> {
        self.ping_via(self.slot_of(channel)).await
    }

    /// The cluster slot fred routes `channel`'s subscription by: the channel's own slot for
    /// SSUBSCRIBE; for a classic SUBSCRIBE on a cluster, the slot of the subscriber client's id
    /// (fred sends every classic subscription to that one node). `None` outside a cluster.
    fn slot_of(&self, channel: &str) -> Option<u16> {
        if self.sharded {
            Some(fred::util::redis_keyslot(channel.as_bytes()))
        } else if self.cluster {
            use fred::interfaces::ClientLike;
            Some(fred::util::redis_keyslot(self.subscriber.id().as_bytes()))
        } else {
            None
        }
    }

    /// A PING on the subscriber connection that serves `slot` (the only one outside a cluster).
    async fn ping_via(&self, slot: Option<u16>) -> Result<(), fred::error::Error> {
        use fred::interfaces::ClientLike;
        let options = fred::types::config::Options {
            cluster_hash: slot.map(fred::types::ClusterHash::Custom),
            ..Default::default()
        };
        self.subscriber
            .with_options(&options)
            .ping::<fred::types::Value>(None)
            .await
            .map(drop)
    }

    /// While any channel is in use: every `period`, a PING (bounded by `timeout`) on each
    /// subscriber connection that carries one. A connection that died without an error (a
    /// half-open TCP connection: nothing in flight, so neither fred nor the OS notices) fails
    /// it; the subscriber is then reconnected and every waiter woken, so waiters are never left
    /// sleeping on a subscription that cannot deliver.
    /// It stops as soon as `stopping` turns true (shutdown begins), so that no PING of its own
    /// is outstanding when the subscriber quits.
    pub(crate) fn spawn_keepalive(
        self: &Arc<Self>,
        period: Duration,
        timeout: Duration,
        stopping: watch::Receiver<bool>,
    ) {
        let stop = stopping.clone();
        tokio::spawn(every::every(
            Arc::downgrade(self),
            stop,
            period,
            move |this| {
                let mut stopping = stopping.clone();
                async move {
                    // fred is reconnecting already (its own detection, or ours): waiters
                    // re-check every 100 ms meanwhile; nothing to add.
                    if !this.is_connected()
                        || this.forcing.load(std::sync::atomic::Ordering::SeqCst)
                    {
                        return Some(period);
                    }
                    let mut slots: Vec<Option<u16>> = this
                        .channels
                        .lock()
                        .unwrap()
                        .keys()
                        .map(|c| this.slot_of(c))
                        .collect();
                    slots.sort_unstable();
                    slots.dedup();
                    for slot in slots {
                        let ok = tokio::select! {
                            r = tokio::time::timeout(timeout, this.ping_via(slot)) => matches!(r, Ok(Ok(()))),
                            _ = stopping.wait_for(|s| *s) => return None,
                        };
                        if !ok {
                            tracing::warn!("the pub/sub connection did not answer a keep-alive PING; reconnecting it and waking every waiter");
                            this.wake_all();
                            // One forced reconnect at a time, until fred reports it reconnected.
                            if !this.forcing.swap(true, std::sync::atomic::Ordering::SeqCst) {
                                use fred::interfaces::ClientLike;
                                let _ = tokio::time::timeout(
                                    timeout,
                                    this.subscriber.force_reconnection(),
                                )
                                .await;
                            }
                            this.wake_all();
                            break;
                        }
                    }
                    Some(period)
                }
            },
        ));
    }
}
