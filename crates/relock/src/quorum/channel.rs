//! The messages of a lock's channel on each node, as the quorum lock reads them: `1` (the
//! lease is now shorter than waiters read) wakes every waiter, a message naming a waiter
//! (`<field>`, with a `:`; the fair lock's, which no quorum lock sends) none, and any other
//! (a release, `0`) one.

use std::sync::Arc;

use crate::hold::wake::{Format, Waiters, Waking};

/// The quorum lock's channel format, on each node's own subscriber.
pub(crate) static QUORUM_CHANNEL: Format = Format::new("quorum", || Arc::new(QuorumChannel));

/// A quorum lock's channel on one node: no state.
#[derive(Debug, Default)]
pub(crate) struct QuorumChannel;

impl Waking for QuorumChannel {
    fn deliver(&self, payload: &str, waiters: &dyn Waiters) {
        if payload == "1" {
            waiters.all(true);
        } else if !payload.contains(':') {
            waiters.one();
        }
    }
}
