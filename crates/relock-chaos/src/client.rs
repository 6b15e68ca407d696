//! One client process: acquire, guarded (or fenced) read-modify-write, release, in a loop, recording every
//! step (the sem kind: take a permit, work, give it back). It stops on SIGTERM: the loop ends, the hold (if any) is released, the client shuts
//! down, and the process exits 0. Being a process of its own, a SIGSTOP freezes it whole,
//! watchdog included, as a GC pause or a stalled VM would.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use relock::{DistributedLock, LockGuard};
use tokio::sync::Mutex;

use crate::history::{self, Op, Recorder};
use crate::kind::Kind;
use crate::resource::Resource;

/// `relock-chaos client …` (started by the harness, not by hand).
#[derive(Debug, Clone, clap::Args)]
pub struct ClientArgs {
    /// This client's number (its relock client id is `chaos-<n>`).
    #[arg(long)]
    pub id: u32,
    #[arg(long, value_enum)]
    pub kind: Kind,
    /// The lock server URL; repeated for the quorum kind.
    #[arg(long = "url", required = true)]
    pub urls: Vec<String>,
    /// The fenced resource's URL.
    #[arg(long)]
    pub resource: String,
    /// Lock names, comma separated.
    #[arg(long, value_delimiter = ',')]
    pub names: Vec<String>,
    /// The history file to write.
    #[arg(long)]
    pub out: PathBuf,
    /// The watchdog lease.
    #[arg(long, default_value_t = 2000)]
    pub lease_ms: u64,
    /// How long one acquire waits before giving up (recorded as a failure).
    #[arg(long, default_value_t = 10_000)]
    pub wait_ms: u64,
    /// The critical section's work between the read and the write: 0..=this many ms.
    #[arg(long, default_value_t = 2)]
    pub work_ms: u64,
    /// This percentage of sections are slow: 20..=60 ms of work (renewals and pauses then
    /// land inside sections too).
    #[arg(long, default_value_t = 3)]
    pub slow_pct: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Keep no log of accepted writes on the guarded resource (the resource soak, where a log
    /// growing with every write would hide what the soak looks for; nothing judges it there).
    #[arg(long)]
    pub no_log: bool,
    /// A deliberately broken relock (needs the `chaos-mutants` feature).
    #[arg(long)]
    pub mutant: Option<String>,
}

enum Locks {
    Single(relock::Client, Kind),
    Quorum(relock::QuorumClient),
}

impl Locks {
    /// The lock called `name`; for the rw kind, its read side if `read`, else its write side.
    fn lock(&self, name: &str, read: bool) -> Box<dyn DistributedLock> {
        match self {
            Locks::Single(c, Kind::Fair) => Box::new(c.fair_lock(name)),
            Locks::Single(c, Kind::Spin) => Box::new(c.spin_lock(name)),
            Locks::Single(c, Kind::Rw) if read => Box::new(c.read_write_lock(name).read_lock()),
            Locks::Single(c, Kind::Rw) => Box::new(c.read_write_lock(name).write_lock()),
            Locks::Single(c, _) => Box::new(c.lock(name)),
            Locks::Quorum(q) => Box::new(q.lock(name)),
        }
    }

    /// The election called `name` (the election kind).
    fn election(&self, name: &str) -> Option<relock::Election> {
        match self {
            Locks::Single(c, Kind::Election) => Some(c.election(name)),
            _ => None,
        }
    }

    /// The job called `name` (the job kind): runs hold it at most twice the lease, and keep it
    /// [`JOB_AT_LEAST`](crate::kind::JOB_AT_LEAST) after an early finish.
    fn job(&self, name: &str, lease_ms: u64) -> Option<relock::Job> {
        match self {
            Locks::Single(c, Kind::Job) => Some(
                c.job(name, Duration::from_millis(2 * lease_ms))
                    .at_least_for(crate::kind::JOB_AT_LEAST),
            ),
            _ => None,
        }
    }

    /// The semaphore called `name` (the sem kind).
    fn semaphore(&self, name: &str) -> Option<relock::Semaphore> {
        match self {
            Locks::Single(c, Kind::Sem) => Some(c.semaphore(name)),
            _ => None,
        }
    }

    /// The rate limiter called `name` (the rate kind).
    fn limiter(&self, name: &str) -> Option<relock::RateLimiter> {
        match self {
            Locks::Single(c, Kind::Rate) => Some(c.rate_limiter(name)),
            _ => None,
        }
    }

    async fn shutdown(&self) {
        match self {
            Locks::Single(c, _) => c.shutdown().await,
            Locks::Quorum(q) => q.shutdown().await,
        }
    }
}

pub fn main(args: ClientArgs) -> i32 {
    // RELOCK_CHAOS_LOG (an env filter, e.g. `relock=debug`) logs the client's relock to its
    // client-N.log, for finding out why a verdict failed.
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("RELOCK_CHAOS_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(false)
            .with_writer(std::io::stderr)
            .init();
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    rt.block_on(run(args))
}

fn activate_mutant(name: Option<&str>) -> Result<(), String> {
    let Some(name) = name else { return Ok(()) };
    #[cfg(feature = "chaos-mutants")]
    {
        let m = crate::mutant::Mutant::from_name(name)
            .ok_or_else(|| format!("unknown mutant {name:?}"))?;
        crate::mutant::activate(m);
        Ok(())
    }
    #[cfg(not(feature = "chaos-mutants"))]
    Err(format!(
        "mutant {name:?} needs a build with `--features chaos-mutants`"
    ))
}

async fn run(args: ClientArgs) -> i32 {
    if let Err(e) = activate_mutant(args.mutant.as_deref()) {
        eprintln!("relock-chaos client {}: {e}", args.id);
        return 2;
    }
    let mut rec = match Recorder::create(&args.out, args.id) {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "relock-chaos client {}: {}: {e}",
                args.id,
                args.out.display()
            );
            return 2;
        }
    };
    let client_id = format!("chaos-{}", args.id);
    let lease = Duration::from_millis(args.lease_ms);
    let locks = match connect(&args, &client_id, lease).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("relock-chaos client {}: connect: {e}", args.id);
            return 3;
        }
    };
    // The sem kind's semaphores get their permits: only the first client's call sets them.
    for name in args.names.iter().filter(|_| args.kind == Kind::Sem) {
        if let Err(e) = set_permits(&locks, name).await {
            eprintln!(
                "relock-chaos client {}: set permits of {name}: {e}",
                args.id
            );
            return 3;
        }
    }
    // The rate kind's limiters get their rate: only the first client's call sets it.
    for name in args.names.iter().filter(|_| args.kind == Kind::Rate) {
        if let Err(e) = set_rate(&locks, name).await {
            eprintln!("relock-chaos client {}: set rate of {name}: {e}", args.id);
            return 3;
        }
    }
    let resource = match Resource::connect(&args.resource).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("relock-chaos client {}: resource: {e}", args.id);
            return 3;
        }
    };
    // Before the start is recorded: the harness may signal a started client at once.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("a SIGTERM handler");
    let mut usr1 = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1())
        .expect("a SIGUSR1 handler");
    rec.record(
        "",
        Op::Start {
            id: client_id,
            pid: std::process::id(),
        },
    );
    let rec = Arc::new(Mutex::new(rec));
    let rng = fastrand::Rng::with_seed(args.seed ^ (u64::from(args.id) << 32));
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    let work = Cycle {
        args: &args,
        locks: &locks,
        resource: &resource,
        rec: &rec,
        rng: std::sync::Mutex::new(rng),
        stop,
    };
    // SIGTERM ends a wait at once, but a section that holds the lock runs to its recorded
    // release, so the history has an end for every hold.
    // The harness ends a client with SIGTERM; if the harness itself dies first, the client
    // is re-parented: it stops then too, rather than run on against servers that are gone.
    let parent = nix::unistd::getppid();
    let stats = args.out.with_extension("stats");
    tokio::join!(work.forever(), async {
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        loop {
            tokio::select! {
                _ = term.recv() => break,
                _ = usr1.recv() => PAUSE_MID_SECTION.store(true, std::sync::atomic::Ordering::SeqCst),
                _ = tick.tick() => {
                    if nix::unistd::getppid() != parent { break }
                    write_stats(&stats);
                }
            }
        }
        let _ = stop_tx.send(true);
    });
    locks.shutdown().await;
    resource.quit().await;
    0
}

/// This process's runtime as the resource soak samples it: its live tokio tasks, written to
/// `path` (replaced whole, so a reader never sees half of it).
fn write_stats(path: &std::path::Path) {
    let tasks = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    let tmp = path.with_extension("stats.tmp");
    if std::fs::write(&tmp, format!("{{\"tasks\":{tasks}}}")).is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
}

async fn connect(args: &ClientArgs, client_id: &str, lease: Duration) -> relock::Result<Locks> {
    let timeout = Duration::from_secs(1);
    Ok(match args.kind {
        Kind::Quorum => Locks::Quorum(
            relock::QuorumClient::builder()
                .urls(args.urls.iter())
                .client_id(client_id)
                .watchdog_lease(lease)
                .build()
                .await?,
        ),
        kind => Locks::Single(
            relock::Client::builder()
                .url(args.urls[0].clone())
                .client_id(client_id)
                .watchdog_lease(lease)
                .command_timeout(timeout)
                .build()
                .await?,
            kind,
        ),
    })
}

/// `try_set_permits(SEM_PERMITS)` on `name`, tried a few times (it only sets a missing key,
/// so a retry is harmless).
async fn set_permits(locks: &Locks, name: &str) -> relock::Result<()> {
    let sem = locks.semaphore(name).expect("the sem kind");
    let mut tries = 0;
    loop {
        match sem.try_set_permits(crate::kind::SEM_PERMITS).await {
            Ok(_) => return Ok(()),
            Err(e) if tries >= 5 => return Err(e),
            Err(_) => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// `try_set_rate` of the rate kind's limit on `name`, tried a few times (it only sets a
/// missing rate, so a retry is harmless).
async fn set_rate(locks: &Locks, name: &str) -> relock::Result<()> {
    let limiter = locks.limiter(name).expect("the rate kind");
    let (permits, interval) = Kind::Rate.rate().expect("the rate kind has a rate");
    let mut tries = 0;
    loop {
        match limiter
            .try_set_rate(relock::RateType::Overall, permits, interval)
            .await
        {
            Ok(_) => return Ok(()),
            Err(e) if tries >= 5 => return Err(e),
            Err(_) => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Set by SIGUSR1 (the pause-mid-section nemesis): the next section stops this process with
/// SIGSTOP right after its read, as a GC pause in the middle of the work would.
static PAUSE_MID_SECTION: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The percentage of the rw kind's cycles that take the read side.
const READ_PCT: u64 = 30;

/// The percentage of the rate kind's cycles that wait for a permit (`try_acquire_for`).
const RATE_WAIT_PCT: u64 = 30;

struct Cycle<'a> {
    args: &'a ClientArgs,
    locks: &'a Locks,
    resource: &'a Resource,
    rec: &'a Mutex<Recorder>,
    rng: std::sync::Mutex<fastrand::Rng>,
    stop: tokio::sync::watch::Receiver<bool>,
}

impl Cycle<'_> {
    async fn record(&self, name: &str, op: Op) {
        self.rec.lock().await.record(name, op);
    }

    async fn forever(&self) {
        while !*self.stop.borrow() {
            let name = {
                let mut rng = self.rng.lock().unwrap();
                self.args.names[rng.usize(..self.args.names.len())].clone()
            };
            self.once(&name).await;
        }
    }

    async fn once(&self, name: &str) {
        if let Some(sem) = self.locks.semaphore(name) {
            return self.once_sem(name, &sem).await;
        }
        if let Some(election) = self.locks.election(name) {
            return self.once_term(name, &election).await;
        }
        if let Some(job) = self.locks.job(name, self.args.lease_ms) {
            return self.once_run(name, &job).await;
        }
        if let Some(limiter) = self.locks.limiter(name) {
            return self.once_rate(name, &limiter).await;
        }
        // The rw kind takes the read side in 30% of its cycles, the write side otherwise.
        let read = self.args.kind == Kind::Rw && self.rng.lock().unwrap().u64(..100) < READ_PCT;
        let lock = self.locks.lock(name, read);
        self.record(name, Op::Acquire).await;
        let wait = Duration::from_millis(self.args.wait_ms);
        let mut stop = self.stop.clone();
        let acquire = tokio::select! {
            r = lock.try_lock_for(wait) => r,
            _ = stop.wait_for(|s| *s) => {
                let error = "stopped".to_owned();
                self.record(name, Op::AcquireFailed { error }).await;
                return;
            }
        };
        let guard = match acquire {
            Ok(Some(g)) => g,
            Ok(None) => {
                let error = "timeout".to_owned();
                self.record(name, Op::AcquireFailed { error }).await;
                return;
            }
            Err(e) => {
                self.record(
                    name,
                    Op::AcquireFailed {
                        error: e.to_string(),
                    },
                )
                .await;
                // Do not spin on a server that is down.
                tokio::time::sleep(Duration::from_millis(20)).await;
                return;
            }
        };
        let token = self.held(name, &guard, read).await;
        let r = guard.unlock().await;
        self.released(name, token, r).await;
    }

    /// A hold's life once acquired, whatever kind made it: recorded, the section with its loss
    /// watched, the release's invocation recorded. Returns the hold's token.
    async fn held(&self, name: &str, guard: &LockGuard, read: bool) -> u64 {
        let token = guard.fencing_token();
        let valid_until = history::at(guard.valid_until());
        self.record(
            name,
            Op::Acquired {
                token,
                valid_until,
                read,
            },
        )
        .await;
        let done = tokio::sync::Notify::new();
        let watch_lost = async {
            tokio::select! {
                _ = guard.lost() => self.record(name, Op::Lost { token }).await,
                _ = done.notified() => {}
            }
        };
        let section = async {
            self.section(name, guard, read).await;
            done.notify_one();
        };
        tokio::join!(section, watch_lost);
        let valid_until = history::at(guard.valid_until());
        self.record(name, Op::Release { token, valid_until }).await;
        token
    }

    /// Records how the release of the hold `token` went.
    async fn released(&self, name: &str, token: u64, r: relock::Result<()>) {
        match r {
            Ok(()) => self.record(name, Op::Released { token }).await,
            Err(e) => {
                let error = e.to_string();
                self.record(name, Op::ReleaseFailed { token, error }).await
            }
        }
    }

    /// The job kind's cycle: try to run the occurrence without waiting (skip if it is taken),
    /// run the fenced read-modify-write, finish (kept until the at-least time).
    async fn once_run(&self, name: &str, job: &relock::Job) {
        let asked = tokio::time::Instant::now();
        self.record(name, Op::Acquire).await;
        let run = match job.try_start().await {
            Ok(Some(run)) => run,
            Ok(None) => {
                let error = "skipped".to_owned();
                self.record(name, Op::AcquireFailed { error }).await;
                // The next "scheduler tick" of this client.
                let tick = self.rng.lock().unwrap().u64(5..=30);
                tokio::time::sleep(Duration::from_millis(tick)).await;
                return;
            }
            Err(e) => {
                let error = e.to_string();
                self.record(name, Op::AcquireFailed { error }).await;
                tokio::time::sleep(Duration::from_millis(20)).await;
                return;
            }
        };
        let token = self.held(name, &run, false).await;
        let kept = !run.kept_for().is_zero() && !run.is_lost();
        let r = run.finish().await;
        let finished = r.is_ok();
        self.released(name, token, r).await;
        if finished && kept {
            // Taken at least until the at-least time after the acquire was asked for (a
            // conservative start: the server granted it later).
            let until = history::at((asked + crate::kind::JOB_AT_LEAST).into_std());
            self.record(name, Op::Kept { token, until }).await;
        }
    }

    /// The election kind's cycle: campaign (a standby waits in line), lead one term (the
    /// fenced read-modify-write with the term as its token), resign.
    async fn once_term(&self, name: &str, election: &relock::Election) {
        self.record(name, Op::Acquire).await;
        let wait = Duration::from_millis(self.args.wait_ms);
        let mut stop = self.stop.clone();
        let value = format!("client-{}", self.args.id);
        let campaign = tokio::select! {
            r = election.campaign_for(wait, value) => r,
            _ = stop.wait_for(|s| *s) => {
                let error = "stopped".to_owned();
                self.record(name, Op::AcquireFailed { error }).await;
                return;
            }
        };
        let leader = match campaign {
            Ok(Some(l)) => l,
            Ok(None) => {
                let error = "timeout".to_owned();
                self.record(name, Op::AcquireFailed { error }).await;
                return;
            }
            Err(e) => {
                let error = e.to_string();
                self.record(name, Op::AcquireFailed { error }).await;
                tokio::time::sleep(Duration::from_millis(20)).await;
                return;
            }
        };
        let token = self.held(name, leader.lock_guard(), false).await;
        let r = leader.resign().await;
        self.released(name, token, r).await;
    }

    /// The rate kind's cycle: take one permit, recorded as granted with the times its call was
    /// sent and its reply received (the server granted it in between). Most cycles ask once
    /// and, refused, try again a few ms later, so that a grant's times are one round trip
    /// apart; the others wait with `try_acquire_for` (whose grant may be at any of its
    /// attempts). A limiter the server forgot (restarted empty) gets its rate again.
    async fn once_rate(&self, name: &str, limiter: &relock::RateLimiter) {
        let waits = self.rng.lock().unwrap().u64(..100) < RATE_WAIT_PCT;
        self.record(name, Op::Acquire).await;
        let sent = history::now();
        let mut stop = self.stop.clone();
        let acquire = async {
            if waits {
                limiter
                    .try_acquire_for(1, Duration::from_millis(self.args.wait_ms))
                    .await
            } else {
                limiter.try_acquire(1).await
            }
        };
        let acquire = tokio::select! {
            r = acquire => r,
            _ = stop.wait_for(|s| *s) => {
                let error = "stopped".to_owned();
                self.record(name, Op::AcquireFailed { error }).await;
                return;
            }
        };
        let replied = history::now();
        let error = match &acquire {
            Ok(true) => {
                let granted = Op::Granted { sent };
                self.rec.lock().await.record_at(replied, name, granted);
                return;
            }
            Ok(false) => "refused".to_owned(),
            Err(e) => e.to_string(),
        };
        self.record(name, Op::AcquireFailed { error }).await;
        if matches!(acquire, Err(relock::Error::RateNotSet { .. })) {
            let _ = set_rate(self.locks, name).await;
        }
        // Ask again soon (or, on an error, do not spin on a server that is down).
        let pause = if acquire.is_err() {
            20
        } else {
            self.rng.lock().unwrap().u64(2..=10)
        };
        tokio::time::sleep(Duration::from_millis(pause)).await;
    }

    /// The sem kind's cycle: take one permit, work, give it back. A permit has no token and
    /// no lease (the hold is recorded with token 0, valid for ever), so there is nothing to
    /// fence: the section only works for its time.
    async fn once_sem(&self, name: &str, sem: &relock::Semaphore) {
        self.record(name, Op::Acquire).await;
        let wait = Duration::from_millis(self.args.wait_ms);
        let mut stop = self.stop.clone();
        let acquire = tokio::select! {
            r = sem.try_acquire_for(1, wait) => r,
            _ = stop.wait_for(|s| *s) => {
                let error = "stopped".to_owned();
                self.record(name, Op::AcquireFailed { error }).await;
                return;
            }
        };
        let permit = match acquire {
            Ok(Some(permit)) => permit,
            Ok(None) => {
                let error = "timeout".to_owned();
                self.record(name, Op::AcquireFailed { error }).await;
                return;
            }
            Err(e) => {
                let error = e.to_string();
                self.record(name, Op::AcquireFailed { error }).await;
                // Do not spin on a server that is down.
                tokio::time::sleep(Duration::from_millis(20)).await;
                return;
            }
        };
        let (token, valid_until) = (0, history::Nanos::MAX);
        self.record(
            name,
            Op::Acquired {
                token,
                valid_until,
                read: false,
            },
        )
        .await;
        let work = self.work_ms();
        if work > 0 {
            tokio::time::sleep(Duration::from_millis(work)).await;
        }
        self.record(name, Op::Release { token, valid_until }).await;
        // An error leaves the release's outcome unknown: recorded, never retried (a second
        // release could create a permit).
        match permit.release().await {
            Ok(()) => self.record(name, Op::Released { token }).await,
            Err(e) => {
                let error = e.to_string();
                self.record(name, Op::ReleaseFailed { token, error }).await
            }
        }
    }

    /// A section's work, ms: 0..=`work_ms`, or 20..=60 in `slow_pct`% of sections.
    fn work_ms(&self) -> u64 {
        let mut rng = self.rng.lock().unwrap();
        if rng.u64(..100) < self.args.slow_pct {
            rng.u64(20..=60)
        } else {
            rng.u64(..=self.args.work_ms)
        }
    }

    /// Read, work, write: the read-modify-write, guarded by the hold on the lock's server or
    /// fenced by its token on the resource's (see `resource`). A read hold (`read`) only reads
    /// (a guarded read, or the shared fenced read) and works.
    async fn section(&self, name: &str, guard: &LockGuard, read: bool) {
        let token = guard.fencing_token();
        let guarded = self.args.kind.guarded();
        let value = if guarded {
            crate::resource::guarded::read(guard, name).await
        } else if read {
            self.resource.read_shared(name, token).await
        } else {
            self.resource.read(name, token).await
        };
        let value = match value {
            Ok(v) => v,
            Err(error) => {
                self.record(name, Op::ResourceError { token, error }).await;
                return;
            }
        };
        self.record(name, Op::Read { token, value }).await;
        if PAUSE_MID_SECTION.swap(false, std::sync::atomic::Ordering::SeqCst) {
            // The harness asked for it (SIGUSR1) and SIGCONTs this process after the lease.
            let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGSTOP);
            // The work goes on for half a lease after the pause, as it would: long enough for
            // the watchdog, due since the pause, to learn that the hold is gone (or, broken,
            // to put it back) before the write.
            tokio::time::sleep(Duration::from_millis(self.args.lease_ms / 2)).await;
        }
        let Some(value) = value else { return };
        let work = self.work_ms();
        if work > 0 {
            tokio::time::sleep(Duration::from_millis(work)).await;
        }
        if read {
            return;
        }
        let written = if guarded {
            let client = (!self.args.no_log).then_some(self.args.id);
            crate::resource::guarded::write(guard, name, token, value + 1, client).await
        } else {
            self.resource
                .write(name, token, value + 1, self.args.id)
                .await
        };
        match written {
            Ok(accepted) => {
                self.record(
                    name,
                    Op::Write {
                        token,
                        value: value + 1,
                        accepted,
                    },
                )
                .await
            }
            Err(error) => self.record(name, Op::ResourceError { token, error }).await,
        }
    }
}
