//! `relock run NAME -- CMD ARGS…`: runs a command while holding a distributed lock, like
//! `flock(1)` across machines. The watchdog renews the lock while the command runs; it is
//! released when the command ends, when `relock` gets SIGINT or SIGTERM (forwarded to the
//! command first), and the command is stopped if the lock is lost.

use std::process::ExitStatus;
use std::time::Duration;

use tokio::time::Instant;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use relock::DistributedLock;

use relock_cli::shared::{layout_name, resolve_url, say, CliError};

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
  relock run nightly-report ./report.sh --full         # wait for the lock, then run
  relock run --wait 30 nightly-report -- ./report.sh   # give up after 30 s (exit 75)
  relock run -s cache -- ./read-cache.sh               # shared, as flock -s (-x: exclusive)
  relock run --permits 3 crawlers -- ./crawl.sh        # at most 3 at once (consul lock -n 3)
  relock run --no-wait deploy -- make deploy           # exit 75 at once if it is held
  relock run --wait 30s --shell 'migrate up && echo done' db-migrations
  relock run --quorum redis://a:6379,redis://b:6379,redis://c:6379 backup -- ./backup.sh

The command sees RELOCK_NAME, RELOCK_KIND (lock, fair, spin, read, write, quorum, permit,
job or leader), RELOCK_TOKEN (the fencing token: pass it with every write to the resource it
protects) and RELOCK_OWNER (for `relock write`). If relock is killed (SIGKILL, a crash), the
command and its process group are killed too. Exit codes: the command's own; 75 (or
--conflict-exit-code) when the lock could not be had in time; 76 when the lock was lost while
the command ran; 128+N when the command died of signal N; 1 on a relock error.")]
pub(crate) struct Args {
    /// The lock's name (Redisson-compatible: a Java RLock of the same name excludes it too).
    name: String,
    /// Redis URL; else RELOCK_URL, else REDIS_URL, else redis://127.0.0.1:6379.
    #[arg(long)]
    url: Option<String>,
    #[command(flatten)]
    tls: relock_cli::shared::TlsArgs,
    /// Give up after waiting this long (e.g. 30s, 2m); default: wait forever.
    #[arg(long, value_parser = relock_cli::shared::parse_duration, conflicts_with = "no_wait")]
    wait: Option<Duration>,
    /// Do not wait: exit with the conflict code at once if the lock is held (flock -n).
    #[arg(long, short = 'n')]
    no_wait: bool,
    /// A fixed lease instead of the watchdog (e.g. 10m): the lock is lost when it runs out.
    #[arg(long, value_parser = relock_cli::shared::parse_duration)]
    lease: Option<Duration>,
    /// The watchdog's lease (default 30s): renewed every third of it while the command runs,
    /// and how long the lock outlives a relock that is killed (SIGKILL, a crash).
    /// Not with --at-least (a job's run has the fixed lease --at-most).
    #[arg(long, value_parser = relock_cli::shared::parse_duration, conflicts_with_all = ["lease", "at_least"])]
    watchdog_lease: Option<Duration>,
    /// Use the fair lock (first come, first served).
    #[arg(long, conflicts_with = "quorum")]
    fair: bool,
    /// Use the spin lock (Redisson's RSpinLock): the plain lock's keys, so it excludes plain
    /// runs and Java RLocks of NAME, but it waits by polling (from 1 ms, doubling, at most
    /// 128 ms) and uses no pub/sub at all; its release wakes no plain waiter (they take the
    /// lock when the lease they read ends). For servers or proxies without pub/sub.
    #[arg(long, conflicts_with_all = ["fair", "quorum"])]
    spin: bool,
    /// Hold the read-write lock NAME's shared side (as `flock -s`): any number of shared
    /// holders together, none beside an `--exclusive` one (Redisson's RReadWriteLock read lock).
    #[arg(long, short = 's', conflicts_with_all = ["fair", "spin", "quorum", "exclusive"])]
    shared: bool,
    /// Hold one of N permits of the semaphore NAME instead of a lock (as `consul lock -n N`):
    /// up to N commands run at once. N sets the count when the semaphore does not exist yet
    /// (a Redisson `RPermitExpirableSemaphore`: each permit has an id and a lease, renewed
    /// while the command runs, so a crashed holder's permit comes back when its lease ends).
    #[arg(
        long,
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..),
        conflicts_with_all = ["fair", "spin", "quorum", "shared", "exclusive"]
    )]
    permits: Option<u64>,
    /// Hold the read-write lock NAME's exclusive side (as `flock -x`): alone, with no
    /// `--shared` holder. Runs that share a name use `-s`/`-x` all of them, or none.
    #[arg(long, short = 'x', conflicts_with_all = ["fair", "spin", "quorum"])]
    exclusive: bool,
    /// Lock on a majority of these independent masters (Redlock, at least 3) instead of one
    /// Redis: one argument, the URLs separated by commas.
    #[arg(long, value_delimiter = ',', conflicts_with = "url")]
    quorum: Vec<String>,
    /// With --quorum: how long a master that restarted may not vote (default: the lease; a
    /// master that restarted empty may have forgotten a lock that is still valid). 0s turns
    /// it off, at the risk described in the safety guide, "Restarted nodes"
    /// (https://docs.rs/relock-redis/latest/relock/guide/safety/).
    #[arg(long, value_parser = relock_cli::shared::parse_duration, requires = "quorum")]
    restart_quarantine: Option<Duration>,
    /// Run at most once per occurrence across machines (ShedLock's lockAtLeastFor): after the
    /// command ends, the lock stays taken until this long after it started, so that a cron
    /// line on another machine firing a little later skips this occurrence (use it with
    /// --no-wait, and --conflict-exit-code 0 for cron).
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = relock_cli::shared::parse_duration,
        conflicts_with_all = ["fair", "spin", "quorum", "shared", "exclusive", "permits", "lease"]
    )]
    at_least: Option<Duration>,
    /// With --at-least: the longest a run may hold the lock (ShedLock's lockAtMostFor,
    /// default 1h): a command still running then is stopped as when the lock is lost, and a
    /// crashed run's lock ends by then.
    #[arg(long, value_name = "DURATION", value_parser = relock_cli::shared::parse_duration, requires = "at_least")]
    at_most: Option<Duration>,
    /// Exit code when the lock could not be had in time (flock -E).
    #[arg(long, default_value_t = CONFLICT_EXIT)]
    conflict_exit_code: u8,
    /// Say nothing when the lock could not be had (for cron, which mails any output); errors
    /// are still printed.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// What to do with the command if the lock is lost while it runs.
    #[arg(long, value_enum, default_value_t = OnLost::Kill)]
    on_lost: OnLost,
    /// With --on-lost kill: how long after SIGTERM to send SIGKILL.
    #[arg(long, value_parser = relock_cli::shared::parse_duration, default_value = "10s")]
    kill_after: Duration,
    /// Run this through `sh -c` (flock -c) instead of CMD ARGS.
    #[arg(long, short = 'c', conflicts_with = "command")]
    shell: Option<String>,
    /// Keep the command in relock's process group, so that it can read the terminal and gets
    /// the terminal's signals itself (like `timeout --foreground`). Then only the command, not
    /// the processes it started, is signalled when the lock is lost or relock is interrupted.
    #[arg(long)]
    foreground: bool,
    /// A name for this run, shown with its hold by `relock status` and in the conflict line
    /// of other runs (with this host and process id): letters, digits, `.`, `_`, `-`. Not with
    /// --quorum (a quorum's holds carry no name).
    #[arg(long = "name", value_name = "WHO", conflicts_with = "quorum")]
    client_name: Option<String>,
    /// The command and its arguments, after the name (`relock run NAME CMD ARGS`, as `flock
    /// FILE CMD ARGS`): everything after CMD is the command's. Options of relock go before
    /// NAME; `--` before CMD is allowed, and needed where CMD itself starts with `-`.
    // No `allow_hyphen_values`: a misspelled option of relock before CMD (`--no-wiat`) stays
    // a usage error instead of becoming the command.
    #[arg(trailing_var_arg = true, value_name = "CMD")]
    command: Vec<String>,
    /// `relock elect`: campaign in the election NAME with this value instead of locking.
    #[arg(skip)]
    election: Option<String>,
}

/// Options of `relock elect`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  relock elect scheduler --value \"$(hostname)\" ./scheduler   # lead, or wait as a standby
  relock elect --no-wait scheduler ./scheduler                 # exit 75 if another leads

Standbys wait in line (first come, first served); when the leader's command ends (or it is
interrupted) it resigns and the first standby leads at once; a crashed leader is replaced
when its lease ends (30 s). The command sees RELOCK_NAME, RELOCK_TERM (the term, strictly
increasing across leaders: pass it with every write only the leader may make), RELOCK_TOKEN
(the same) and RELOCK_OWNER. Exit codes as relock run: the command's own; 75 (or
--conflict-exit-code) when it did not lead in time; 76 when leadership was lost while the
command ran; 128+N when the command died of signal N; 1 on a relock error.")]
pub(crate) struct ElectArgs {
    /// The election's name (its lock is the fair lock NAME).
    name: String,
    /// The value this process states as leader (others read it with `relock status NAME`);
    /// default: HOSTNAME:PID.
    #[arg(long)]
    value: Option<String>,
    /// Redis URL; else RELOCK_URL, else REDIS_URL, else redis://127.0.0.1:6379.
    #[arg(long)]
    url: Option<String>,
    #[command(flatten)]
    tls: relock_cli::shared::TlsArgs,
    /// Give up after waiting this long to lead (e.g. 30s, 2m); default: wait forever.
    #[arg(long, value_parser = relock_cli::shared::parse_duration, conflicts_with = "no_wait")]
    wait: Option<Duration>,
    /// Do not wait: exit with the conflict code at once if another process leads.
    #[arg(long, short = 'n')]
    no_wait: bool,
    /// The leadership's watchdog lease (default 30s): how long leadership outlives a leader
    /// that is killed (SIGKILL, a crash) before the first standby takes over.
    #[arg(long, value_parser = relock_cli::shared::parse_duration)]
    watchdog_lease: Option<Duration>,
    /// Exit code when this process did not lead in time.
    #[arg(long, default_value_t = CONFLICT_EXIT)]
    conflict_exit_code: u8,
    /// Say nothing when this process did not lead in time; errors are still printed.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// What to do with the command if leadership is lost while it runs.
    #[arg(long, value_enum, default_value_t = OnLost::Kill)]
    on_lost: OnLost,
    /// With --on-lost kill: how long after SIGTERM to send SIGKILL.
    #[arg(long, value_parser = relock_cli::shared::parse_duration, default_value = "10s")]
    kill_after: Duration,
    /// Run this through `sh -c` instead of CMD ARGS.
    #[arg(long, short = 'c', conflicts_with = "command")]
    shell: Option<String>,
    /// Keep the command in relock's process group (see `relock run --help`).
    #[arg(long)]
    foreground: bool,
    /// A name for this run, shown with its hold by `relock status` and in the conflict line
    /// of other runs (with this host and process id): letters, digits, `.`, `_`, `-`.
    #[arg(long = "name", value_name = "WHO")]
    client_name: Option<String>,
    /// The command and its arguments, after the name.
    #[arg(trailing_var_arg = true, value_name = "CMD")]
    command: Vec<String>,
}

impl ElectArgs {
    /// `relock run`'s options for a campaign in the election.
    pub(crate) fn into_run(self) -> Args {
        let value = self.value.unwrap_or_else(|| {
            let host = std::env::var("HOSTNAME")
                .ok()
                .filter(|h| !h.is_empty())
                .or_else(|| {
                    std::fs::read_to_string("/etc/hostname")
                        .ok()
                        .map(|h| h.trim().to_string())
                })
                .unwrap_or_else(|| "localhost".into());
            format!("{host}:{}", std::process::id())
        });
        Args {
            name: self.name,
            url: self.url,
            tls: self.tls,
            wait: self.wait,
            no_wait: self.no_wait,
            lease: None,
            watchdog_lease: self.watchdog_lease,
            fair: false,
            spin: false,
            shared: false,
            permits: None,
            exclusive: false,
            quorum: Vec::new(),
            restart_quarantine: None,
            at_least: None,
            at_most: None,
            conflict_exit_code: self.conflict_exit_code,
            quiet: self.quiet,
            on_lost: self.on_lost,
            kill_after: self.kill_after,
            shell: self.shell,
            foreground: self.foreground,
            client_name: self.client_name,
            command: self.command,
            election: Some(value),
        }
    }
}

/// Runs the command under the lock; returns the process's exit code.
pub(crate) async fn run(args: Args) -> Result<u8, CliError> {
    let argv: Vec<String> = match (&args.shell, args.command.is_empty()) {
        (Some(s), _) => vec!["sh".into(), "-c".into(), s.clone()],
        (None, false) => args.command.clone(),
        (None, true) => {
            return Err(CliError::Failed(
                "no command to run: give it after the name (relock run NAME CMD ARGS) or with --shell 'CMD'".into(),
            ))
        }
    };
    if let Some(l) = args.watchdog_lease {
        // The library's limits, named by the flag (its own error names its builder).
        let least = if args.quorum.is_empty() {
            Duration::from_millis(30)
        } else {
            // Three of the quorum's 50 ms node timeouts.
            Duration::from_millis(150)
        };
        if l < least {
            return Err(CliError::Failed(format!(
                "--watchdog-lease {}: must be at least {}{}",
                humantime::format_duration(l),
                humantime::format_duration(least),
                if args.quorum.is_empty() {
                    ""
                } else {
                    " with --quorum (three node timeouts)"
                }
            )));
        }
    }
    // Before connecting: a usage mistake is named whether or not the server answers.
    if let Some(at_least) = args.at_least {
        let at_most = args.at_most.unwrap_or(DEFAULT_AT_MOST);
        if at_least > at_most {
            return Err(CliError::Failed(format!(
                "--at-least {} is longer than --at-most {}{}: the lock cannot be kept longer than a run may hold it; lower --at-least or raise --at-most",
                humantime::format_duration(at_least),
                humantime::format_duration(at_most),
                if args.at_most.is_none() { " (its default)" } else { "" },
            )));
        }
    }
    if !args.quorum.is_empty() && args.quorum.len() < 3 {
        return Err(CliError::Failed(format!(
            "--quorum needs at least 3 masters, got {}: a majority of 1 or 2 is no safer than one server (use --url)",
            args.quorum.len()
        )));
    }
    let (target, shutdown) = if args.quorum.is_empty() {
        let mut builder = relock::Client::builder().url(resolve_url(args.url.clone()));
        if let Some(l) = args.watchdog_lease {
            builder = builder.watchdog_lease(l);
        }
        if let Some(n) = &args.client_name {
            builder = builder.client_name(n.clone());
        }
        let client = args.tls.build(builder).await?;
        match one_server_target(&args, &client).await {
            Ok(target) => (target, Shutdown::Single(client)),
            Err(e) => {
                client.shutdown().await;
                return Err(e);
            }
        }
    } else {
        let mut builder = relock::QuorumClient::builder().urls(args.quorum.clone());
        if let Some(q) = args.restart_quarantine {
            builder = builder.restart_quarantine(q);
        }
        if let Some(l) = args.watchdog_lease {
            builder = builder.watchdog_lease(l);
        }
        let client = args.tls.build_quorum(builder).await?;
        let lock = client.lock(&args.name);
        let lock = match args.lease {
            Some(l) => lock.with_lease(l),
            None => lock,
        };
        (Target::Lock(Box::new(lock), None), Shutdown::Quorum(client))
    };
    let code = hold_and_run(&args, &argv, &target).await;
    shutdown.run().await;
    code
}

/// What `run` holds on one server: a permit (`--permits`), a side of the read-write lock
/// (`-s`, `-x`), or the plain, fair or spin lock (whose status names its holder in a
/// conflict).
async fn one_server_target(args: &Args, client: &relock::Client) -> Result<Target, CliError> {
    if let Some(value) = &args.election {
        return Ok(Target::Election(client.election(&args.name), value.clone()));
    }
    if let Some(at_least) = args.at_least {
        let at_most = args.at_most.unwrap_or(DEFAULT_AT_MOST);
        let job = client.job(&args.name, at_most).at_least_for(at_least);
        return Ok(Target::Job(job));
    }
    if let Some(n) = args.permits {
        let sem = client.permit_expirable_semaphore(&args.name);
        sem.try_set_permits(n).await?;
        return Ok(Target::Permits(sem));
    }
    if args.shared || args.exclusive {
        let rw = client.read_write_lock(&args.name);
        let lock: Box<dyn DistributedLock> = match (args.shared, args.lease) {
            (true, Some(l)) => Box::new(rw.read_lock().with_lease(l)),
            (true, None) => Box::new(rw.read_lock()),
            (false, Some(l)) => Box::new(rw.write_lock().with_lease(l)),
            (false, None) => Box::new(rw.write_lock()),
        };
        return Ok(Target::Lock(lock, None));
    }
    let lock = if args.fair {
        client.fair_lock(&args.name)
    } else if args.spin {
        client.spin_lock(&args.name)
    } else {
        client.lock(&args.name)
    };
    let held = match args.lease {
        Some(l) => lock.clone().with_lease(l),
        None => lock.clone(),
    };
    Ok(Target::Lock(Box::new(held), Some(lock)))
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

/// What `run` holds while the command runs: a lock, or a permit of a semaphore.
enum Target {
    /// The lock, and the plain, fair or spin lock's handle for its status.
    Lock(Box<dyn DistributedLock>, Option<relock::Lock>),
    Permits(relock::PermitSemaphore),
    /// A run-at-most-once job (`--at-least`).
    Job(relock::Job),
    /// A campaign in an election (`relock elect`), with the value to state.
    Election(relock::Election, String),
}

/// `--at-most` when not given.
const DEFAULT_AT_MOST: Duration = Duration::from_secs(3600);

/// A lock's guard or a permit's.
enum Held {
    Lock(relock::LockGuard),
    Permit(relock::PermitGuard),
    Job(relock::JobGuard),
    Leader(relock::Leadership),
}

impl Target {
    async fn take(&self, args: &Args) -> relock::Result<Option<Held>> {
        match self {
            Target::Lock(lock, _) => Ok(if args.no_wait {
                lock.try_lock().await?
            } else if let Some(w) = args.wait {
                lock.try_lock_for(w).await?
            } else {
                Some(lock.lock().await?)
            }
            .map(Held::Lock)),
            Target::Permits(sem) => Ok(if args.no_wait {
                sem.try_acquire(args.lease).await?
            } else if let Some(w) = args.wait {
                sem.try_acquire_for(w, args.lease).await?
            } else {
                Some(sem.acquire(args.lease).await?)
            }
            .map(Held::Permit)),
            Target::Job(job) => Ok(if args.no_wait {
                job.try_start().await?
            } else if let Some(w) = args.wait {
                job.try_start_for(w).await?
            } else {
                Some(job.start().await?)
            }
            .map(Held::Job)),
            Target::Election(election, value) => Ok(if args.no_wait {
                election.try_campaign(value.as_str()).await?
            } else if let Some(w) = args.wait {
                election.campaign_for(w, value.as_str()).await?
            } else {
                Some(election.campaign(value.as_str()).await?)
            }
            .map(Held::Leader)),
        }
    }

    /// Who holds it now, for the conflict message: ", held by FIELD (relock), its lease ends
    /// in 12.3s"; empty when that cannot be read.
    async fn holder(&self) -> String {
        let lock = match self {
            Target::Lock(_, lock) => lock.as_ref(),
            Target::Job(job) => Some(job.lock()),
            Target::Permits(_) => None,
            Target::Election(election, _) => {
                return match election.leader().await {
                    Ok(Some(l)) => format!(
                        ": led by {} (value {:?}), term {}",
                        l.owner, l.value, l.term
                    ),
                    _ => String::new(),
                }
            }
        };
        match (self, lock) {
            (_, Some(lock)) => match lock.status().await {
                Ok(st) if !st.holders.is_empty() => {
                    let mut who: Vec<String> = Vec::new();
                    for h in &st.holders {
                        let named = relock_cli::shared::owner_words(lock, &h.field).await;
                        who.push(format!("{} ({}){named}", h.field, layout_name(h.layout)));
                    }
                    let lease = match st.pttl_ms {
                        Some(ms) if ms >= 0 => format!(
                            ", its lease ends in {} unless its holder renews it",
                            humantime::format_duration(Duration::from_secs(
                                (ms as u64).div_ceil(1000)
                            ))
                        ),
                        Some(_) => ", with no expiry".to_string(),
                        None => String::new(),
                    };
                    format!(": held by {}{lease}", who.join(", "))
                }
                _ => String::new(),
            },
            (Target::Permits(sem), _) => match sem.available().await {
                Ok(n) => format!(": {n} of its permits available"),
                Err(_) => String::new(),
            },
            _ => String::new(),
        }
    }
}

impl Held {
    /// The variables the command sees beside RELOCK_NAME.
    fn env(&self) -> Vec<(&'static str, String)> {
        match self {
            Held::Lock(g) => vec![
                ("RELOCK_TOKEN", g.fencing_token().to_string()),
                ("RELOCK_OWNER", g.owner().to_string()),
            ],
            Held::Job(g) => vec![
                ("RELOCK_TOKEN", g.fencing_token().to_string()),
                ("RELOCK_OWNER", g.owner().to_string()),
            ],
            Held::Leader(l) => vec![
                ("RELOCK_TERM", l.term().to_string()),
                ("RELOCK_TOKEN", l.term().to_string()),
                ("RELOCK_OWNER", l.lock_guard().owner().to_string()),
            ],
            // A permit has no fencing token: its id is what Redisson's release(id) takes.
            Held::Permit(p) => vec![("RELOCK_PERMIT_ID", p.id().to_string())],
        }
    }

    async fn lost(&self) {
        match self {
            Held::Lock(g) => g.lost().await,
            Held::Permit(p) => p.lost().await,
            Held::Job(g) => g.lost().await,
            Held::Leader(l) => l.lost().await,
        }
    }
}

async fn hold_and_run(args: &Args, argv: &[String], target: &Target) -> Result<u8, CliError> {
    let mut signals = Signals::new()?;
    let acquire = target.take(args);
    let guard = tokio::select! {
        r = acquire => r?,
        sig = signals.next() => {
            // Interrupted while waiting: nothing is held (a grant arriving now is released by
            // the client's shutdown).
            return Ok(128 + sig as u8);
        }
    };
    let Some(guard) = guard else {
        if args.quiet {
            return Ok(args.conflict_exit_code);
        }
        let holder = target.holder().await;
        say(format_args!(
            "`{}` is held by someone else{holder}{}",
            args.name,
            match args.wait {
                Some(w) if !args.no_wait => format!(" (waited {})", humantime::format_duration(w)),
                _ => String::new(),
            }
        ));
        return Ok(args.conflict_exit_code);
    };

    let mut command = tokio::process::Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .env("RELOCK_NAME", &args.name)
        .env("RELOCK_KIND", kind_of(args))
        .envs(guard.env());
    // A `relock write` or `relock status` in the command reaches the same server without a
    // `--url` of its own (the environment stays in this process tree, as a child's
    // environment does).
    if let Some(url) = &args.url {
        command.env("RELOCK_URL", url);
    }
    let mut tether = None;
    if !args.foreground {
        // Its own process group: a lost lock or a signal reaches every process the command
        // started, not only the command (whose children would otherwise go on writing
        // without the lock); and a terminal's Ctrl-C reaches it once, through relock.
        command.process_group(0);
        // Started before the command, so that no command runs unguarded.
        match crate::tether::Tether::start() {
            Ok(t) => tether = Some(t),
            Err(e) => {
                say(format_args!(
                    "cannot start the guard that ends the command if relock dies (/bin/sh): {e}"
                ));
                release(guard, &args.name).await;
                return Err(CliError::Failed("the command was not run".into()));
            }
        }
    }
    // The command dies with relock, however relock ends (tether.rs).
    crate::tether::tie(&mut command, tether.as_ref());
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            // A guard that is gone refused the command's announcement (EPIPE) or has exited.
            let guard_gone = tether
                .as_mut()
                .is_some_and(|t| e.raw_os_error() == Some(nix::libc::EPIPE) || t.is_gone());
            // `done` before anything that can block (a full stderr): the command's process
            // may have announced its pid before its exec failed, and that pid is free again.
            if let Some(t) = tether {
                t.release().await;
            }
            if guard_gone {
                say(format_args!(
                    "the guard that ends the command if relock dies is gone; `{}` was not run",
                    argv[0]
                ));
            } else {
                say(format_args!("cannot run `{}`: {e}", argv[0]));
            }
            release(guard, &args.name).await;
            if guard_gone {
                return Err(CliError::Failed("the command was not run".into()));
            }
            // As a shell reports it: 127 not found, 126 found but not runnable.
            return Ok(if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            });
        }
    };
    let target = child.id().map(|id| {
        let pid = id as i32;
        Pid::from_raw(if args.foreground { pid } else { -pid })
    });
    let signal = |sig: Signal| {
        if let Some(t) = target {
            let _ = kill(t, sig);
        }
    };

    let mut lost = false;
    // When SIGKILL follows the SIGTERM of a lost lock.
    let mut kill_at: Option<Instant> = None;
    let status = loop {
        tokio::select! {
            s = child.wait() => break s,
            // Forward, then keep waiting for the command: it decides how to stop.
            sig = signals.next() => signal(sig),
            _ = guard.lost(), if !lost => {
                lost = true;
                say(format_args!("the lock `{}` was lost while the command ran", args.name));
                if args.on_lost != OnLost::Ignore {
                    signal(Signal::SIGTERM);
                }
                if args.on_lost == OnLost::Kill {
                    kill_at = Some(Instant::now() + args.kill_after);
                }
            }
            _ = tokio::time::sleep_until(kill_at.unwrap_or_else(Instant::now)), if kill_at.is_some() => {
                kill_at = None;
                signal(Signal::SIGKILL);
            }
        }
    }
    .map_err(|e| CliError::Failed(format!("waiting for `{}`: {e}", argv[0])))?;
    if !args.foreground && (lost && args.on_lost == OnLost::Kill) {
        // The command is gone; what it started must not run on without the lock. Before the
        // guard is released, so that a relock killed in between still leaves nothing running.
        signal(Signal::SIGKILL);
    }
    if let Some(t) = tether {
        t.release().await;
    }

    release(guard, &args.name).await;
    Ok(if lost { LOST_EXIT } else { exit_code(status) })
}

/// What the command holds, as RELOCK_KIND tells it (and `relock write`, which writes only
/// under an exclusive hold on one server).
fn kind_of(args: &Args) -> &'static str {
    if !args.quorum.is_empty() {
        "quorum"
    } else if args.permits.is_some() {
        "permit"
    } else if args.election.is_some() {
        "leader"
    } else if args.at_least.is_some() {
        "job"
    } else if args.shared {
        "read"
    } else if args.exclusive {
        "write"
    } else if args.fair {
        "fair"
    } else if args.spin {
        "spin"
    } else {
        "lock"
    }
}

/// Released before `relock` exits, so the next holder need not wait for a lease.
async fn release(guard: Held, name: &str) {
    let r = match guard {
        Held::Lock(g) => g.unlock().await,
        Held::Permit(p) => p.release().await,
        // Kept for what is left of --at-least, or released.
        Held::Job(g) => g.finish().await,
        // Observers are told, then the first standby leads.
        Held::Leader(l) => l.resign().await,
    };
    if let Err(e) = r {
        if !matches!(
            e,
            relock::Error::LockLost { .. } | relock::Error::PermitLost { .. }
        ) {
            say(format_args!("releasing `{name}`: {e}"));
        }
    }
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

/// SIGINT, SIGTERM, SIGHUP and SIGQUIT, as they arrive (each is forwarded to the command; none
/// may kill relock while it holds the lock, or the lock would outlive it).
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    quit: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> Result<Self, CliError> {
        use tokio::signal::unix::{signal, SignalKind};
        let err = |e: std::io::Error| CliError::Failed(format!("cannot handle signals: {e}"));
        Ok(Signals {
            int: signal(SignalKind::interrupt()).map_err(err)?,
            term: signal(SignalKind::terminate()).map_err(err)?,
            hup: signal(SignalKind::hangup()).map_err(err)?,
            quit: signal(SignalKind::quit()).map_err(err)?,
        })
    }

    async fn next(&mut self) -> Signal {
        tokio::select! {
            _ = self.int.recv() => Signal::SIGINT,
            _ = self.term.recv() => Signal::SIGTERM,
            _ = self.hup.recv() => Signal::SIGHUP,
            _ = self.quit.recv() => Signal::SIGQUIT,
        }
    }
}
