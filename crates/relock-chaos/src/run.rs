//! One segment of a run: start the servers for a lock kind, start the client processes, apply
//! the nemeses in turn, stop everything, and check the merged history.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use relock_testkit::RedisServer;
use serde::Serialize;

use crate::check::{self, Fencing, Leaks, Liveness, Params, Verdict, Window};
use crate::history::{self, Op};
use crate::kind::Kind;
use crate::nemesis::{self, Nemesis, Target};
use crate::topology::{self, Topology};

/// What one segment runs.
#[derive(Debug, Clone)]
pub struct Segment {
    pub kind: Kind,
    /// Applied in this order, `rounds` times over (the soak repeats; CI runs each once).
    pub nemeses: Vec<Nemesis>,
    pub rounds: usize,
    /// Stop repeating once this many critical sections were recorded (0: run all rounds).
    pub min_sections: u64,
    pub clients: u32,
    pub names: Vec<String>,
    pub lease: Duration,
    /// The clients' `--work-ms`.
    pub work_ms: u64,
    /// Fault-free time before the first nemesis, and after each nemesis's aftermath (lease +
    /// 1 s after it heals): the checkers hold wake-ups to their strictest bound in it.
    pub healthy: Duration,
    pub seed: u64,
    pub mutant: Option<String>,
    /// Check after every nemesis and stop at the first violation (for mutants).
    pub stop_on_violation: bool,
    /// Stop repeating after this long.
    pub max_time: Option<Duration>,
}

/// The segment's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub kind: Kind,
    pub nemeses: Vec<String>,
    pub seed: u64,
    pub mutant: Option<String>,
    pub seconds: f64,
    /// Critical sections: holds whose fenced write was accepted.
    pub sections: u64,
    pub holds: u64,
    pub acquire_failures: u64,
    pub windows: Vec<Window>,
    /// Nemeses that could not run, and why.
    pub skipped: Vec<String>,
    pub exclusion: Verdict,
    pub fencing: Fencing,
    pub liveness: Liveness,
    pub leaks: Leaks,
    pub leak_verdict: Verdict,
    /// The run was cut short by SIGINT or SIGTERM.
    pub interrupted: bool,
}

impl Outcome {
    /// Whether a checker of the lock fired (exclusion, fencing or liveness; not the leak
    /// check): what a mutant must make happen to be caught.
    pub fn lock_violated(&self) -> bool {
        !self.exclusion.ok || !self.fencing.verdict.ok || !self.liveness.verdict.ok
    }

    /// Whether every required verdict passed.
    pub fn ok(&self) -> bool {
        self.exclusion.ok
            && self.fencing.verdict.ok
            && self.liveness.verdict.ok
            && self.leak_verdict.ok
    }
}

struct Clients {
    children: Vec<Child>,
    files: Vec<PathBuf>,
}

impl Clients {
    fn spawn(seg: &Segment, urls: &[String], resource: &str, dir: &Path) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        // Built up in place: if a later client fails to start, dropping this kills the others.
        let mut clients = Clients {
            children: Vec::new(),
            files: Vec::new(),
        };
        for id in 0..seg.clients {
            let (mut cmd, out) = client_command(&exe, id, seg.kind, dir)?;
            cmd.arg("--resource")
                .arg(resource)
                .arg("--names")
                .arg(seg.names.join(","))
                .arg("--lease-ms")
                .arg(seg.lease.as_millis().to_string())
                .arg("--seed")
                .arg(seg.seed.to_string())
                .arg("--work-ms")
                .arg(seg.work_ms.to_string());
            for u in urls {
                cmd.arg("--url").arg(u);
            }
            if let Some(m) = &seg.mutant {
                cmd.arg("--mutant").arg(m);
            }
            // Each client's wall clock is skewed a little, as on separate machines (only a
            // broken token taken from the client's clock notices). Needs libfaketime. The rate
            // kind's clients read theirs from a file, which the client-clock-jump nemesis
            // moves.
            if let Some(lib) = crate::clock::libfaketime() {
                let skew = ((i64::from(id) * 37 % 150) - 75) as f64 / 1000.0;
                cmd.env("LD_PRELOAD", lib)
                    .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
                if seg.kind == Kind::Rate {
                    let file = crate::clock::client_clock(&out);
                    std::fs::write(&file, format!("{skew:+.3}\n"))
                        .map_err(|e| format!("{}: {e}", file.display()))?;
                    cmd.env("FAKETIME_TIMESTAMP_FILE", &file)
                        .env("FAKETIME_NO_CACHE", "1");
                } else {
                    cmd.env("FAKETIME", format!("{skew:+.3}"));
                }
            }
            let child = cmd
                .spawn()
                .map_err(|e| format!("spawning client {id}: {e}"))?;
            clients.children.push(child);
            clients.files.push(out);
        }
        Ok(clients)
    }

    /// (number, pid, relock client id) of each client, once all have started.
    fn started(&mut self, within: Duration) -> Result<Vec<(u32, u32, String)>, String> {
        let deadline = Instant::now() + within;
        loop {
            let mut all = Vec::new();
            for (i, f) in self.files.iter().enumerate() {
                let started = history::read(f).ok().and_then(|es| {
                    es.into_iter().find_map(|e| match e.op {
                        Op::Start { id, pid } => Some((i as u32, pid, id)),
                        _ => None,
                    })
                });
                all.extend(started);
            }
            if all.len() == self.files.len() {
                return Ok(all);
            }
            for (i, c) in self.children.iter_mut().enumerate() {
                if let Ok(Some(status)) = c.try_wait() {
                    return Err(format!("client {i} exited at start ({status})"));
                }
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "only {} of {} clients started within {within:?}",
                    all.len(),
                    self.files.len()
                ));
            }
            sleep(Duration::from_millis(50));
        }
    }

    /// SIGCONT (a pause nemesis may be cut short), SIGTERM, and wait; the pids that had to be
    /// killed are leaks.
    fn stop(&mut self, within: Duration) -> Vec<u32> {
        for c in &self.children {
            let pid = Pid::from_raw(c.id() as i32);
            let _ = kill(pid, Signal::SIGCONT);
            let _ = kill(pid, Signal::SIGTERM);
        }
        let deadline = Instant::now() + within;
        let mut stuck = Vec::new();
        for c in &mut self.children {
            loop {
                match c.try_wait() {
                    Ok(Some(_)) => break,
                    Ok(None) if Instant::now() < deadline => sleep(Duration::from_millis(20)),
                    _ => {
                        stuck.push(c.id());
                        let _ = c.kill();
                        let _ = c.wait();
                        break;
                    }
                }
            }
            crate::clock::forget(c.id());
        }
        stuck
    }

    /// What every client had written by a moment taken before reading, less [`SETTLED`]: for a
    /// judge while the clients run. The files are read one after another while the clients
    /// keep writing, so a file read later can hold an acquire made after a release that a file
    /// read earlier did not show yet: a false overlap (review: a correct relock failed a
    /// mid-run judge's exclusion check in over a third of tries, and a mutant could be called
    /// caught for it).
    fn read_settled(&self) -> Vec<history::Event> {
        let cut = history::now() - SETTLED.as_nanos() as i64;
        let mut events = self.read();
        events.retain(|e| e.t <= cut);
        events
    }

    fn read(&self) -> Vec<history::Event> {
        history::merge(
            self.files
                .iter()
                .map(|f| history::read(f).unwrap_or_default())
                .collect(),
        )
    }
}

/// A `relock-chaos client` command for client `id` of `kind` (the harness's own binary,
/// `exe`): its history file in `dir` (returned) and its stderr in `client-<id>.log` there, in
/// a process group of its own (a Ctrl-C meant for the harness must not kill it mid-section;
/// the harness stops it with SIGTERM).
pub fn client_command(
    exe: &Path,
    id: u32,
    kind: Kind,
    dir: &Path,
) -> Result<(Command, PathBuf), String> {
    let out = dir.join(format!("client-{id}.jsonl"));
    let log = std::fs::File::create(dir.join(format!("client-{id}.log")))
        .map_err(|e| format!("client log: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.args(["client", "--id", &id.to_string(), "--kind", kind.name()])
        .arg("--out")
        .arg(&out)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    Ok((cmd, out))
}

impl Drop for Clients {
    fn drop(&mut self) {
        for c in &mut self.children {
            if matches!(c.try_wait(), Ok(None)) {
                let _ = c.kill();
                let _ = c.wait();
                crate::clock::forget(c.id());
            }
        }
    }
}

/// Sleeps `d`, or less if `stop` is raised (SIGINT or SIGTERM to the harness); returns
/// whether it was.
fn nap(d: Duration, stop: &AtomicBool) -> bool {
    let until = Instant::now() + d;
    while !stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        if now >= until {
            return false;
        }
        sleep((until - now).min(Duration::from_millis(50)));
    }
    true
}

/// How far behind "now" a judge made while the clients run stops: a client writes an event
/// within microseconds of its time, except while it is paused, and those judges run outside
/// any fault (before the first, and a lease and a second after each).
const SETTLED: Duration = Duration::from_millis(500);

/// Runs `seg`; `progress` is told how far it got (0.0 to 1.0). When `stop` is raised the
/// schedule ends early and everything is torn down as after a normal run.
pub fn run(
    seg: &Segment,
    dir: &Path,
    stop: &AtomicBool,
    progress: &dyn Fn(f64),
) -> Result<Outcome, String> {
    let began = Instant::now();
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let topo = Topology::start(seg.kind, dir)?;
    let resource_server =
        RedisServer::start().map_err(|e| format!("resource redis-server: {e}"))?;
    let mut clients = Clients::spawn(seg, &topo.client_urls(), &resource_server.url(), dir)?;
    let ids = clients.started(Duration::from_secs(20))?;
    let mut rng = fastrand::Rng::with_seed(seg.seed);
    let mut windows = Vec::new();
    let mut skipped = Vec::new();
    let mut interrupted = nap(seg.healthy, stop);
    let total = (seg.rounds * seg.nemeses.len()).max(1);
    let mut done = 0;
    let mut stopped_early = None;
    // A guarded counter's earlier lives: each server restarted empty ends one.
    let mut lives: BTreeMap<String, crate::resource::Lives> = BTreeMap::new();
    // A mutant is judged once before the first fault too: what it breaks without one (a token
    // from the client clock, a job's kept lock released) shows within the first healthy
    // stretch, and the run ends there instead of after the first nemesis and its settling.
    if seg.stop_on_violation && !interrupted {
        let finals = read_lives(seg, &topo, &resource_server, &lives).ok();
        stopped_early = violation(seg, &clients, &windows, finals.as_ref())?;
    }
    'rounds: for _ in 0..seg.rounds {
        if stopped_early.is_some() {
            break 'rounds;
        }
        for &n in &seg.nemeses {
            if interrupted {
                break 'rounds;
            }
            let mut target = Target {
                kind: seg.kind,
                topology: &topo,
                clients: &ids,
                lease: seg.lease,
                name: &seg.names[0],
                histories: &clients.files,
                rng: &mut rng,
                before_kill: &mut |server| {
                    if !seg.kind.guarded() {
                        return Ok(());
                    }
                    for n in &seg.names {
                        let life = crate::resource::read_final(server, n, true)
                            .map_err(|e| format!("saving {n}'s guarded counter: {e}"))?;
                        lives.entry(n.clone()).or_default().push(life);
                    }
                    Ok(())
                },
            };
            match nemesis::apply(n, &mut target) {
                Ok(w) => windows.push(w),
                Err(e) => {
                    if !skipped.contains(&e) {
                        skipped.push(e);
                    }
                }
            }
            interrupted = nap(seg.lease + Duration::from_secs(1) + seg.healthy, stop);
            done += 1;
            progress(done as f64 / total as f64);
            if seg.stop_on_violation {
                let finals = read_lives(seg, &topo, &resource_server, &lives).ok();
                stopped_early = violation(seg, &clients, &windows, finals.as_ref())?;
                if stopped_early.is_some() {
                    break 'rounds;
                }
            }
            if seg.min_sections > 0 && sections(seg.kind, &clients.read()) >= seg.min_sections {
                break 'rounds;
            }
            if seg.max_time.is_some_and(|m| began.elapsed() >= m) {
                break 'rounds;
            }
        }
    }
    let stuck = clients.stop(Duration::from_secs(15));
    let events = clients.read();
    // A hold granted to an acquire that had already been cleaned up expires unrenewed within a
    // lease (a documented limit): give leftovers that long before calling them leaks.
    let servers = topo.lock_servers();
    let deadline = Instant::now() + seg.lease + Duration::from_secs(1);
    // The sem kind's semaphore keys stay (with their counts, checked below), and so do the
    // guarded counters (judged below) and the rate kind's limiters (no keep-alive).
    let keep = if seg.kind == Kind::Sem {
        seg.names.clone()
    } else {
        Vec::new()
    };
    let limiters: Vec<String> = if seg.kind == Kind::Rate {
        seg.names
            .iter()
            .flat_map(|n| {
                [
                    n.clone(),
                    format!("{{{n}}}:value"),
                    format!("{{{n}}}:permits"),
                ]
            })
            .collect()
    } else {
        Vec::new()
    };
    let data: Vec<String> = if seg.kind.guarded() {
        seg.names
            .iter()
            .flat_map(|n| {
                [
                    crate::resource::guarded_state_key(n),
                    crate::resource::guarded_log_key(n),
                ]
            })
            .collect()
    } else {
        Vec::new()
    };
    let kept: Vec<String> = keep.iter().chain(&data).chain(&limiters).cloned().collect();
    let (keys, channels) = loop {
        let (k, c) = topology::leftovers(&servers, &kept);
        if (k.is_empty() && c.is_empty()) || Instant::now() >= deadline {
            break (k, c);
        }
        sleep(Duration::from_millis(100));
    };
    // Conservation: once every client stopped, each semaphore has all its permits back.
    let permits = keep
        .iter()
        .map(|n| {
            let available = servers
                .first()
                .and_then(|s| s.cmd(&["GET", n]).ok())
                .and_then(|v| match v {
                    relock_testkit::Value::Int(i) => Some(i),
                    v => v.as_string().and_then(|s| s.parse().ok()),
                });
            (n.clone(), available, crate::kind::SEM_PERMITS as i64)
        })
        .collect();
    let leaks = Leaks {
        keys,
        channels,
        processes: stuck,
        permits,
        panics: panics(dir, seg.clients),
    };
    let finals = read_lives(seg, &topo, &resource_server, &lives);
    let finals = match finals {
        Ok(f) => Some(f),
        // Ctrl-C in a terminal reaches the resource server too: judge what can be judged.
        Err(_) if interrupted => None,
        Err(e) => return Err(e),
    };
    let mut out = judge(seg, &events, &windows, finals.as_ref(), leaks)?;
    out.interrupted = interrupted;
    // A job's runs never wait (a taken occurrence is skipped), and a rate limiter's waiters
    // sleep until records expire, so no release wakes anyone: the strict wake-up bound has
    // nothing to judge there.
    if out.liveness.strict_releases == 0
        && !interrupted
        && !windows.is_empty()
        && !matches!(seg.kind, Kind::Job | Kind::Rate)
    {
        out.liveness.verdict.ok = false;
        out.liveness.verdict.violations += 1;
        out.liveness.verdict.examples.push(
            "no release after the first fault was judged by the strict wake-up bound: the schedule left no fault-free time".into(),
        );
    }
    if let (Some(p), true) = (stopped_early, out.ok()) {
        // The run stopped on a violation in the history so far; keep it in the verdicts.
        out.exclusion = p.exclusion;
        out.liveness = p.liveness;
        if !p.fencing.verdict.ok {
            out.fencing.verdict = p.fencing.verdict;
        }
    }
    out.skipped = skipped;
    out.seconds = began.elapsed().as_secs_f64();
    Ok(out)
}

/// Critical sections: fenced writes accepted; for the sem kind (no writes), permits given
/// back; for the rate kind, permits granted.
fn sections(kind: Kind, events: &[history::Event]) -> u64 {
    events
        .iter()
        .filter(|e| match e.op {
            Op::Write { accepted, .. } => accepted,
            Op::Released { .. } => !kind.fenced(),
            Op::Granted { .. } => true,
            _ => false,
        })
        .count() as u64
}

/// The panics the client logs report, as "client N: <the line>".
fn panics(dir: &Path, clients: u32) -> Vec<String> {
    (0..clients)
        .flat_map(|id| {
            let log =
                std::fs::read_to_string(dir.join(format!("client-{id}.log"))).unwrap_or_default();
            log.lines()
                .filter(|l| l.contains("panicked at"))
                .map(|l| format!("client {id}: {l}"))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Every life of each name's resource: the lives saved before kill-restarts (`earlier`), then
/// what its server holds now (the guarded counter on the lock server, the fenced resource on
/// its own).
fn read_lives(
    seg: &Segment,
    topo: &Topology,
    resource_server: &RedisServer,
    earlier: &BTreeMap<String, crate::resource::Lives>,
) -> Result<BTreeMap<String, crate::resource::Lives>, String> {
    let guarded = seg.kind.guarded();
    let servers = topo.lock_servers();
    let store = match servers.first() {
        Some(s) if guarded => *s,
        _ => resource_server,
    };
    seg.names
        .iter()
        .map(|n| {
            let now = crate::resource::read_final(store, n, guarded)?;
            let mut all = earlier.get(n).cloned().unwrap_or_default();
            all.push(now);
            Ok((n.clone(), all))
        })
        .collect()
}

/// The judge of the history so far, if a checker of the lock fired (a mutant's run stops
/// there); `None` otherwise. `finals`: the resource read now (its logs hold every write the
/// settled history saw accepted, and more), or `None` if it could not be read.
fn violation(
    seg: &Segment,
    clients: &Clients,
    windows: &[Window],
    finals: Option<&BTreeMap<String, crate::resource::Lives>>,
) -> Result<Option<Outcome>, String> {
    let partial = judge(
        seg,
        &clients.read_settled(),
        windows,
        finals,
        Leaks::default(),
    )?;
    Ok(partial.lock_violated().then_some(partial))
}

fn judge(
    seg: &Segment,
    events: &[history::Event],
    windows: &[Window],
    finals: Option<&BTreeMap<String, crate::resource::Lives>>,
    leaks: Leaks,
) -> Result<Outcome, String> {
    let end = events.last().map_or(0, |e| e.t);
    let params = Params {
        lease: seg.lease.as_nanos() as i64,
        prompt_wake: 1_000_000_000,
        end,
        capacity: seg.kind.capacity(),
        fenced: seg.kind.fenced(),
        guarded: seg.kind.guarded(),
        median_handoff: seg.kind.median_handoff().as_nanos() as i64,
        rate: seg.kind.rate().map(|(r, i)| (r, i.as_nanos() as i64)),
    };
    let check::Verdicts {
        holds,
        exclusion,
        fencing,
        liveness,
    } = check::all(events, windows, finals, &params);
    let leak_verdict = leaks.verdict();
    Ok(Outcome {
        kind: seg.kind,
        nemeses: seg.nemeses.iter().map(|n| n.name().to_owned()).collect(),
        seed: seg.seed,
        mutant: seg.mutant.clone(),
        seconds: 0.0,
        sections: sections(seg.kind, events),
        holds: holds as u64,
        acquire_failures: events
            .iter()
            .filter(|e| matches!(e.op, Op::AcquireFailed { .. }))
            .count() as u64,
        windows: windows.to_vec(),
        skipped: Vec::new(),
        exclusion,
        fencing,
        liveness,
        leaks,
        leak_verdict,
        interrupted: false,
    })
}
