//! **The counting kinds: Redisson's semaphores and latch.**
//!
//! - `semaphore` and `semaphore_permits`: [`Semaphore`](crate::Semaphore) (`RSemaphore`) and
//!   [`SemaphorePermits`](crate::SemaphorePermits), the permits one acquire took, given back
//!   on drop (and by shutdown: `Outstanding`); `semaphore_request`: an acquire's script, the
//!   give-back of what an abandoned request took, and the requests whose attempt got no reply
//!   (`Unsettled`, given back by shutdown).
//! - `permits`, `permit_guard` and `permit_leases`: [`PermitSemaphore`](crate::PermitSemaphore)
//!   (`RPermitExpirableSemaphore`: acquire by id, counts), [`PermitGuard`](crate::PermitGuard)
//!   (release, renewal) and the permits a client's guards hold (`Leases`, their per-client
//!   state, with its shutdown step: give them back).
//! - `latch`: [`CountDownLatch`](crate::CountDownLatch) (`RCountDownLatch`).
//! - `reading`: the count under a name, read only (for `Client::inspect`).
//! - `common`: what they share: count arguments and replies, request ids, one wait;
//!   `channel`: their channels' message formats (a count wakes up to that many waiters, and
//!   is passed on at most once per message; a latch's opening wakes all).
//!
//! It uses the client and hold rooms; nothing below uses it.

pub(crate) mod channel;
pub(crate) mod common;
#[cfg(test)]
mod decode_prop;
pub(crate) mod latch;
pub(crate) mod permit_guard;
pub(crate) mod permit_leases;
pub(crate) mod permits;
pub(crate) mod reading;
pub(crate) mod semaphore;
pub(crate) mod semaphore_permits;
pub(crate) mod semaphore_request;
#[cfg(test)]
mod toy_rate;
