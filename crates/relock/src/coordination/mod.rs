//! **Kinds built on the exclusive kinds, for coordinating a fleet.** Each file is one kind; the
//! room uses the exclusive, client and hold rooms and nothing uses it.
//!
//! - `job`: [`Job`](crate::Job), run-at-most-once jobs (ShedLock's model): every node's
//!   scheduler fires, one runs the occurrence, the others skip; `at_most_for` caps a run and a
//!   crashed node's hold, `at_least_for` keeps the lock after an early finish.
//! - `election`: [`Election`](crate::Election), leader election on the fair lock: campaign in
//!   its line, a term (the hold's fencing token), a value, resign, observe.

pub(crate) mod election;
pub(crate) mod job;
