//! [`Election`]: leader election on the fair lock (etcd's `Election`, Curator's
//! `LeaderLatch`, on Redis).
//!
//! The leadership is a hold of the fair lock named after the election: candidates wait in its
//! line (first come, first served), a resignation hands it straight to the first of them (the
//! fair lock's direct handoff), the watchdog renews it, and its fencing token is the **term**.
//! Beside the lock, a record (`relock_election:{name}`, a hash) says which hold is the leader
//! and its value; it lives as long as the lock (renewed in the watchdog's round through this
//! kind's client state) and is only ever written by the hold that holds the lock. Changes are
//! published on `relock_election_channel:{name}`; observers re-read the record on each message,
//! after a reconnect, and when the leader's lease would end, so they never miss the last state.
//!
//! One file per part, as `tokio::sync::rwlock`'s guards:
//! - `handle`: [`Election`], `Client::election`, the current leader, a value stated on the
//!   record.
//! - `leadership`: [`Leadership`], the guard of a term, and the campaigns that make it; its
//!   resignation (by the holder, or in the background when it is dropped).
//! - `leaderships`: this client's leaderships (`Leaderships`, the election's per-client
//!   state): their records renewed in the watchdog's round and resigned at shutdown.
//! - `observe`: [`Observation`], the stream of [`LeaderEvent`]s.
//! - `record`: the record and its channel (names, scripts), [`Leader`] and what a read of
//!   the record says, a leadership's part in it (`Led`).

pub(crate) mod handle;
pub(crate) mod leadership;
pub(crate) mod leaderships;
pub(crate) mod observe;
pub(crate) mod record;

pub use handle::Election;
pub use leadership::Leadership;
pub use observe::{LeaderEvent, Observation};
pub(crate) use record::lua;
pub use record::Leader;
