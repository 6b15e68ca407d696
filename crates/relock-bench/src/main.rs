//! `relock-bench`: relock's bench lab (not published; the shipped command is `relock`).
//!
//! - `relock-bench lock`: uncontended and contended figures beside `redis-benchmark` ceilings.
//! - `relock-bench compare`: every performance target as a ratio to a same-run baseline.
//! - `relock-bench quorum`: the quorum lock on local masters beside a single node and rslock.
//! - `relock-bench sync`: the read-write lock and the semaphore beside the plain lock.
//! - `relock-bench cluster`: uncontended throughput on one master and on a 3-master cluster.
//! - `relock-bench watchdog`: what holding 100k locks costs (renewal calls, client CPU).
//!
//! Without `--redis`, a benchmark starts its own redis-server(s) through the test kit.
#![forbid(unsafe_code)]
#![warn(rust_2018_idioms)]

mod bench;
mod cluster_bench;
mod compare;
mod guarded_bench;
mod plot;
mod progress;
mod quorum_bench;
mod report;
mod stats;
mod steps;
mod sync_bench;
mod watchdog_bench;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "relock-bench", version, about = "relock's benchmarks")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Measures lock+unlock throughput and handoff latency beside redis-benchmark ceilings.
    Lock(bench::Args),
    /// Measures U, H-wait, Q and Q-paused beside PING, the peer crates and redis-benchmark in
    /// one run, and prints each figure's ratio to its baseline and target.
    Compare(compare::Args),
    /// Measures the quorum lock on local masters beside a single node, a paused node and rslock.
    Quorum(quorum_bench::Args),
    /// Measures the read-write lock and the semaphore beside the plain lock: uncontended
    /// pairs/s, and handoff latency of the write lock and of a semaphore's permit.
    Sync(sync_bench::Args),
    /// Measures uncontended throughput on one master and on a local 3-master cluster.
    Cluster(cluster_bench::Args),
    /// Holds many locks and measures renewal calls per period and client CPU.
    Watchdog(watchdog_bench::Args),
    /// Measures a guarded write (1 and 10 commands) beside the same commands in one bare
    /// MULTI/EXEC by fred, and prints the ratio to its target.
    Guarded(guarded_bench::Args),
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    steps::init_logging();
    let work = async {
        match Cli::parse().command {
            Command::Lock(args) => bench::run(args).await,
            Command::Quorum(args) => quorum_bench::run(args).await,
            Command::Compare(args) => compare::run(args).await,
            Command::Cluster(args) => cluster_bench::run(args).await,
            Command::Sync(args) => sync_bench::run(args).await,
            Command::Watchdog(args) => watchdog_bench::run(args).await,
            Command::Guarded(args) => guarded_bench::run(args).await,
        }
    };
    relock_cli::shared::run_until_signalled(work).await
}

/// Errors of a benchmark.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    #[error(transparent)]
    Lock(#[from] relock::Error),
    #[error("could not start a local redis-server: {0}")]
    Testkit(#[from] relock_testkit::Error),
    #[error("{0}")]
    Failed(String),
}

impl From<relock_cli::shared::CliError> for CliError {
    fn from(e: relock_cli::shared::CliError) -> Self {
        match e {
            relock_cli::shared::CliError::Lock(e) => CliError::Lock(e),
            other => CliError::Failed(other.to_string()),
        }
    }
}

/// A Redis to run against: the one given, or a fresh local one started through the test kit.
pub(crate) struct Target {
    pub(crate) url: String,
    pub(crate) server: Option<relock_testkit::RedisServer>,
}

impl Target {
    pub(crate) fn new(url: Option<String>) -> Result<Self, CliError> {
        Ok(match url {
            Some(url) => Target { url, server: None },
            None => {
                let server = relock_testkit::RedisServer::start()?;
                eprintln!("started redis-server on {}", server.addr());
                Target {
                    url: server.url(),
                    server: Some(server),
                }
            }
        })
    }
}
