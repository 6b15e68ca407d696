//! `relock`: distributed locks on Redis from the command line.
//!
//! - `relock run NAME -- CMD`: runs a command while holding a lock (flock across machines).
//! - `relock elect NAME -- CMD`: runs a command while this process leads an election.
//! - `relock status NAME`, `relock watch NAME`, `relock force-unlock NAME`: inspect and repair.
//! - `relock demo`: workers in two clients contend for one lock and prove mutual exclusion.
//!
//! What the subcommands share is in `shared.rs` (the crate's library). The benchmarks are a
//! crate of their own, `relock-bench` (not published).
// One `unsafe` block, in tether.rs: what the command's process does between fork and exec.
#![deny(unsafe_code)]
#![warn(missing_docs, rust_2018_idioms)]

mod demo;
mod run;
mod status;
mod tether;
mod watch;
mod write;

use clap::{Parser, Subcommand};
use relock_cli::shared::{say, CliError};

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
    /// Runs a command while this process leads an election: waits as a standby until it
    /// leads, runs CMD with RELOCK_TERM in its environment, resigns when it ends (the next
    /// standby leads at once).
    Elect(run::ElectArgs),
    /// Shows who holds each lock, its lease, its fencing counter and its fair line; exit 0 if
    /// every one is held, 1 if any is free.
    Status(status::StatusArgs),
    /// Deletes a lock whoever holds it (and wakes its waiters); prints what it deleted.
    ForceUnlock(status::ForceUnlockArgs),
    /// Runs one Redis command only while the hold `relock run` gave its command
    /// (RELOCK_OWNER) holds the lock, checked by Redis as it runs it: a stale holder's write
    /// is refused (exit 76).
    Write(write::Args),
    /// Shows each change of a lock as it happens (acquired, released, expired, the fair
    /// line), from its release channel and keyspace notifications, not by polling.
    Watch(watch::Args),
    /// Workers in two clients contend for one lock and increment a non-atomic counter in Redis;
    /// prints progress and a summary (exact count, one holder at a time, handoff latency,
    /// strictly increasing fencing tokens).
    Demo(demo::Args),
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    relock_cli::shared::init_logging();
    let cli = Cli::parse();
    // `run` handles SIGINT and SIGTERM itself: it forwards them to its command.
    let command = match cli.command {
        // 2: could not tell (1 means "free").
        Command::Status(args) => return exit(status::status(args).await, 2),
        Command::ForceUnlock(args) => return exit(status::force_unlock(args).await, 1),
        Command::Run(args) => return exit(run::run(args).await, 1),
        Command::Elect(args) => return exit(run::run(args.into_run()).await, 1),
        Command::Watch(args) => return exit(watch::watch(args).await, 1),
        Command::Write(args) => return exit(write::write(args).await, 1),
        other => other,
    };
    let work = async {
        match command {
            Command::Run(_)
            | Command::Elect(_)
            | Command::Status(_)
            | Command::ForceUnlock(_)
            | Command::Watch(_)
            | Command::Write(_) => {
                unreachable!("handled above")
            }
            Command::Demo(args) => demo::run(args).await,
        }
    };
    relock_cli::shared::run_until_signalled(work).await
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
