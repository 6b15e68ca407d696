//! **Kinds built on the exclusive kinds, for coordinating a fleet,** and what reads across
//! kinds. Each kind is one file; the room uses the exclusive, counting, client and hold rooms and
//! nothing uses it.
//!
//! - `job`: [`Job`](crate::Job), run-at-most-once jobs (ShedLock's model): every node's
//!   scheduler fires, one runs the occurrence, the others skip; `at_most_for` caps a run and a
//!   crashed node's hold, `at_least_for` keeps the lock after an early finish.
//! - `election/`: [`Election`](crate::Election), leader election on the fair lock: campaign in
//!   its line, a term (the hold's fencing token), a value, resign, observe. One file per part
//!   (its `mod.rs` is the guide): `handle` (the election), `leadership` (the guard of a term),
//!   `leaderships` (this client's, renewed and resigned at shutdown), `observe` (the stream of
//!   changes), `record` (the record on the server and its scripts).
//! - `fenced`: [`FencedKey`](crate::FencedKey), a value that refuses a write under a fencing
//!   token lower than one it has accepted, for data a guarded write cannot reach.
//! - `inspect`: [`Client::inspect`](crate::Client::inspect), what kind and count is under a
//!   name: a lock's status (read by the exclusive room), a count (read by the counting room).

#[cfg(test)]
mod decode_prop;
pub(crate) mod election;
pub(crate) mod fenced;
pub(crate) mod inspect;
pub(crate) mod job;
