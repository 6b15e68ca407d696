//! The waiter dispatcher: one subscriber connection per client, one refcounted subscription
//! per lock channel, and a task that turns release messages into wake-ups.
//!
//! The dispatcher knows no message format: each kind passes its [`Format`] when it
//! subscribes, the channel's first local subscriber makes the format's state ([`Waking`]),
//! and every message on the channel goes to that state, which wakes the channel's waiters
//! ([`Waiters`]: one, all, up to `n`) or waiters it keeps itself. A wake-up given to nobody is
//! kept for the next waiter (`Notify::notify_one`), and passed on if the woken waiter was
//! dropped. Pub/sub is at-most-once, so waiters also bound every sleep by the holder's TTL;
//! and on a reconnect or a lagging receiver every waiter is woken to retry.

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fred::clients::SubscriberClient;
use fred::interfaces::{EventInterface, PubsubInterface};
use tokio::sync::{broadcast::error::RecvError, watch, Mutex as AsyncMutex, Notify};

use crate::hold::meter;
use crate::hold::wake::{Format, Waiters, Waking};

/// Shared state of the dispatcher.
#[derive(Debug)]
pub(crate) struct PubSub {
    pub(crate) subscriber: SubscriberClient,
    /// SSUBSCRIBE/SUNSUBSCRIBE (a Redis Cluster) instead of SUBSCRIBE/UNSUBSCRIBE.
    pub(crate) sharded: bool,
    /// Connected to a Redis Cluster (scripts' batches must keep to one slot).
    pub(crate) cluster: bool,
    /// A reconnect forced by the keep-alive is under way (cleared by the reconnect event), so
    /// a long outage asks fred for one reconnect, not one per failed keep-alive.
    pub(crate) forcing: std::sync::atomic::AtomicBool,
    pub(crate) channels: Mutex<HashMap<String, Arc<Channel>>>,
    /// Holds watched for the deletion of their field (`hold_watch`), at most
    /// `hold_watch::MAX_WATCHED`.
    pub(crate) watched: AtomicUsize,
}

#[derive(Debug)]
pub(crate) struct Channel {
    /// How its messages read, made by its first local subscriber's format.
    waking: Arc<dyn Waking>,
    format: Format,
    notify: Notify,
    /// Holders of the lock (`hold_watch`): every message wakes all of them, apart from the
    /// waiters' `notify`, so that a holder never takes a waiter's wake-up.
    holders: Notify,
    /// When the holder's lease ends, as last reported to a local waiter; cleared by a release
    /// message. Lets a newly arriving waiter park without asking Redis first.
    held_until: Mutex<Option<tokio::time::Instant>>,
    /// Users of this channel; guarded by the `channels` map's mutex.
    refs: Mutex<usize>,
    /// Serialises SUBSCRIBE/UNSUBSCRIBE for this channel, and says how far it got.
    pub(crate) subscribed: AsyncMutex<SubState>,
}

/// How far a channel's subscription got on the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SubState {
    /// Not subscribed (or unsubscribed).
    None,
    /// A SUBSCRIBE was (or may have been) sent, but nobody saw it confirmed: its sender gave
    /// up (cancelled, timed out, failed), or the connection was re-established since. The next
    /// waiter sends it again (SUBSCRIBE is idempotent) and confirms it before relying on it.
    Sent,
    /// The server has processed the SUBSCRIBE: releases published from then on reach us.
    Confirmed,
}

/// One waiter's use of a channel. Dropping it releases the subscription (in the background when
/// it was the last user).
#[derive(Debug)]
pub(crate) struct Subscription {
    pubsub: Arc<PubSub>,
    name: String,
    channel: Arc<Channel>,
}

impl PubSub {
    pub(crate) fn new(subscriber: SubscriberClient, sharded: bool, cluster: bool) -> Arc<Self> {
        Arc::new(PubSub {
            subscriber,
            sharded,
            cluster,
            forcing: std::sync::atomic::AtomicBool::new(false),
            channels: Mutex::new(HashMap::new()),
            watched: AtomicUsize::new(0),
        })
    }

    /// Starts the task that routes messages to waiters; it ends when `shutdown` turns true or
    /// the subscriber closes.
    pub(crate) fn spawn_dispatcher(self: &Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        let mut messages = self.subscriber.message_rx();
        let mut reconnects = self.subscriber.reconnect_rx();
        let mut errors = self.subscriber.error_rx();
        let this = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    msg = messages.recv() => match msg {
                        Ok(msg) => {
                            meter::step("message");
                            let Some(this) = this.upgrade() else { break };
                            let chan = msg.channel.to_string();
                            let _span = tracing::trace_span!("wake", channel = %chan).entered();
                            let channel = this.channels.lock().unwrap().get(&chan).cloned();
                            if let Some(c) = channel {
                                c.deliver(&payload(&msg.value));
                            }
                        }
                        Err(RecvError::Lagged(n)) => {
                            tracing::warn!(missed = n, "pub/sub receiver lagged; waking every waiter");
                            let Some(this) = this.upgrade() else { break };
                            this.wake_all_and_holders();
                        }
                        Err(RecvError::Closed) => break,
                    },
                    r = reconnects.recv() => match r {
                        Ok(server) => {
                            tracing::debug!(%server, "subscriber (re)connected; waking every waiter");
                            let Some(this) = this.upgrade() else { break };
                            this.forcing.store(false, std::sync::atomic::Ordering::SeqCst);
                            // Now (a lock freed meanwhile is taken at once), and again once
                            // every subscription is confirmed on the new connection: a waiter
                            // that parked in between would miss a release published before
                            // its re-SUBSCRIBE landed.
                            this.wake_all();
                            tokio::spawn(async move {
                                this.reconfirm_all().await;
                                this.wake_all_and_holders();
                            });
                        }
                        Err(RecvError::Lagged(_)) => {
                            // Reconnect events were missed: at least one happened, so a forced
                            // reconnect is not pending any more.
                            let Some(this) = this.upgrade() else { break };
                            this.forcing.store(false, std::sync::atomic::Ordering::SeqCst);
                        }
                        Err(RecvError::Closed) => break,
                    },
                    r = errors.recv() => match r {
                        Ok((error, server)) => {
                            // The subscriber lost its connection (or part of it): messages may
                            // be lost from here until it is back and re-confirmed. Waiters
                            // retry now, and re-check often while it is down (`Inner::park`).
                            tracing::debug!(%error, ?server, "subscriber connection error; waking every waiter");
                            let Some(this) = this.upgrade() else { break };
                            this.wake_all();
                        }
                        Err(RecvError::Lagged(_)) => {}
                        Err(RecvError::Closed) => break,
                    },
                    _ = shutdown.wait_for(|s| *s) => break,
                }
            }
        });
    }

    /// Whether the subscriber connection is up. While it is not, release messages cannot reach
    /// this client, so waiters re-check at a short interval instead of sleeping on them.
    pub(crate) fn is_connected(&self) -> bool {
        use fred::interfaces::ClientLike;
        self.subscriber.is_connected()
    }

    /// Wakes every waiter on every channel, and leaves a wake-up for one that is about to wait.
    pub(crate) fn wake_all(&self) {
        self.wake(false);
    }

    /// [`wake_all`](Self::wake_all), and every holder too (its hold checked once more): for a
    /// moment after which messages may have been lost but the subscriptions are known to work
    /// again (re-confirmed after a reconnect, or a lagging receiver), so that one outage costs
    /// each watched hold one check, not one per event.
    pub(crate) fn wake_all_and_holders(&self) {
        self.wake(true);
    }

    fn wake(&self, holders: bool) {
        for c in self.channels.lock().unwrap().values() {
            *c.held_until.lock().unwrap() = None;
            c.notify.notify_waiters();
            c.notify.notify_one();
            if holders {
                c.holders.notify_waiters();
            }
            c.waking.wake_all();
        }
    }

    /// Registers a waiter on `name`, whose messages read as `format` says, and makes sure
    /// the channel is subscribed. The format is fixed by the channel's first local user (the
    /// kinds' channel names never collide: each has its own prefix).
    ///
    /// # Cancel safety
    /// If dropped mid-way the registration is undone by the returned guard's drop; a SUBSCRIBE
    /// that was already sent is followed by an UNSUBSCRIBE.
    pub(crate) async fn subscribe(
        self: &Arc<Self>,
        name: &str,
        format: Format,
    ) -> Result<Subscription, fred::error::Error> {
        let channel = {
            let mut map = self.channels.lock().unwrap();
            let c = map
                .entry(name.to_string())
                .or_insert_with(|| {
                    Arc::new(Channel {
                        waking: format.make(),
                        format,
                        notify: Notify::new(),
                        holders: Notify::new(),
                        held_until: Mutex::new(None),
                        refs: Mutex::new(0),
                        subscribed: AsyncMutex::new(SubState::None),
                    })
                })
                .clone();
            debug_assert_eq!(c.format, format, "channel `{name}` used by two formats");
            *c.refs.lock().unwrap() += 1;
            meter::subscriptions(map.len());
            c
        };
        let sub = Subscription {
            pubsub: self.clone(),
            name: name.to_string(),
            channel,
        };
        let mut state = sub.channel.subscribed.lock().await;
        self.ensure(name, &mut state).await?;
        drop(state);
        Ok(sub)
    }

    /// Makes the subscription of `name` confirmed on the server (see [`SubState`]): unless it
    /// already is, sends SUBSCRIBE (again) and waits for the server to have processed it.
    ///
    /// fred's subscribe resolves once the command is queued, not when the server has
    /// registered it. A PING on the same connection is answered after the SUBSCRIBE was
    /// processed, so once it returns a release published from then on reaches us, and the
    /// caller's "subscribe, then retry" is really ordered on the server.
    pub(crate) async fn ensure(
        &self,
        name: &str,
        state: &mut SubState,
    ) -> Result<(), fred::error::Error> {
        if *state == SubState::Confirmed {
            return Ok(());
        }
        // Set first: if this future is dropped while SUBSCRIBE is in flight, the server may
        // still subscribe us, so the clean-up must send UNSUBSCRIBE after it, and the next
        // waiter must confirm it again.
        *state = SubState::Sent;
        if self.sharded {
            self.subscriber.ssubscribe(name).await?;
        } else {
            self.subscriber.subscribe(name).await?;
        }
        self.confirm(name).await?;
        *state = SubState::Confirmed;
        Ok(())
    }

    /// Whether `name` is subscribed already, so joining it costs no round trip.
    pub(crate) fn is_subscribed(&self, name: &str) -> bool {
        let map = self.channels.lock().unwrap();
        map.get(name).is_some_and(|c| {
            c.subscribed
                .try_lock()
                .is_ok_and(|s| *s == SubState::Confirmed)
        })
    }

    /// Number of channels with local users (for tests and inspection).
    pub(crate) fn channel_count(&self) -> usize {
        self.channels.lock().unwrap().len()
    }

    /// Unsubscribes `name` if it has no users left.
    ///
    /// The entry stays in the map until UNSUBSCRIBE is done, so a waiter that arrives meanwhile
    /// joins this entry and (holding the same async mutex after us) subscribes again.
    async fn release(self: Arc<Self>, name: String, channel: Arc<Channel>) {
        let mut subscribed = channel.subscribed.lock().await;
        let unused = || *channel.refs.lock().unwrap() == 0;
        if !{
            let _map = self.channels.lock().unwrap();
            unused()
        } {
            return;
        }
        if *subscribed != SubState::None {
            let r = if self.sharded {
                self.subscriber.sunsubscribe(name.as_str()).await
            } else {
                self.subscriber.unsubscribe(name.as_str()).await
            };
            if let Err(e) = r {
                tracing::debug!(channel = %name, error = %e, "unsubscribe failed");
            }
            *subscribed = SubState::None;
        }
        let mut map = self.channels.lock().unwrap();
        if unused() && map.get(&name).is_some_and(|c| Arc::ptr_eq(c, &channel)) {
            map.remove(&name);
        }
        meter::subscriptions(map.len());
    }
}

impl Channel {
    /// Routes one message as its channel's format says; every holder looks again.
    fn deliver(&self, payload: &str) {
        self.holders.notify_waiters();
        self.waking.deliver(payload, self);
    }
}

impl Waiters for Channel {
    fn one(&self) {
        *self.held_until.lock().unwrap() = None;
        meter::wakeup();
        meter::step("deliver");
        self.notify.notify_one();
    }

    fn all(&self, released: bool) {
        if released {
            *self.held_until.lock().unwrap() = None;
        }
        meter::wakeup();
        self.notify.notify_waiters();
    }

    fn up_to(&self, n: u64) {
        let users = *self.refs.lock().unwrap() as u64;
        for _ in 0..n.min(users) {
            meter::wakeup();
            self.notify.notify_one();
        }
    }

    fn woke_own(&self) {
        meter::wakeup();
        meter::step("deliver");
    }
}

/// A message's payload as text: one that is not text (bytes that are not UTF-8, an array)
/// reads as empty.
pub(crate) fn payload(value: &fred::types::Value) -> std::borrow::Cow<'_, str> {
    value.as_str().unwrap_or_default()
}

impl Subscription {
    /// Resolves at the next message on the channel (or when messages may have been lost), for
    /// a holder of the lock; never takes a waiter's wake-up.
    pub(crate) fn holder_notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.channel.holders.notified()
    }

    /// Whether this subscription's connection is up (release messages can reach it).
    pub(crate) fn is_connected(&self) -> bool {
        self.pubsub.is_connected()
    }

    /// The channel's state for its format, if its format's state is a `T` (the kind that
    /// subscribed reaches its own per-channel state so).
    pub(crate) fn waking<T: Waking + 'static>(&self) -> Option<&T> {
        (*self.channel.waking).as_any().downcast_ref::<T>()
    }

    /// The channel's state, shared: for a registration that must outlive a borrow of the
    /// subscription (undone on its own drop).
    pub(crate) fn waking_shared(&self) -> Arc<dyn Waking> {
        self.channel.waking.clone()
    }

    /// Wakes the next local waiter on the channel (or keeps the wake-up for the next to wait):
    /// a waiter woken for what it could not use passes it on so.
    pub(crate) fn wake_next(&self) {
        self.channel.notify.notify_one();
    }

    /// A future that completes on the next wake-up for this channel.
    pub(crate) fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.channel.notify.notified()
    }

    /// Records that the lock is held for `pttl` more (as an acquire attempt just reported).
    pub(crate) fn set_held_for(&self, pttl: Duration) {
        *self.channel.held_until.lock().unwrap() = Some(tokio::time::Instant::now() + pttl);
    }

    /// How long the lock is still held, as last reported and not since released.
    pub(crate) fn known_held_for(&self) -> Option<Duration> {
        let until = (*self.channel.held_until.lock().unwrap())?;
        let left = until.saturating_duration_since(tokio::time::Instant::now());
        (!left.is_zero()).then_some(left)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let last = {
            let _map = self.pubsub.channels.lock().unwrap();
            let mut refs = self.channel.refs.lock().unwrap();
            *refs -= 1;
            *refs == 0
        };
        if last {
            let fut = self
                .pubsub
                .clone()
                .release(self.name.clone(), self.channel.clone());
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(fut);
            }
        }
    }
}

/// The channel a waiter subscribes to for `channel`'s releases: `channel` itself, unless a
/// chaos mutant (`relock::mutant`) breaks that.
pub(crate) fn mutated_channel(channel: &str) -> std::borrow::Cow<'_, str> {
    crate::seam::channel(channel)
}
