//! Distributed locks on Redis for tokio: exclusive like `tokio::sync::Mutex`, re-entrant inside a
//! hold's scope, renewed by a watchdog, woken by pub/sub, fenced by strictly increasing tokens,
//! and wire-compatible with Redisson's `RLock`.
//!
//! ```no_run
//! # async fn f() -> relock::Result<()> {
//! use std::time::Duration;
//!
//! let client = relock::Client::connect("redis://127.0.0.1:6379").await?;
//! let lock = client.lock("orders:42");
//!
//! let guard = lock.lock().await?;               // waits; the watchdog renews the lease
//! let token = guard.fencing_token();            // send it with your writes
//! guard.scope(async {
//!     let nested = lock.lock().await?;          // re-enters: same hold, same token
//!     nested.unlock().await
//! }).await?;
//! guard.unlock().await?;                        // or just drop the guard
//!
//! if let Some(guard) = lock.try_lock_for(Duration::from_secs(3)).await? {
//!     tokio::select! {
//!         _ = guard.lost() => eprintln!("lease lost: stop writing"),
//!         _ = tokio::time::sleep(Duration::from_millis(10)) => {}
//!     }
//! }
//! client.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! # Which lock should you use?
//! - [`Lock`] (`client.lock(name)`): one Redis server (or a Cluster, or Sentinel), mutual
//!   exclusion between processes and between futures. Not fair: any waiter may win.
//! - A fair lock (`client.fair_lock(name)`, the same [`Lock`] type and guard): first come,
//!   first served across all clients; each release wakes only the next in line, and a waiter
//!   that dies stops holding up the line after its heartbeat deadline (5 s).
//! - [`QuorumLock`] ([`QuorumClient`]`::lock(name)`): Redlock over N independent masters, held
//!   while a majority granted it; survives a minority of masters down. Same guard.
//! - [`ReadWriteLock`] (`client.read_write_lock(name)`): many readers or one writer
//!   (Redisson's `RReadWriteLock`); a writer may downgrade, a reader cannot upgrade.
//! - [`Semaphore`] (`client.semaphore(name)`) and [`CountDownLatch`]
//!   (`client.count_down_latch(name)`): Redisson's `RSemaphore` and `RCountDownLatch`.
//! - [`MultiLock`]: all or nothing over several locks of any kinds and clients, in one global
//!   order (no deadlock), with one guard.
//! - A lease-based lock cannot promise mutual exclusion through process pauses or clock jumps;
//!   if correctness depends on it, have the protected resource check
//!   [`LockGuard::fencing_token`]. `docs/safety.md` says exactly what is and is not promised.
//!
//! # Who holds a lock, and when `lock()` re-enters
//! Every `lock()` outside a scope is a fresh acquisition and waits for any other holder, also a
//! future of the same task (`join!`, `select!`, `FuturesUnordered`), as with
//! `tokio::sync::Mutex`. Re-entry is explicit: inside [`LockGuard::scope`] or [`Lock::with`]
//! (nested calls re-enter the hold), or inside [`Owner::scope`] (an explicit owner, across
//! tasks). [`Reentrancy::PerTask`] opts into Redisson's implicit per-task re-entry, with its
//! hazard. On the server every hold has its own field, so nothing that belongs to one hold
//! (a late release, a renewal, a clean-up) can affect another: `docs/safety.md`.
//!
//! # Layout
//! Every lock kind is its scripts plus a small adaptor over shared parts; no shared module
//! depends on a kind (`docs/architecture.md` has the diagram, and a unit test fails on an
//! import cycle).
//!
//! Shared parts:
//! - `client`: [`Client`] (its handle, `Inner` and its operations, shutdown); `settings`
//!   (what every lock of a client shares, and the limits it is checked against); `builder`:
//!   [`ClientBuilder`] (and `Client::connect`/`builder`); `connect` (the URL in fred's
//!   terms, fred's builders with explicit reconnect and timeouts, `start`); `refusal` (what a
//!   Redis error means: typed refusals, connection errors with hints).
//! - `backend`: where holds live (one server, or a quorum of masters): what the guard
//!   releases through and the watchdog renews through, and the state every backend keeps.
//! - `single`: the one-server backend (standalone, Cluster, Sentinel): release with retries,
//!   batch renewal.
//! - `guard`: [`LockGuard`], written once over any backend.
//! - `holds`: the client's record of what it holds (one entry and one server field per hold).
//! - `reentry`: which hold a `lock()` re-enters (scopes, owners, the per-task mode).
//! - `watchdog`: one task per client that renews holds in batches, through its backend.
//! - `hold_watch`: a hold that lives 30 ms listens on its lock's channel, so that a
//!   force-unlock fires its `lost()` within a round trip (one starter task per client).
//! - `attempt`: one acquire script call for a fresh hold, run to its end whatever its caller
//!   does.
//! - `detach`: work that must run to its end (an attempt, a re-entry, a release) runs in the
//!   caller's task while it is polled, and moves to a tracked task when its future is dropped
//!   or shutdown begins.
//! - `wait`: the start of every wait: first attempts, then the subscription before the retry.
//! - `pubsub`: one subscriber per client; refcounted subscriptions; wakes waiters.
//! - `raw`: [`DistributedLock`], and the acquiring methods written once for every kind.
//! - `scripts`: the embedded Lua scripts (`lua/*.lua`), EVALSHA with NOSCRIPT fallback.
//! - `batch`: coalesces concurrent plain acquires and releases into one script call.
//! - `keys`: key and channel names (Redisson's `{name}` hash-tag rule).
//! - `owner`: [`Owner`], an explicit owner whose scope re-enters its holds.
//! - `status`: [`Lock::status`], a snapshot of a lock for operators.
//!
//! - `counter`: what the counting kinds share: count arguments, request ids, one wait.
//!
//! Kinds:
//! - `lock`: [`Lock`] (plain and fair), its handle and queries.
//! - `rwlock`: [`ReadWriteLock`] and its two sides, [`ReadLock`] and [`WriteLock`].
//! - `semaphore` and `latch`: [`Semaphore`] and [`CountDownLatch`], over `counter`.
//! - `multilock`: [`MultiLock`], over any kinds through [`DistributedLock`].
//! - `fair` and `line`: the fair lock's wait loop, its waiters' heartbeats, and this client's
//!   registry of waiters in lines.
//! - `quorum`: the quorum backend (`QuorumInner`): nodes, restart quarantine, release and
//!   renewal on every node; `quorum_client` ([`QuorumClient`]), `quorum_builder`
//!   ([`QuorumClientBuilder`]), `quorum_node` (one master), `quorum_race` (a call per node,
//!   counted as answers come).
//! - `quorum_lock`: [`QuorumLock`]: the Redlock acquire algorithm and its wait loop.
#![forbid(unsafe_code)]
#![deny(rust_2018_idioms, rustdoc::broken_intra_doc_links)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod attempt;
mod backend;
mod batch;
mod builder;
mod client;
mod connect;
mod counter;
mod detach;
mod error;
mod fair;
mod guard;
mod hold_watch;
mod holds;
mod in_flight;
mod keys;
mod latch;
#[cfg(test)]
mod layers;
mod leases;
mod line;
mod lock;
mod meter;
mod multilock;
#[cfg(feature = "chaos-mutants")]
pub mod mutant;
mod owner;
mod permits;
mod pubsub;
mod quorum;
mod quorum_builder;
mod quorum_client;
mod quorum_lock;
mod quorum_node;
mod quorum_race;
mod quorum_watch;
mod raw;
mod redact;
mod reentry;
mod refusal;
mod rwlock;
mod scripts;
mod seam;
mod semaphore;
mod settings;
mod single;
mod status;
mod tls;
mod wait;
mod watchdog;

pub use builder::ClientBuilder;
pub use client::Client;
/// The `fred` crate relock is built on, re-exported so that code which names fred's types next
/// to relock's (for example to share a fred configuration) uses the same version.
pub use fred;
pub use settings::ClusterPubSub;

pub use error::{Error, NodeVote, Result, Vote};
pub use guard::LockGuard;
pub use keys::MAX_NAME_LEN;
pub use latch::CountDownLatch;
pub use lock::Lock;
pub use multilock::{MultiGuard, MultiLock};
pub use owner::Owner;
pub use permits::{PermitGuard, PermitSemaphore};
pub use quorum_builder::QuorumClientBuilder;
pub use quorum_client::QuorumClient;
pub use quorum_lock::QuorumLock;
pub use raw::DistributedLock;
pub use reentry::Reentrancy;
pub use rwlock::{ReadLock, ReadWriteLock, WriteLock};
pub use scripts::lua;
pub use semaphore::{DistributedSemaphore, Semaphore};
pub use status::{Holder, KeyNames, LockStatus, OwnerLayout, Waiter};

/// `url` with its password (and any `…password=` query parameter) replaced by `***`, as relock
/// shows URLs in its errors, `Debug` output and traces; for tools that print URLs of their own.
///
/// ```
/// assert_eq!(relock::redacted_url("redis://app:s3cret@db:6379/0"), "redis://app:***@db:6379/0");
/// ```
pub fn redacted_url(url: &str) -> String {
    redact::url(url)
}

#[cfg(test)]
mod bounds {
    fn send_sync_static<T: Send + Sync + 'static>() {}

    #[test]
    fn handles_and_guards_are_send_sync_static() {
        send_sync_static::<crate::Client>();
        send_sync_static::<crate::Lock>();
        send_sync_static::<crate::LockGuard>();
        send_sync_static::<crate::Error>();
        send_sync_static::<crate::QuorumClient>();
        send_sync_static::<crate::QuorumLock>();
    }

    #[allow(dead_code)]
    fn lock_futures_are_send(lock: crate::Lock) {
        fn send<T: Send>(_: T) {}
        send(lock.lock());
        send(lock.try_lock_for(std::time::Duration::ZERO));
    }
}
