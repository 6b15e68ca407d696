//! Distributed locks on Redis for tokio: exclusive like `tokio::sync::Mutex`, re-entrant inside a
//! hold's scope, renewed by a watchdog, woken by pub/sub, fenced by strictly increasing tokens,
//! and wire-compatible with Redisson's `RLock`.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
//! # if std::env::var_os("RELOCK_DOCTEST_URL").is_none() { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) }
//! use std::time::Duration;
//!
//! let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
//! let client = relock::Client::connect(&url).await?;
//! let lock = client.lock("invoices:7");
//!
//! let guard = lock.lock().await?;               // waits; the watchdog renews the lease
//! let token = guard.fencing_token();            // send it with your writes
//! guard.scope(async {
//!     let nested = lock.lock().await?;          // re-enters: same hold, same token
//!     assert_eq!(nested.fencing_token(), token);
//!     nested.unlock().await
//! }).await?;
//! guard.unlock().await?;                        // or just drop the guard
//! # assert!(!lock.is_locked().await?);
//!
//! if let Some(guard) = lock.try_lock_for(Duration::from_secs(3)).await? {
//!     tokio::select! {
//!         _ = guard.lost() => eprintln!("lease lost: stop writing"),
//!         _ = tokio::time::sleep(Duration::from_millis(10)) => {}
//!     }
//! }
//! client.shutdown().await;                      // releases what it still holds
//! # assert!(!relock::Client::connect(&url).await?.lock("invoices:7").is_locked().await?);
//! # Ok(()) }
//! ```
//!
//! # Which lock should you use?
//! - [`Lock`] (`client.lock(name)`): one Redis server (or a Cluster, or Sentinel), mutual
//!   exclusion between processes and between futures. Not fair: any waiter may win.
//! - A fair lock (`client.fair_lock(name)`, the same [`Lock`] type and guard): first come,
//!   first served across all clients; each release wakes only the next in line, and a waiter
//!   that dies stops holding up the line after its heartbeat deadline (5 s).
//! - A spin lock (`client.spin_lock(name)`, the same [`Lock`] type and guard): the plain lock
//!   without pub/sub (Redisson's `RSpinLock`): waiters poll with back-off ([`SpinBackoff`])
//!   and a release publishes nothing; for fleets where release messages cost too much, or
//!   servers without pub/sub. A waiter learns of a release at its next poll.
//! - [`QuorumLock`] ([`QuorumClient`]`::lock(name)`): Redlock over N independent masters, held
//!   while a majority granted it; survives a minority of masters down. Same guard.
//! - [`ReadWriteLock`] (`client.read_write_lock(name)`): many readers or one writer
//!   (Redisson's `RReadWriteLock`); a writer may downgrade, a reader cannot upgrade.
//! - [`Semaphore`] (`client.semaphore(name)`) and [`CountDownLatch`]
//!   (`client.count_down_latch(name)`): Redisson's `RSemaphore` and `RCountDownLatch`.
//! - [`RateLimiter`] (`client.rate_limiter(name)`): at most a rate of permits in any interval,
//!   across every client or per client (Redisson's `RRateLimiter`), on the server's clock.
//! - [`MultiLock`]: all or nothing over several locks of any kinds and clients, in one global
//!   order (no deadlock), with one guard.
//! - A lease-based lock cannot promise mutual exclusion through process pauses or clock jumps;
//!   if correctness depends on it, have the protected resource check
//!   [`LockGuard::fencing_token`]. [`guide::safety`] says exactly what is and is not
//!   promised; [`guide::operations`] how to run relock (URLs, TLS, credentials, ACLs,
//!   timeouts, logs, metrics, clean exits), [`guide::data_layout`] what it keeps in Redis.
//!
//! # Who holds a lock, and when `lock()` re-enters
//! Every `lock()` outside a scope is a fresh acquisition and waits for any other holder, also a
//! future of the same task (`join!`, `select!`, `FuturesUnordered`), as with
//! `tokio::sync::Mutex`. Re-entry is explicit: inside [`LockGuard::scope`] or [`Lock::with`]
//! (nested calls re-enter the hold), or inside [`Owner::scope`] (an explicit owner, across
//! tasks). [`Reentrancy::PerTask`] opts into Redisson's implicit per-task re-entry, with its
//! hazard. On the server every hold has its own field, so nothing that belongs to one hold
//! (a late release, a renewal, a clean-up) can affect another:
//! [`guide::safety`](crate::guide::safety#one-hold-one-identity-nothing-but-a-hold-can-end-shorten-or-resurrect-it).

#![forbid(unsafe_code)]
#![deny(rust_2018_idioms, rustdoc::broken_intra_doc_links)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

// # Layout (for contributors; not on the crate's page)
// The crate is in rooms, one folder per layer; a room uses the rooms below it and never one
// beside or above it (the test `tests/layers` fails otherwise). Each room's `mod.rs` is its guide.
// - the crate root: `error` (`Error`), `script` (a script as data), `seam` (the chaos
//   harness's hooks).
// - `hold`: what a client holds, with no Redis in it: holds, the `Backend` trait, the
//   `HoldKind` trait (what a lock kind tells the shared code about its holds), the guard, the
//   watchdog's loop, re-entry, owners, run-to-end, the acquiring methods
//   (`DistributedLock`), key names.
// - `client`: one Redis deployment: `Client` (`handle`) and its builder, `Inner` (what every
//   clone shares), fred's start, errors and redaction, scripts, pub/sub, coalescing, the
//   one-server backend (`inner_backend`), the hold watch. Kinds keep their per-client state
//   through `Inner::state` and register their own shutdown step.
// - `exclusive`: `Lock` (plain, fair and spin), `ReadWriteLock`, `MultiLock`, status.
// - `counting`: `Semaphore`, `PermitSemaphore`, `CountDownLatch`, `RateLimiter`.
// - `quorum`: `QuorumClient` and `QuorumLock`.
// - `coordination`: kinds built on the exclusive ones: `Job` (run-at-most-once jobs),
//   `Election` (leader election); `Client::inspect` (what is under a name, any kind).
//
// The repository's `docs/architecture.md` has the map and what a new kind adds.

mod client;
mod coordination;
mod counting;
mod error;
mod exclusive;
mod hold;
mod quorum;
mod script;
// The chaos harness's hooks: public (hidden, unstable) only in a `chaos-seams` build.
#[cfg(feature = "chaos-seams")]
#[doc(hidden)]
pub mod seam;
#[cfg(not(feature = "chaos-seams"))]
mod seam;

/// Guides beyond the API, one page each (the package's `docs/*.md`): what relock promises and
/// what no lease-based lock can, how to run it, and what it keeps in Redis.
pub mod guide {
    #[doc = include_str!("../docs/safety.md")]
    pub mod safety {}

    #[doc = include_str!("../docs/operations.md")]
    pub mod operations {}

    #[doc = include_str!("../docs/data-layout.md")]
    pub mod data_layout {}
}

/// The Lua sources of every script relock sends, for inspection, tooling and benchmarks
/// ([`guide::data_layout`] describes their keys, arguments and replies). Each is the shared
/// functions it uses (`lua/lib/*.lua`) followed by the script's own file: Redis scripts cannot
/// include one another, and every function a script defines costs the server time on each
/// call, so a script carries only what it calls.
pub mod lua {
    pub use crate::client::guarded::lua::*;
    pub use crate::client::lock_scripts::lua::*;
    pub use crate::coordination::election::lua::*;
    pub use crate::coordination::fenced::lua::*;
    pub use crate::coordination::job::lua::*;
    pub use crate::counting::add::lua::*;
    pub use crate::counting::latch::lua::*;
    pub use crate::counting::permit_leases::lua::*;
    pub use crate::counting::rate_limiter::calls::lua::*;
    pub use crate::counting::semaphore::lua::*;
    pub use crate::counting::semaphore_request::lua::*;
    pub use crate::exclusive::coalesce::lua::*;
    pub use crate::exclusive::fair::first_lease::lua::*;
    pub use crate::exclusive::fair::line::lua::*;
    pub use crate::exclusive::rwlock::lua::*;
    pub use crate::exclusive::spin::kind::lua::*;
    pub use crate::quorum::scripts::lua::*;
}

pub use client::builder::ClientBuilder;
pub use client::handle::Client;
pub use client::identity::OwnerInfo;
pub use client::settings::ClusterPubSub;
/// The `fred` crate relock is built on, re-exported so that code which names fred's types next
/// to relock's (for example to share a fred configuration) uses the same version.
pub use fred;

pub use coordination::election::{Election, Leader, LeaderEvent, Leadership, Observation};
pub use coordination::fenced::FencedKey;
pub use coordination::inspect::Inspection;
pub use coordination::job::{Job, JobGuard};
pub use counting::latch::CountDownLatch;
pub use counting::permit_guard::PermitGuard;
pub use counting::permit_semaphore::PermitSemaphore;
pub use counting::rate_limiter::{RateConfig, RateLimiter, RateType};
pub use counting::semaphore::{DistributedSemaphore, Semaphore};
pub use counting::semaphore_permits::SemaphorePermits;
pub use error::{Error, NodeVote, Result, Vote};
pub use exclusive::lock::Lock;
pub use exclusive::multilock::{MultiGuard, MultiLock};
pub use exclusive::rwlock::{ReadLock, ReadWriteLock, WriteLock};
pub use exclusive::spin::backoff::SpinBackoff;
pub use exclusive::status::{Holder, KeyNames, LockStatus, OwnerLayout, Waiter};
pub use hold::commands::{Commands, MAX_COMMAND_WORDS};
pub use hold::distributed_lock::DistributedLock;
pub use hold::guard::LockGuard;
pub use hold::keys::MAX_NAME_LEN;
pub use hold::owner::Owner;
pub use hold::reentry::Reentrancy;
pub use quorum::builder::QuorumClientBuilder;
pub use quorum::client::QuorumClient;
pub use quorum::lock::QuorumLock;

/// The README's examples, run as doctests (`cargo test --doc`; they skip without `RELOCK_DOCTEST_URL`).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

/// `url` with its password (and any `…password=` query parameter) replaced by `***`, as relock
/// shows URLs in its errors, `Debug` output and traces; for tools that print URLs of their own.
///
/// ```
/// assert_eq!(relock::redacted_url("redis://app:s3cret@db:6379/0"), "redis://app:***@db:6379/0");
/// ```
pub fn redacted_url(url: &str) -> String {
    client::redact::url(url)
}

// That every kind's handles and guards are `Send + Sync + 'static` is checked, over every kind,
// by the integration tests' list of kinds (`tests/src/kinds.rs`).
#[cfg(test)]
mod bounds {
    #[allow(dead_code)]
    fn lock_futures_are_send(lock: crate::Lock) {
        fn send<T: Send>(_: T) {}
        send(lock.lock());
        send(lock.try_lock_for(std::time::Duration::ZERO));
    }
}
