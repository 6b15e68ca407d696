//! How a channel's messages wake the client's waiters: the contract between a kind's message
//! format and the dispatcher (`client::pubsub`), which subscribes, delivers bytes and knows no
//! format.
//!
//! A kind describes its channel's messages with a [`Format`] (a `static` in the kind's own
//! file) and passes it when it subscribes. The channel's first local subscriber makes the
//! format's per-channel state ([`Waking`]), which then reads every message on that channel
//! and wakes the channel's waiters through [`Waiters`], or waiters it keeps itself. A kind
//! reaches its own state through its subscription (`Subscription::waking`).
//!
//! The ticket toy (`exclusive/toy_ticket.rs`, compiled for tests) is a whole kind with a
//! format of its own.

use std::fmt;
use std::sync::Arc;

use crate::hold::any::AsAny;

/// A channel's state for one message format: reads each message and decides whom it wakes.
/// Made once per subscribed channel, by the format of its first local subscriber.
pub(crate) trait Waking: AsAny + fmt::Debug + Send + Sync {
    /// Routes one message to the waiters it is for. `payload` is the message as text (empty
    /// if it was not text); any text must lead to some delivery or none, never a panic.
    fn deliver(&self, payload: &str, waiters: &dyn Waiters);

    /// Messages may have been lost (a reconnect, a lagging receiver): wakes every waiter the
    /// format keeps apart from the channel's own (those the dispatcher wakes itself).
    fn wake_all(&self) {}
}

/// The channel's own waiters, as a format's [`Waking::deliver`] wakes them.
pub(crate) trait Waiters {
    /// A holder released: wakes one waiter (kept for the next to wait if none waits now), and
    /// forgets the holder's lease that a waiter last reported.
    fn one(&self);

    /// Wakes every waiter now waiting; with `released`, also forgets the holder's lease that a
    /// waiter last reported (the lock now ends sooner, or is free).
    fn all(&self, released: bool);

    /// Wakes up to `n` waiters, and no more than use the channel.
    fn up_to(&self, n: u64);

    /// Records a wake-up the format made itself, of a waiter it keeps (for the metrics).
    fn woke_own(&self);
}

/// A kind's message format: its name (two formats never share a channel: each kind's channel
/// names have their own prefix) and how a channel's [`Waking`] state is made.
#[derive(Clone, Copy)]
pub(crate) struct Format {
    name: &'static str,
    new: fn() -> Arc<dyn Waking>,
}

impl Format {
    pub(crate) const fn new(name: &'static str, new: fn() -> Arc<dyn Waking>) -> Self {
        Format { name, new }
    }

    /// A new channel's state.
    pub(crate) fn make(&self) -> Arc<dyn Waking> {
        (self.new)()
    }
}

impl fmt::Debug for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Format").field(&self.name).finish()
    }
}

impl PartialEq for Format {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}
