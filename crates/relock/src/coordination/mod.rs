//! **Kinds built on the exclusive kinds, for coordinating a fleet.** Each file is one kind; the
//! room uses the exclusive, client and hold rooms and nothing uses it.
//!
//! - `job`: [`Job`](crate::Job), run-at-most-once jobs (ShedLock's model): every node's
//!   scheduler fires, one runs the occurrence, the others skip; `at_most_for` caps a run and a
//!   crashed node's hold, `at_least_for` keeps the lock after an early finish.

pub(crate) mod job;
