//! **The quorum: Redlock over N independent masters.**
//!
//! - `client` and `builder`: [`QuorumClient`](crate::QuorumClient) and
//!   [`QuorumClientBuilder`](crate::QuorumClientBuilder).
//! - `inner`: `QuorumInner`: one one-server client per master, the restart quarantine,
//!   release everywhere, reconnects; `inner_backend`: `QuorumInner` as the quorum
//!   [`Backend`](crate::hold::backend::Backend) (a guard's release, renewal on every node).
//! - `node`: one master (its connection set, replaced, never reconnected; when it may vote).
//! - `race`: a call per node, counted as answers come, each run to its end.
//! - `in_flight`: the votes and re-entries a node has been sent and not answered, which a
//!   release of their field on that node waits for (`Script::run_tracked`'s `Tracker`).
//! - `kind`: the quorum lock's holds as a [`HoldKind`](crate::hold::kind::HoldKind) (how a
//!   node's field is released and renewed, which channel format wakes its waiters).
//! - `lock`: [`QuorumLock`](crate::QuorumLock), its acquire, wait loop and queries; `vote`: one
//!   Redlock attempt (votes, validity, release on failure, token write-back).
//! - `watch`: a quorum hold listens on every master and is lost once a majority lacks it;
//!   `channel`: how a lock channel's messages wake the quorum's waiters on each node.
//! - `scripts`: the quorum's own scripts (fence, release, renew and put-back on one node).
//!
//! It uses the client room (one client per master) and the hold room.

pub(crate) mod builder;
pub(crate) mod channel;
pub(crate) mod client;
#[cfg(test)]
mod decode_prop;
pub(crate) mod in_flight;
pub(crate) mod inner;
pub(crate) mod inner_backend;
pub(crate) mod kind;
pub(crate) mod lock;
pub(crate) mod node;
pub(crate) mod race;
pub(crate) mod scripts;
pub(crate) mod vote;
pub(crate) mod watch;
