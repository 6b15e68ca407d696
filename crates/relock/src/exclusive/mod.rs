//! **The exclusive kinds: one holder at a time (or many readers).**
//!
//! Each kind's file implements, for its holds, the hold room's `HoldKind` (its release and
//! renewal calls, its wake-ups, its re-entry) and this room's `AcquireCall` (its acquire
//! script and how to read the reply):
//!
//! - `lock`: [`Lock`](crate::Lock): the handle (the plain lock, or a `Variant` it carries),
//!   the plain wait loop, queries, `force_unlock`; `Client::lock`; the plain holds' kind
//!   (`PLAIN`).
//! - `fair/`: the fair lock, a [`Lock`](crate::Lock) variant in a folder of its own (its
//!   keys, attempt and reply, wait loop, channel format, line, heartbeats and setting).
//! - `spin/`: the spin lock, a [`Lock`](crate::Lock) variant in a folder of its own (its
//!   hold kind, whose release publishes nothing; its polling wait; its back-off setting).
//! - `rwlock`: [`ReadWriteLock`](crate::ReadWriteLock), its two sides and their kinds.
//! - `channel`: the lock channel's message format (`0` one waiter, `1` all), shared by the
//!   kinds here that listen on a lock's channel (the fair lock's waiters have their own).
//! - `coalesce`: the plain lock's acquires and releases as the client's batcher may send
//!   them together (`batch.lua`, its tags and how a reply's part is read).
//! - `hash_field_holds`: what the kinds whose holds are one field of the lock's hash share (their
//!   renewal call).
//! - `acquire`: the acquire every kind here shares (checks, re-entry or fresh as the kind
//!   plans it, the span), written once; the kind gives its plan and its wait.
//! - `attempt`: one acquire script call for a fresh hold, as the kind's `AcquireCall` says
//!   (`PlainCall`, `FairCall`, `SideCall`, each in its kind's file), run to its end whatever its caller
//!   does; `clean_up`: the release of a grant it will not keep (outcome unknown, or refused);
//!   `wait`: the start of every wait (first attempts, then the subscription).
//! - `queries`: what every exclusive kind answers the same way (`is_locked`, `force_unlock`,
//!   `resource`, its keys or its name's error).
//! - `multilock`: [`MultiLock`](crate::MultiLock), all or nothing over any kinds.
//! - `status`: [`Lock::status`](crate::Lock::status), one read-only script for operators.
//!
//! It uses the client and hold rooms; nothing below uses it.

pub(crate) mod acquire;
pub(crate) mod attempt;
pub(crate) mod channel;
pub(crate) mod clean_up;
pub(crate) mod coalesce;
#[cfg(test)]
mod decode_prop;
pub(crate) mod fair;
pub(crate) mod hash_field_holds;
pub(crate) mod lock;
pub(crate) mod multilock;
pub(crate) mod queries;
pub(crate) mod rwlock;
pub(crate) mod spin;
pub(crate) mod status;
#[cfg(test)]
mod toy_ticket;
pub(crate) mod wait;
