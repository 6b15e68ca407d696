//! Real `redis-server` processes on loopback, with fault injection, for relock's tests.
//!
//! Every server gets a free port on `127.0.0.1` and its own temporary directory. Dropping a
//! [`RedisServer`] kills the process and removes the directory, also while a test panics.
//!
//! ```no_run
//! # fn main() -> Result<(), relock_testkit::Error> {
//! let server = relock_testkit::RedisServer::start()?;
//! assert_eq!(server.dbsize()?, 0);
//! server.pause()?;   // SIGSTOP
//! server.resume()?;  // SIGCONT
//! server.restart_empty()?;
//! # Ok(()) }
//! ```
//!
//! # Layout
//! - [`RedisServer`]: one process, its faults and a tiny synchronous RESP client for checks.
//! - [`RedisMasters`]: N independent masters (for quorum locks).
//! - [`RedisCluster`]: 3 masters + 3 replicas, failover helpers.
//! - [`RedisSentinel`]: a master, a replica and 3 sentinels, and a failover helper.
//! - [`FaultProxy`]: a TCP proxy in front of a server that delays, freezes, blackholes or resets
//!   traffic per [`Direction`] (see [`Mode`]), for network faults without `tc netem`.
//! - [`TlsMaterial`]: a CA and the certificates it signed, for TLS servers (`ServerOptions::tls`).
//! - [`wait_until`]: the bounded way to wait for a condition in a test.
#![forbid(unsafe_code)]
#![warn(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    unreachable_pub
)]

mod cluster;
mod proxy;
mod resp;
mod sentinel;
mod server;
mod tls;
mod wait;

pub use cluster::RedisCluster;
pub use proxy::{ConnId, Direction, FaultProxy, Mode};
pub use resp::Value;
pub use sentinel::RedisSentinel;
pub use server::{RedisMasters, RedisServer, ServerOptions};
pub use tls::TlsMaterial;
pub use wait::{wait_until, WaitTimeout};

/// Sends one command to the server (or proxy) listening on `127.0.0.1:port`, without a
/// password, and returns its reply (an error reply is a `Value::Error`).
pub fn command_on_port(port: u16, args: &[&str]) -> std::io::Result<Value> {
    resp::command(port, args, std::time::Duration::from_secs(5))
}

/// What went wrong while starting or driving a test server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `redis-server` is not installed.
    #[error(
        "`redis-server` was not found on PATH; install it with `scripts/ensure-redis` \
         (as root it runs `apt-get install redis-server`), or put a Redis 7 `redis-server` on PATH"
    )]
    RedisServerMissing,
    /// The server did not come up.
    #[error("redis-server on port {port} did not start: {reason}; its log: {log}")]
    StartFailed {
        /// The port it was given.
        port: u16,
        /// Why we gave up.
        reason: String,
        /// The tail of its log file.
        log: String,
    },
    /// An I/O error talking to the server or the OS.
    #[error("{what}: {source}")]
    Io {
        /// What we were doing.
        what: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The server answered a command with an error.
    #[error("redis-server on port {port} answered `{command}` with: {reply}")]
    Command {
        /// The server's port.
        port: u16,
        /// The command.
        command: String,
        /// The error reply.
        reply: String,
    },
}

/// Result alias for the test kit.
pub type Result<T, E = Error> = std::result::Result<T, E>;
