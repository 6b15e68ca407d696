//! `relock`: distributed locks on Redis from the command line.
//!
//! - `relock run NAME -- CMD`: runs a command while holding a lock (flock across machines).
//! - `relock status NAME`, `relock watch NAME`, `relock force-unlock NAME`: inspect and repair.
//! - `relock demo`: workers in two clients contend for one lock and prove mutual exclusion.
//! - `relock bench`: uncontended and contended figures beside `redis-benchmark` ceilings.
//! - `relock bench-compare`: every performance target as a ratio to a same-run baseline.
//! - `relock bench-quorum`: the quorum lock on local masters beside a single node and rslock.
//! - `relock bench-cluster`: uncontended throughput on one master and on a 3-master cluster.
//! - `relock bench-watchdog`: what holding 100k locks costs (renewal calls, client CPU).
#![forbid(unsafe_code)]
#![warn(missing_docs, rust_2018_idioms)]

mod bench;
mod cluster_bench;
mod compare;
mod demo;
mod plot;
mod progress;
mod quorum_bench;
mod report;
mod run;
mod stats;
mod status;
mod sync_bench;
mod watch;
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
    /// Runs a command while holding a lock (like flock, across machines): waits for the lock,
    /// runs CMD with RELOCK_TOKEN in its environment, releases when it ends.
    Run(run::Args),
    /// Shows who holds each lock, its lease, its fencing counter and its fair line; exit 0 if
    /// every one is held, 1 if any is free.
    Status(status::StatusArgs),
    /// Deletes a lock whoever holds it (and wakes its waiters); prints what it deleted.
    ForceUnlock(status::ForceUnlockArgs),
    /// Shows each change of a lock as it happens (acquired, released, expired, the fair
    /// line), from its release channel and keyspace notifications, not by polling.
    Watch(watch::Args),
    /// Workers in two clients contend for one lock and increment a non-atomic counter in Redis;
    /// prints progress and a summary (exact count, one holder at a time, handoff latency,
    /// strictly increasing fencing tokens).
    Demo(demo::Args),
    /// Measures lock+unlock throughput and handoff latency beside redis-benchmark ceilings.
    Bench(bench::Args),
    /// Measures U, H-wait, Q and Q-paused beside PING, the peer crates and redis-benchmark in
    /// one run, and prints each figure's ratio to its baseline and target.
    BenchCompare(compare::Args),
    /// Measures the quorum lock on local masters beside a single node, a paused node and rslock.
    BenchQuorum(quorum_bench::Args),
    /// Measures the read-write lock and the semaphore beside the plain lock: uncontended
    /// pairs/s, and handoff latency of the write lock and of a semaphore's permit.
    BenchSync(sync_bench::Args),
    /// Measures uncontended throughput on one master and on a local 3-master cluster.
    BenchCluster(cluster_bench::Args),
    /// Holds many locks and measures renewal calls per period and client CPU.
    BenchWatchdog(watchdog_bench::Args),
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    use std::io::IsTerminal;
    // RUST_LOG (or RELOCK_LOG) picks what is logged, to stderr; colours only on a terminal.
    let filter = tracing_subscriber::EnvFilter::try_from_env("RUST_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_env("RELOCK_LOG"))
        .unwrap_or_else(|_| "warn".into());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    // `run` handles SIGINT and SIGTERM itself: it forwards them to its command.
    let command = match cli.command {
        // 2: could not tell (1 means "free").
        Command::Status(args) => return exit(status::status(args).await, 2),
        Command::ForceUnlock(args) => return exit(status::force_unlock(args).await, 1),
        Command::Run(args) => return exit(run::run(args).await, 1),
        Command::Watch(args) => return exit(watch::watch(args).await, 1),
        other => other,
    };
    let work = async {
        match command {
            Command::Run(_) | Command::Status(_) | Command::ForceUnlock(_) | Command::Watch(_) => {
                unreachable!("handled above")
            }
            Command::Demo(args) => demo::run(args).await,
            Command::Bench(args) => bench::run(args).await,
            Command::BenchQuorum(args) => quorum_bench::run(args).await,
            Command::BenchCompare(args) => compare::run(args).await,
            Command::BenchCluster(args) => cluster_bench::run(args).await,
            Command::BenchSync(args) => sync_bench::run(args).await,
            Command::BenchWatchdog(args) => watchdog_bench::run(args).await,
        }
    };
    let result = tokio::select! {
        r = work => r,
        code = signals::received() => {
            // The command is dropped here (its guards start their releases); every client it
            // made then releases what it still holds before the process exits.
            signals::shut_down_clients().await;
            say(format_args!("interrupted; locks released"));
            return std::process::ExitCode::from(code);
        }
    };
    signals::shut_down_clients().await;
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            say(format_args!("{e}"));
            std::process::ExitCode::FAILURE
        }
    }
}

/// The process exit code of a command that reports its own; `on_error` for a failure.
fn exit(r: Result<u8, CliError>, on_error: u8) -> std::process::ExitCode {
    match r {
        Ok(code) => std::process::ExitCode::from(code),
        Err(e) => {
            say(format_args!("{e}"));
            std::process::ExitCode::from(on_error)
        }
    }
}

/// Writes `relock: MESSAGE` to stderr. Never panics (unlike `eprintln!` on a closed stderr):
/// relock must go on to stop its command and release its lock.
pub(crate) fn say(message: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "relock: {message}");
}

/// SIGINT and SIGTERM: stop the command, release its locks, exit 130 or 143.
mod signals {
    use std::sync::Mutex;

    /// Every client a command made, so an interrupted command still releases its locks.
    static CLIENTS: Mutex<Vec<relock::Client>> = Mutex::new(Vec::new());

    /// Registers `client` to be shut down (its locks released) when the command ends or is
    /// interrupted.
    pub(crate) fn register(client: &relock::Client) {
        CLIENTS.lock().unwrap().push(client.clone());
    }

    /// Resolves with the exit code for the first SIGINT (130) or SIGTERM (143).
    pub(crate) async fn received() -> u8 {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut int), Ok(mut term)) = (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) else {
                return std::future::pending().await;
            };
            tokio::select! {
                _ = int.recv() => 130,
                _ = term.recv() => 143,
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            130
        }
    }

    /// Shuts every registered client down (each releases what it holds), all at once.
    pub(crate) async fn shut_down_clients() {
        let clients: Vec<relock::Client> = std::mem::take(&mut *CLIENTS.lock().unwrap());
        let mut all = tokio::task::JoinSet::new();
        for c in clients {
            all.spawn(async move { c.shutdown().await });
        }
        while all.join_next().await.is_some() {}
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
