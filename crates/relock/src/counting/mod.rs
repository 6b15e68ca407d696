//! **The counting kinds: Redisson's semaphores, latch and rate limiter.**
//!
//! - `semaphore` and `semaphore_permits`: [`Semaphore`](crate::Semaphore) (`RSemaphore`) and
//!   [`SemaphorePermits`](crate::SemaphorePermits), the permits one acquire took, given back
//!   on drop (and by shutdown: `Outstanding`); `semaphore_request`: an acquire's script, the
//!   give-back of what an abandoned request took, and the requests whose attempt got no reply
//!   (`Unsettled`, given back by shutdown).
//! - `permit_semaphore`, `permit_guard` and `permit_leases`: [`PermitSemaphore`](crate::PermitSemaphore)
//!   (`RPermitExpirableSemaphore`: acquire by id, counts), [`PermitGuard`](crate::PermitGuard)
//!   (release, renewal) and the permits a client's guards hold (`Leases`, their per-client
//!   state, with its shutdown step: give them back).
//! - `latch`: [`CountDownLatch`](crate::CountDownLatch) (`RCountDownLatch`).
//! - `rate_limiter` (a folder: its settings, its calls, its wait):
//!   [`RateLimiter`](crate::RateLimiter) (`RRateLimiter`), on the server's clock; it
//!   publishes nothing and waits by sleeping the delay its script returns.
//! - `reading`: the count under a name, read only (for `Client::inspect`).
//!
//! What they share, one file per job:
//! - `counts`: count arguments (their limit and check), a count read with `GET`, a reply of
//!   an unexpected shape; `add`: the add script both semaphores send, and its reply.
//! - `names`: a semaphore's or latch's key and channel, and the script calls that publish on
//!   it; `request`: a call sent again after a transient error (once-only under a request id,
//!   or a harmless repeat).
//! - `wait`: the one wait (a check, the subscription, parks bounded by a backing-off
//!   re-check); `channel`: their channels' message formats (a count wakes up to that many
//!   waiters, and is passed on at most once per message; a latch's opening wakes all).
//!
//! It uses the client and hold rooms; nothing below uses it.

pub(crate) mod add;
pub(crate) mod channel;
pub(crate) mod counts;
#[cfg(test)]
mod decode_prop;
pub(crate) mod latch;
pub(crate) mod names;
pub(crate) mod permit_guard;
pub(crate) mod permit_leases;
pub(crate) mod permit_semaphore;
pub(crate) mod rate_limiter;
pub(crate) mod reading;
pub(crate) mod request;
pub(crate) mod semaphore;
pub(crate) mod semaphore_permits;
pub(crate) mod semaphore_request;
#[cfg(test)]
mod toy_rate;
pub(crate) mod wait;
