//! **The counting kinds: Redisson's semaphores and latch.**
//!
//! - `semaphore`: [`Semaphore`](crate::Semaphore) (`RSemaphore`).
//! - `permits`, `permit_guard` and `permit_leases`: [`PermitSemaphore`](crate::PermitSemaphore)
//!   (`RPermitExpirableSemaphore`: acquire by id, counts), [`PermitGuard`](crate::PermitGuard)
//!   (release, renewal) and the permits a client's guards hold (`Leases`, their per-client
//!   state, with its shutdown step: give them back).
//! - `latch`: [`CountDownLatch`](crate::CountDownLatch) (`RCountDownLatch`).
//! - `common`: what they share: count arguments and replies, request ids, one wait.
//!
//! It uses the client and hold rooms; nothing below uses it.

pub(crate) mod common;
pub(crate) mod latch;
pub(crate) mod permit_guard;
pub(crate) mod permit_leases;
pub(crate) mod permits;
pub(crate) mod semaphore;
