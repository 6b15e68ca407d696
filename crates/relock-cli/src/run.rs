//! `relock run NAME -- CMD ARGS…`: runs a command while holding a distributed lock, like
//! `flock(1)` across machines. The watchdog renews the lock while the command runs; it is
//! released when the command ends, when `relock` gets SIGINT or SIGTERM (forwarded to the
//! command first), and the command is stopped if the lock is lost.

use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use relock::DistributedLock;

use crate::CliError;

/// `flock -E`'s default: EX_TEMPFAIL, the lock could not be had in time.
const CONFLICT_EXIT: u8 = 75;
/// The lock was lost while the command ran (its lease ran out or the key was deleted).
const LOST_EXIT: u8 = 76;

/// What to do with the command when the lock is lost while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OnLost {
    /// SIGTERM, then SIGKILL after `--kill-after`.
    Kill,
    /// SIGTERM only.
    Term,
    /// Let it run; `relock` still exits with the lost code.
    Ignore,
}

/// Options of `relock run`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  relock run nightly-report -- ./report.sh --full      # wait for the lock, then run
  relock run --no-wait deploy -- make deploy           # exit 75 at once if it is held
  relock run --wait 30s --shell 'migrate up && echo done' db-migrations
  relock run --quorum redis://a:6379,redis://b:6379,redis://c:6379 backup -- ./backup.sh

The command sees RELOCK_NAME, RELOCK_TOKEN (the fencing token: pass it with every write to
the resource it protects) and RELOCK_OWNER. Exit codes: the command's own; 75 (or
--conflict-exit-code) when the lock could not be had in time; 76 when the lock was lost while
the command ran; 128+N when the command died of signal N; 1 on a relock error.")]
pub(crate) struct Args {
    /// The lock's name (Redisson-compatible: a Java RLock of the same name excludes it too).
    name: String,
    /// Redis URL; else RELOCK_URL, else REDIS_URL, else redis://127.0.0.1:6379.
    #[arg(long)]
    url: Option<String>,
    /// Give up after waiting this long (e.g. 30s, 2m); default: wait forever.
    #[arg(long, value_parser = humantime::parse_duration, conflicts_with = "no_wait")]
    wait: Option<Duration>,
    /// Do not wait: exit with the conflict code at once if the lock is held (flock -n).
    #[arg(long, short = 'n')]
    no_wait: bool,
    /// A fixed lease instead of the watchdog (e.g. 10m): the lock is lost when it runs out.
    #[arg(long, value_parser = humantime::parse_duration)]
    lease: Option<Duration>,
    /// Use the fair lock (first come, first served).
    #[arg(long, conflicts_with = "quorum")]
    fair: bool,
    /// Lock on a majority of these independent masters (Redlock) instead of one Redis.
    #[arg(long, value_delimiter = ',', num_args = 1.., conflicts_with = "url")]
    quorum: Vec<String>,
    /// Exit code when the lock could not be had in time (flock -E).
    #[arg(long, default_value_t = CONFLICT_EXIT)]
    conflict_exit_code: u8,
    /// What to do with the command if the lock is lost while it runs.
    #[arg(long, value_enum, default_value_t = OnLost::Kill)]
    on_lost: OnLost,
    /// With --on-lost kill: how long after SIGTERM to send SIGKILL.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    kill_after: Duration,
    /// Run this through `sh -c` (flock -c) instead of CMD ARGS.
    #[arg(long, short = 'c', conflicts_with = "command")]
    shell: Option<String>,
    /// The command and its arguments (after `--`).
    #[arg(last = true)]
    command: Vec<String>,
}

/// The URL from `--url`, RELOCK_URL, REDIS_URL, or the local default.
pub(crate) fn resolve_url(flag: Option<String>) -> String {
    flag.or_else(|| std::env::var("RELOCK_URL").ok().filter(|s| !s.is_empty()))
        .or_else(|| std::env::var("REDIS_URL").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "redis://127.0.0.1:6379".into())
}

/// Runs the command under the lock; returns the process's exit code.
pub(crate) async fn run(args: Args) -> Result<u8, CliError> {
    let argv: Vec<String> = match (&args.shell, args.command.is_empty()) {
        (Some(s), _) => vec!["sh".into(), "-c".into(), s.clone()],
        (None, false) => args.command.clone(),
        (None, true) => {
            return Err(CliError::Failed(
                "no command to run: give it after `--` (relock run NAME -- CMD ARGS) or with --shell 'CMD'".into(),
            ))
        }
    };
    let (lock, shutdown): (Box<dyn DistributedLock>, Shutdown) = if args.quorum.is_empty() {
        let client = relock::Client::connect(resolve_url(args.url.clone())).await?;
        let lock = if args.fair {
            client.fair_lock(&args.name)
        } else {
            client.lock(&args.name)
        };
        let lock = match args.lease {
            Some(l) => lock.with_lease(l),
            None => lock,
        };
        (Box::new(lock), Shutdown::Single(client))
    } else {
        let client = relock::QuorumClient::builder()
            .urls(args.quorum.clone())
            .build()
            .await?;
        let lock = client.lock(&args.name);
        let lock = match args.lease {
            Some(l) => lock.with_lease(l),
            None => lock,
        };
        (Box::new(lock), Shutdown::Quorum(client))
    };
    let code = hold_and_run(&args, &argv, lock.as_ref()).await;
    shutdown.run().await;
    code
}

enum Shutdown {
    Single(relock::Client),
    Quorum(relock::QuorumClient),
}

impl Shutdown {
    async fn run(self) {
        match self {
            Shutdown::Single(c) => c.shutdown().await,
            Shutdown::Quorum(c) => c.shutdown().await,
        }
    }
}

async fn hold_and_run(
    args: &Args,
    argv: &[String],
    lock: &dyn DistributedLock,
) -> Result<u8, CliError> {
    let mut signals = Signals::new()?;
    let acquire = async {
        if args.no_wait {
            lock.try_lock().await
        } else if let Some(w) = args.wait {
            lock.try_lock_for(w).await
        } else {
            lock.lock().await.map(Some)
        }
    };
    let guard = tokio::select! {
        r = acquire => r?,
        sig = signals.next() => {
            // Interrupted while waiting: nothing is held (a grant arriving now is released by
            // the client's shutdown).
            return Ok(128 + sig as u8);
        }
    };
    let Some(guard) = guard else {
        eprintln!(
            "relock: `{}` is held by someone else{}",
            args.name,
            match args.wait {
                Some(w) if !args.no_wait => format!(" (waited {})", humantime::format_duration(w)),
                _ => String::new(),
            }
        );
        return Ok(args.conflict_exit_code);
    };

    let mut child = tokio::process::Command::new(&argv[0])
        .args(&argv[1..])
        .env("RELOCK_NAME", &args.name)
        .env("RELOCK_TOKEN", guard.fencing_token().to_string())
        .env("RELOCK_OWNER", guard.owner())
        .spawn()
        .map_err(|e| CliError::Failed(format!("cannot run `{}`: {e}", argv[0])))?;
    let pid = child.id().map(|id| Pid::from_raw(id as i32));

    let mut lost = false;
    let status = loop {
        tokio::select! {
            s = child.wait() => break s,
            sig = signals.next() => {
                // Forward, then keep waiting for the command: it decides how to stop.
                if let Some(pid) = pid {
                    let _ = kill(pid, sig);
                }
            }
            _ = guard.lost(), if !lost => {
                lost = true;
                eprintln!("relock: the lock `{}` was lost while the command ran", args.name);
                if let (Some(pid), true) = (pid, args.on_lost != OnLost::Ignore) {
                    let _ = kill(pid, Signal::SIGTERM);
                    if args.on_lost == OnLost::Kill {
                        match tokio::time::timeout(args.kill_after, child.wait()).await {
                            Ok(s) => break s,
                            Err(_) => {
                                let _ = kill(pid, Signal::SIGKILL);
                            }
                        }
                    }
                }
            }
        }
    }
    .map_err(|e| CliError::Failed(format!("waiting for `{}`: {e}", argv[0])))?;

    // Released before `relock` exits, so the next holder need not wait for a lease.
    if let Err(e) = guard.unlock().await {
        if !matches!(e, relock::Error::LockLost { .. }) {
            eprintln!("relock: releasing `{}`: {e}", args.name);
        }
    }
    Ok(if lost { LOST_EXIT } else { exit_code(status) })
}

/// The command's exit code, or 128 + the signal that ended it (as a shell reports it).
fn exit_code(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => c as u8,
        (None, Some(s)) => 128 + s as u8,
        (None, None) => 1,
    }
}

/// SIGINT and SIGTERM, as they arrive (each is forwarded to the command).
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> Result<Self, CliError> {
        use tokio::signal::unix::{signal, SignalKind};
        let err = |e: std::io::Error| CliError::Failed(format!("cannot handle signals: {e}"));
        Ok(Signals {
            int: signal(SignalKind::interrupt()).map_err(err)?,
            term: signal(SignalKind::terminate()).map_err(err)?,
        })
    }

    async fn next(&mut self) -> Signal {
        tokio::select! {
            _ = self.int.recv() => Signal::SIGINT,
            _ = self.term.recv() => Signal::SIGTERM,
        }
    }
}
