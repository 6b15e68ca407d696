//! Distributed locks on Redis for tokio: reentrant, renewed by a watchdog, woken by pub/sub,
//! fenced by strictly increasing tokens, and wire-compatible with Redisson's `RLock`.
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
//! - [`Lock`] (`client.lock(name)`): one Redis server, mutual exclusion between processes,
//!   reentrant per task. Not fair.
//! - A lease-based lock cannot promise mutual exclusion through process pauses or clock jumps;
//!   if correctness depends on it, have the protected resource check
//!   [`LockGuard::fencing_token`]. `docs/safety.md` says exactly what is and is not promised.
//!
//! # Layout
//! - `client`: [`Client`] and [`ClientBuilder`]: connections (fred, with explicit reconnect
//!   and timeouts), settings, shutdown.
//! - `lock`: [`Lock`], the acquire and wait loop.
//! - `guard`: [`LockGuard`] and release.
//! - `holds`: the client's record of what it holds, shared by guards and the watchdog.
//! - `watchdog`: one task per client that renews holds in batches.
//! - `pubsub`: one subscriber per client; refcounted subscriptions; wakes waiters.
//! - `scripts`: the embedded Lua scripts (`lua/*.lua`), EVALSHA with NOSCRIPT fallback.
//! - `keys`: key and channel names (Redisson's `{name}` hash-tag rule).
//! - `owner`: [`Owner`], who holds a lock.
//! - `raw`: [`DistributedLock`], the trait every lock kind implements.
#![forbid(unsafe_code)]
#![deny(rust_2018_idioms, rustdoc::broken_intra_doc_links)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod client;
mod error;
mod guard;
mod holds;
mod keys;
mod lock;
mod owner;
mod pubsub;
mod raw;
mod scripts;
mod watchdog;

pub use client::{Client, ClientBuilder};

/// The Lua sources of the scripts, for inspection, tooling and benchmarks
/// (`docs/data-layout.md` describes their keys, arguments and replies).
pub mod lua {
    /// Take, re-enter, or report the holder's PTTL.
    pub const ACQUIRE: &str = include_str!("../lua/acquire.lua");
    /// Drop one hold (or all of an owner's) and publish the release.
    pub const RELEASE: &str = include_str!("../lua/release.lua");
    /// The watchdog's batch renewal.
    pub const RENEW: &str = include_str!("../lua/renew.lua");
    /// Delete whoever holds it and publish.
    pub const FORCE_UNLOCK: &str = include_str!("../lua/force_unlock.lua");
}
pub use error::{Error, Result};
pub use guard::LockGuard;
pub use lock::Lock;
pub use owner::Owner;
pub use raw::DistributedLock;

#[cfg(test)]
mod bounds {
    fn send_sync_static<T: Send + Sync + 'static>() {}

    #[test]
    fn handles_and_guards_are_send_sync_static() {
        send_sync_static::<crate::Client>();
        send_sync_static::<crate::Lock>();
        send_sync_static::<crate::LockGuard>();
        send_sync_static::<crate::Error>();
    }

    #[allow(dead_code)]
    fn lock_futures_are_send(lock: crate::Lock) {
        fn send<T: Send>(_: T) {}
        send(lock.lock());
        send(lock.try_lock_for(std::time::Duration::ZERO));
    }
}
