//! The messages of the fair lock's own channel (`relock_fair_channel:{name}`), which its
//! line's waiters listen on. Not Redisson's lock channel: a Redisson `RLock` waiter of the
//! same name reads that channel's messages as numbers, and logs an error for anything else.
//!
//! - `<field>`: for the one waiter with that owner field (you are first in line: come and take
//!   it), on whichever client it is; `<field>=<token>`: a release handed it the lock, with this
//!   fencing token. A field is `<client_id>:<n>`, so it contains a `:` and never ends in
//!   `=<digits>` itself. A field no local waiter has wakes nobody here.
//! - `1`: every waiter looks again; any other text (`0`): one waiter does.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::client::pubsub::Subscription;
use crate::hold::wake::{Format, Waiters, Waking};

/// The fair channel's format.
pub(crate) static FAIR_CHANNEL: Format = Format::new("fair", || Arc::new(FairChannel::default()));

/// One fair channel's state: the fair waiters on this client, by owner field.
#[derive(Debug, Default)]
pub(crate) struct FairChannel {
    named: Mutex<HashMap<String, NamedWaiter>>,
}

/// A fair waiter registered under its owner field: (its wake-up, where a handoff's token
/// goes, how many registrations).
type NamedWaiter = (Arc<Notify>, Arc<AtomicU64>, usize);

/// What one message on a fair lock's channel says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Message<'a> {
    /// A holder released: one waiter, and the holder's lease is over.
    Released,
    /// The lease is now shorter than waiters read: every waiter looks again.
    Shortened,
    /// For the fair waiter with this field only; with a token if a release handed it the lock.
    Named(&'a str, Option<u64>),
}

/// Reads one message: any text is one of the three.
pub(crate) fn read(payload: &str) -> Message<'_> {
    if payload == "1" {
        Message::Shortened
    } else if payload.contains(':') {
        let (field, token) = parse_named(payload);
        Message::Named(field, token)
    } else {
        Message::Released
    }
}

/// A fair lock's message: `<field>` (come and take it) or `<field>=<token>` (a release handed
/// you the lock; this is its token).
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

impl Waking for FairChannel {
    fn deliver(&self, payload: &str, waiters: &dyn Waiters) {
        match read(payload) {
            Message::Released => waiters.one(),
            Message::Shortened => waiters.all(true),
            Message::Named(field, token) => {
                // Wake it if it is ours. A handoff also tells it that it holds the lock, with
                // its token.
                if let Some((wake, granted, _)) = self.named.lock().unwrap().get(field) {
                    if let Some(token) = token {
                        granted.store(token, Ordering::SeqCst);
                    }
                    waiters.woke_own();
                    wake.notify_one();
                }
            }
        }
    }

    fn wake_all(&self) {
        for (wake, _, _) in self.named.lock().unwrap().values() {
            wake.notify_one();
        }
    }
}

/// A fair waiter's registration for messages that name it; undone on drop.
#[derive(Debug)]
pub(crate) struct Named {
    channel: Arc<dyn Waking>,
    field: String,
}

/// Routes messages on `sub`'s channel that name `field` (a fair waiter's owner field) to
/// `wake`; the token of a handoff message goes to `granted`.
pub(crate) fn name_waiter(
    sub: &Subscription,
    field: &str,
    wake: Arc<Notify>,
    granted: Arc<AtomicU64>,
) -> Named {
    let channel = sub.waking_shared();
    if let Some(c) = fair_channel(&channel) {
        c.named
            .lock()
            .unwrap()
            .entry(field.to_string())
            .or_insert((wake, granted, 0))
            .2 += 1;
    }
    Named {
        channel,
        field: field.to_string(),
    }
}

/// The fair channel's state behind a channel's `dyn Waking`: `None` for a channel of another
/// format (never for a fair lock's channel, whose name no other kind uses).
fn fair_channel(channel: &Arc<dyn Waking>) -> Option<&FairChannel> {
    (**channel).as_any().downcast_ref::<FairChannel>()
}

impl Drop for Named {
    fn drop(&mut self) {
        let Some(c) = fair_channel(&self.channel) else {
            return;
        };
        let mut named = c.named.lock().unwrap();
        if let Some((_, _, n)) = named.get_mut(&self.field) {
            *n -= 1;
            if *n == 0 {
                named.remove(&self.field);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_named, read, Message};

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

    #[test]
    fn a_release_a_shortened_lease_and_a_named_waiter_read_apart() {
        assert_eq!(read("0"), Message::Released);
        assert_eq!(read(""), Message::Released);
        assert_eq!(read("1"), Message::Shortened);
        assert_eq!(read("c:1=7"), Message::Named("c:1", Some(7)));
        assert_eq!(read("c:1"), Message::Named("c:1", None));
    }
}
