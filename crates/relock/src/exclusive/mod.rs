//! **The exclusive kinds: one holder at a time (or many readers).**
//!
//! - `lock`: [`Lock`](crate::Lock), plain and fair: the handle, the plain wait loop, queries,
//!   `force_unlock`; `Client::lock` and `Client::fair_lock`.
//! - `fair` and `fair_line`: the fair wait loop, the waiters' heartbeats, and this client's
//!   waiters in lines (the fair lock's per-client state, with its shutdown step).
//! - `rwlock`: [`ReadWriteLock`](crate::ReadWriteLock) and its two sides.
//! - `acquire`: the acquire every kind here shares (checks, re-entry or fresh as the kind
//!   plans it, the span), written once; the kind gives its plan and its wait.
//! - `attempt`: one acquire script call for a fresh hold, as the kind's `AcquireCall` says
//!   (`PlainCall`, `FairCall`, `SideCall`, each in its kind's file), run to its end whatever its caller
//!   does; `clean_up`: the release of a grant it will not keep (outcome unknown, or refused);
//!   `wait`: the start of every wait (first attempts, then the subscription).
//! - `multilock`: [`MultiLock`](crate::MultiLock), all or nothing over any kinds.
//! - `status`: [`Lock::status`](crate::Lock::status), one read-only script for operators.
//!
//! It uses the client and hold rooms; nothing below uses it.

pub(crate) mod acquire;
pub(crate) mod attempt;
pub(crate) mod clean_up;
pub(crate) mod fair;
pub(crate) mod fair_line;
pub(crate) mod lock;
pub(crate) mod multilock;
pub(crate) mod rwlock;
pub(crate) mod status;
pub(crate) mod wait;
