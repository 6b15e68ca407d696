//! The messages of a lock's channel (Redisson's `redisson_lock__channel:{name}`, and the
//! read-write lock's `redisson_rwlock__channel:{name}`), shared by every kind here that uses
//! one.
//!
//! - `0` (any text without `:`): a holder released; one local waiter looks again.
//! - `1`: the lock now ends sooner than waiters read (a job's kept lock), or a writer left a
//!   read-write lock: every waiter looks again, as Redisson's waiters do.
//! - Text with a `:` (a fair waiter's field, which only the fair lock's own channel carries):
//!   nobody.

use std::sync::Arc;

use crate::hold::wake::{Format, Waiters, Waking};

/// The lock channel's format.
pub(crate) static LOCK_CHANNEL: Format = Format::new("lock", || Arc::new(LockChannel));

/// One lock channel's state: none.
#[derive(Debug, Default)]
pub(crate) struct LockChannel;

/// What one message on a lock's channel says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Message {
    /// A holder released: one waiter, and the holder's lease is over.
    Released,
    /// The lease is now shorter than waiters read: every waiter looks again.
    Shortened,
    /// Not for this channel's waiters.
    Other,
}

/// Reads one message: any text is one of the three.
pub(crate) fn read(payload: &str) -> Message {
    if payload == "1" {
        Message::Shortened
    } else if payload.contains(':') {
        Message::Other
    } else {
        Message::Released
    }
}

impl Waking for LockChannel {
    fn deliver(&self, payload: &str, waiters: &dyn Waiters) {
        match read(payload) {
            Message::Released => waiters.one(),
            Message::Shortened => waiters.all(true),
            Message::Other => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{read, Message};

    #[test]
    fn a_release_and_a_shortened_lease_read_apart() {
        assert_eq!(read("0"), Message::Released);
        assert_eq!(read(""), Message::Released);
        assert_eq!(read("1"), Message::Shortened);
        assert_eq!(read("c:1=7"), Message::Other);
    }
}
