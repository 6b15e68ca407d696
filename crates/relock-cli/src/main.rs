//! `relock`: distributed locks on Redis from the command line.
//!
//! - `relock demo`: workers in two clients contend for one lock and prove mutual exclusion.
//! - `relock bench`: uncontended and contended figures beside `redis-benchmark` ceilings.
//! - `relock bench-quorum`: the quorum lock on local masters beside a single node and rslock.
//! - `relock bench-cluster`: uncontended throughput on one master and on a 3-master cluster.
//! - `relock bench-watchdog`: what holding 100k locks costs (renewal calls, client CPU).
#![forbid(unsafe_code)]
#![warn(missing_docs, rust_2018_idioms)]

mod bench;
mod cluster_bench;
mod demo;
mod quorum_bench;
mod stats;
mod watchdog_bench;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "relock", version, about = "Distributed locks on Redis")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Workers in two clients contend for one lock and increment a non-atomic counter in Redis;
    /// prints progress and a summary (exact count, one holder at a time, handoff latency,
    /// strictly increasing fencing tokens).
    Demo(demo::Args),
    /// Measures lock+unlock throughput and handoff latency beside redis-benchmark ceilings.
    Bench(bench::Args),
    /// Measures the quorum lock on local masters beside a single node, a paused node and rslock.
    BenchQuorum(quorum_bench::Args),
    /// Measures uncontended throughput on one master and on a local 3-master cluster.
    BenchCluster(cluster_bench::Args),
    /// Holds many locks and measures renewal calls per period and client CPU.
    BenchWatchdog(watchdog_bench::Args),
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("RELOCK_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(args).await,
        Command::Bench(args) => bench::run(args).await,
        Command::BenchQuorum(args) => quorum_bench::run(args).await,
        Command::BenchCluster(args) => cluster_bench::run(args).await,
        Command::BenchWatchdog(args) => watchdog_bench::run(args).await,
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("relock: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Errors of the CLI.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    #[error(transparent)]
    Lock(#[from] relock::Error),
    #[error("could not start a local redis-server: {0}")]
    Testkit(#[from] relock_testkit::Error),
    #[error("{0}")]
    Failed(String),
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
