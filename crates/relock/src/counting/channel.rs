//! The messages of the counting kinds' channels.
//!
//! - A semaphore's channel (Redisson's `redisson_sc:{name}`, also the permit-expirable
//!   semaphore's): the message is the number of permits available now, `k`; it wakes up to `k`
//!   local waiters. A message that is not a number (neither relock nor Redisson sends one)
//!   wakes every waiter. A waiter woken for too few permits passes the wake-up on
//!   ([`pass_on`]), at most once per message.
//! - A latch's channel (`redisson_countdownlatch__channel__{name}`): `0` (opened) wakes every
//!   waiter, `1` (a count was set: nobody can pass yet) none.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::client::pubsub::Subscription;
use crate::hold::wake::{Format, Waiters, Waking};

/// A semaphore's channel format.
pub(crate) static COUNT_CHANNEL: Format =
    Format::new("count", || Arc::new(CountChannel::default()));

/// A latch's channel format.
pub(crate) static LATCH_CHANNEL: Format = Format::new("latch", || Arc::new(LatchChannel));

/// One semaphore channel's state: the messages received so far, so that a wake-up is passed
/// on at most once per message.
#[derive(Debug, Default)]
pub(crate) struct CountChannel {
    messages: AtomicU64,
}

/// What one message on a semaphore's channel says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Count {
    /// Permits are available: up to this many waiters.
    Available(u64),
    /// Not a number: every waiter looks.
    Unreadable,
}

/// Reads one message on a semaphore's channel.
pub(crate) fn read_count(payload: &str) -> Count {
    match payload.trim().parse::<i64>() {
        Ok(available) => Count::Available(available.max(0) as u64),
        Err(_) => Count::Unreadable,
    }
}

impl Waking for CountChannel {
    fn deliver(&self, payload: &str, waiters: &dyn Waiters) {
        self.messages.fetch_add(1, Ordering::SeqCst);
        match read_count(payload) {
            // As many local waiters as could take one, and no more (a waiter that wants
            // several and finds too few parks again).
            Count::Available(k) => waiters.up_to(k),
            Count::Unreadable => waiters.all(false),
        }
    }
}

/// A semaphore waiter woken for permits that were too few for it: passes the wake-up on to
/// the next local waiter (who may want fewer), at most once per message received, so that
/// waiters who all want more than there is cannot hand it round for ever. `passed` is the
/// waiter's own record of the last message it passed on.
pub(crate) fn pass_on(sub: &Subscription, passed: &mut u64) {
    let Some(channel) = sub.waking::<CountChannel>() else {
        return;
    };
    let seen = channel.messages.load(Ordering::SeqCst);
    if seen != *passed {
        *passed = seen;
        sub.wake_next();
    }
}

/// A latch's channel: no state.
#[derive(Debug, Default)]
pub(crate) struct LatchChannel;

/// Whether a message on a latch's channel opens it (every waiter looks), or sets a count.
pub(crate) fn read_opened(payload: &str) -> bool {
    payload != "1"
}

impl Waking for LatchChannel {
    fn deliver(&self, payload: &str, waiters: &dyn Waiters) {
        if read_opened(payload) {
            waiters.all(false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{read_count, read_opened, Count};

    #[test]
    fn a_count_message_wakes_as_many_as_it_says_and_garbage_wakes_all() {
        assert_eq!(read_count("3"), Count::Available(3));
        assert_eq!(read_count(" 2 "), Count::Available(2));
        assert_eq!(read_count("-5"), Count::Available(0));
        assert_eq!(read_count(" 99999999999999999999 "), Count::Unreadable);
        assert_eq!(read_count("x"), Count::Unreadable);
        assert!(read_opened("0"));
        assert!(!read_opened("1"));
    }
}
