//! The waiter dispatcher: one subscriber connection per client, one refcounted subscription
//! per lock channel, and a task that turns release messages into wake-ups.
//!
//! A plain lock's release message (`0`) wakes one local waiter (`Notify::notify_one`, which
//! keeps the wake-up for the next waiter if nobody is waiting yet, and passes it on if the
//! woken waiter was dropped). A fair lock's message names the one waiter it is for (its owner
//! field, which contains a `:`); only that waiter is woken, and only by the client it is on.
//! Pub/sub is at-most-once, so waiters also bound every sleep by the holder's TTL; and on a
//! reconnect or a lagging receiver every waiter is woken to retry.
//!
//! Other synchronizers' channels carry other messages, so each channel has a [`Wake`],
//! chosen by its first subscriber: a semaphore's message is the new number of available
//! permits `k` and wakes up to `k` local waiters; a latch's `0` (opened) wakes all of them and
//! its `1` (count set) none.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fred::clients::SubscriberClient;
use fred::interfaces::{EventInterface, PubsubInterface};
use tokio::sync::{broadcast::error::RecvError, watch, Mutex as AsyncMutex, Notify};

use crate::hold::kind::Wake;

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
    kind: Wake,
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
    /// Fair-lock waiters by owner field.
    named: Mutex<HashMap<String, NamedWaiter>>,
    /// Semaphore messages received so far: a waiter passes a wake-up on at most once per
    /// message (see [`Subscription::pass_on`]).
    messages: std::sync::atomic::AtomicU64,
}

/// A fair-lock waiter registered under its owner field: (its wake-up, where a handoff's token
/// goes, how many registrations).
type NamedWaiter = (Arc<Notify>, Arc<AtomicU64>, usize);

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

/// A fair waiter's registration for messages that name it; undone on drop.
#[derive(Debug)]
pub(crate) struct Named {
    channel: Arc<Channel>,
    field: String,
}

impl Drop for Named {
    fn drop(&mut self) {
        let mut named = self.channel.named.lock().unwrap();
        if let Some((_, _, n)) = named.get_mut(&self.field) {
            *n -= 1;
            if *n == 0 {
                named.remove(&self.field);
            }
        }
    }
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
                            crate::hold::meter::step("message");
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
            for (n, _, _) in c.named.lock().unwrap().values() {
                n.notify_one();
            }
        }
    }

    /// Registers a waiter on `name` and makes sure the channel is subscribed.
    ///
    /// # Cancel safety
    /// If dropped mid-way the registration is undone by the returned guard's drop; a SUBSCRIBE
    /// that was already sent is followed by an UNSUBSCRIBE.
    pub(crate) async fn subscribe(
        self: &Arc<Self>,
        name: &str,
    ) -> Result<Subscription, fred::error::Error> {
        self.subscribe_as(name, Wake::Release).await
    }

    /// [`subscribe`](Self::subscribe) to a channel whose messages mean what `kind` says. The
    /// kind is fixed by the channel's first local user (the kinds' channel names never
    /// collide: each has its own prefix).
    ///
    /// # Cancel safety
    /// As [`subscribe`](Self::subscribe).
    pub(crate) async fn subscribe_as(
        self: &Arc<Self>,
        name: &str,
        kind: Wake,
    ) -> Result<Subscription, fred::error::Error> {
        let channel = {
            let mut map = self.channels.lock().unwrap();
            let c = map
                .entry(name.to_string())
                .or_insert_with(|| {
                    Arc::new(Channel {
                        kind,
                        notify: Notify::new(),
                        holders: Notify::new(),
                        held_until: Mutex::new(None),
                        refs: Mutex::new(0),
                        subscribed: AsyncMutex::new(SubState::None),
                        named: Mutex::new(HashMap::new()),
                        messages: std::sync::atomic::AtomicU64::new(0),
                    })
                })
                .clone();
            debug_assert_eq!(c.kind, kind, "channel `{name}` used by two kinds");
            *c.refs.lock().unwrap() += 1;
            crate::hold::meter::subscriptions(map.len());
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
        crate::hold::meter::subscriptions(map.len());
    }
}

impl Channel {
    /// Routes one message as its channel's kind says.
    fn deliver(&self, payload: &str) {
        self.holders.notify_waiters();
        if self.kind == Wake::Count {
            self.messages
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        match read_message(self.kind, payload) {
            Delivery::Shortened => {
                *self.held_until.lock().unwrap() = None;
                crate::hold::meter::wakeup();
                self.notify.notify_waiters();
            }
            Delivery::One => {
                *self.held_until.lock().unwrap() = None;
                crate::hold::meter::wakeup();
                crate::hold::meter::step("deliver");
                self.notify.notify_one();
            }
            Delivery::Named(field, token) => {
                // For one fair waiter, on whichever client it is: wake it if it is ours. A
                // handoff also tells it that it holds the lock, with its token.
                if let Some((n, granted, _)) = self.named.lock().unwrap().get(field) {
                    if let Some(token) = token {
                        granted.store(token, std::sync::atomic::Ordering::SeqCst);
                    }
                    crate::hold::meter::wakeup();
                    crate::hold::meter::step("deliver");
                    n.notify_one();
                }
            }
            Delivery::UpTo(available) => {
                // As many local waiters as could take one, and no more (a waiter that wants
                // several and finds too few parks again).
                let users = *self.refs.lock().unwrap() as u64;
                for _ in 0..available.min(users) {
                    crate::hold::meter::wakeup();
                    self.notify.notify_one();
                }
            }
            Delivery::All => {
                crate::hold::meter::wakeup();
                self.notify.notify_waiters();
            }
            Delivery::Nobody => {}
        }
    }
}

/// What one message on a channel asks of the client's waiters there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery<'a> {
    /// A lock was released: one waiter, and the holder's lease is over.
    One,
    /// A lock's lease is now shorter than waiters read (a job's kept lock): every waiter
    /// looks again, as Redisson's waiters do on `1`.
    Shortened,
    /// A fair lock's message for the waiter with this field only; with a token if a release
    /// handed it the lock.
    Named(&'a str, Option<u64>),
    /// Permits are available: up to this many waiters.
    UpTo(u64),
    /// Every waiter (a latch opened; a semaphore message that is not a number, which neither
    /// relock nor Redisson sends).
    All,
    /// Nobody (a latch's count was set: nobody can pass yet).
    Nobody,
}

/// Reads a message on a channel whose messages mean what `kind` says: any text is some
/// delivery (at most every waiter).
pub(crate) fn read_message(kind: Wake, payload: &str) -> Delivery<'_> {
    match kind {
        Wake::Release | Wake::ReleaseOrShared if payload == "1" => Delivery::Shortened,
        Wake::Release | Wake::ReleaseOrShared if payload.contains(':') => {
            let (field, token) = parse_named(payload);
            Delivery::Named(field, token)
        }
        Wake::Release | Wake::ReleaseOrShared => Delivery::One,
        // The new count of available permits.
        Wake::Count => match payload.trim().parse::<i64>() {
            Ok(available) => Delivery::UpTo(available.max(0) as u64),
            Err(_) => Delivery::All,
        },
        Wake::Opened if payload == "1" => Delivery::Nobody,
        Wake::Opened => Delivery::All,
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

    /// Routes messages that name `field` (a fair waiter's owner field) to `wake`; the token
    /// of a handoff message goes to `granted`.
    pub(crate) fn name_waiter(
        &self,
        field: &str,
        wake: Arc<Notify>,
        granted: Arc<AtomicU64>,
    ) -> Named {
        let mut named = self.channel.named.lock().unwrap();
        named
            .entry(field.to_string())
            .or_insert((wake, granted, 0))
            .2 += 1;
        Named {
            channel: self.channel.clone(),
            field: field.to_string(),
        }
    }

    /// A semaphore waiter woken for permits that were too few for it: passes the wake-up on
    /// to the next local waiter (who may want fewer), at most once per message received, so
    /// that waiters who all want more than there is cannot hand it round for ever.
    /// `passed` is the waiter's own record of the last message it passed on.
    pub(crate) fn pass_on(&self, passed: &mut u64) {
        let seen = self
            .channel
            .messages
            .load(std::sync::atomic::Ordering::SeqCst);
        if seen != *passed {
            *passed = seen;
            self.channel.notify.notify_one();
        }
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

/// A fair lock's message: `<field>` (come and take it) or `<field>=<token>` (a release handed
/// you the lock; this is its token). A field is `<client_id>:<n>`, so it never ends in
/// `=<digits>` itself.
pub(crate) fn parse_named(payload: &str) -> (&str, Option<u64>) {
    match payload.rsplit_once('=') {
        // Only a token as the scripts write it (digits, no leading zero or sign): the text
        // then names exactly one token.
        Some((field, token)) => match token.parse::<u64>() {
            Ok(t)
                if t > 0
                    && token.bytes().all(|b| b.is_ascii_digit())
                    && !token.starts_with('0') =>
            {
                (field, Some(t))
            }
            _ => (payload, None),
        },
        None => (payload, None),
    }
}

/// The channel a waiter subscribes to for `channel`'s releases: `channel` itself, unless a
/// chaos mutant (`relock::mutant`) breaks that.
pub(crate) fn mutated_channel(channel: &str) -> std::borrow::Cow<'_, str> {
    crate::seam::channel(channel)
}

#[cfg(test)]
mod tests {
    use super::parse_named;

    #[test]
    fn a_handoff_message_carries_a_token_and_a_plain_one_does_not() {
        assert_eq!(
            parse_named("c1:42=1795436615140171"),
            ("c1:42", Some(1795436615140171))
        );
        assert_eq!(parse_named("0:0=01"), ("0:0=01", None));
        assert_eq!(parse_named("c1:42=+7"), ("c1:42=+7", None));
        assert_eq!(parse_named("c1:42"), ("c1:42", None));
        // A client id with '=' in it: a field ends in ":<n>", never in "=<digits>".
        assert_eq!(parse_named("a=b:7"), ("a=b:7", None));
        assert_eq!(parse_named("a=b:7=99"), ("a=b:7", Some(99)));
        assert_eq!(parse_named("c1:42=x"), ("c1:42=x", None));
        assert_eq!(parse_named("c1:42=0"), ("c1:42=0", None));
    }
}
