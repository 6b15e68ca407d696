//! `relock-bench`: relock's bench lab (not published; the shipped command is `relock`).
//!
//! - `relock-bench lock`: uncontended and contended figures beside `redis-benchmark` ceilings.
//! - `relock-bench compare`: every performance target as a ratio to a same-run baseline.
//! - `relock-bench quorum`: the quorum lock on local masters beside a single node and rslock.
//! - `relock-bench sync`: the read-write lock and the semaphore beside the plain lock.
//! - `relock-bench cluster`: uncontended throughput on one master and on a 3-master cluster.
//! - `relock-bench scale`: uncontended throughput against task count, beside the U floor.
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
mod rate_bench;
mod report;
mod scale_bench;
mod shared;
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
    /// Measures uncontended throughput against task count, relock beside the U floor (a bare
    /// fred pool making the same two script calls per pair).
    Scale(scale_bench::Args),
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
            Command::Scale(args) => scale_bench::run(args).await,
            Command::Watchdog(args) => watchdog_bench::run(args).await,
            Command::Guarded(args) => guarded_bench::run(args).await,
        }
    };
    relock_cli::shared::run_until_signalled(work).await
}
