//! The nemeses: the faults a run injects, each applied and healed in one call that returns the
//! window the checkers judge it by.

use std::thread::sleep;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use relock_testkit::{Direction, Mode, RedisServer};

use crate::check::Window;
use crate::history::now;
use crate::kind::Kind;
use crate::topology::Topology;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Nemesis {
    /// SIGSTOP the client holding the first lock for longer than its lease, then SIGCONT
    /// (a GC pause: the watchdog stops too).
    PauseClient,
    /// Have a client stop itself (SIGSTOP) in its next critical section, between the read and
    /// the write, for its lease on the server and a lease and a second more, then SIGCONT it: the classic failure of a lease
    /// (a holder paused in the middle of its work), brought about on purpose. Its write must
    /// then be refused (guarded by the lock, or fenced by its token).
    PauseMidSection,
    /// kill -9 a lock server and restart it empty (the single server; one quorum master; the
    /// first name's cluster master, after its replica took over).
    KillRestart,
    /// SIGSTOP a lock server for 1.5 s.
    PauseServer,
    /// `CLIENT KILL TYPE normal` on every lock server.
    ClientKill,
    /// `SCRIPT FLUSH` on every lock server.
    ScriptFlush,
    /// `CLIENT PAUSE 1000 WRITE` on every lock server.
    ClientPauseWrite,
    /// Every byte, both ways, 150 ms late for 1.5 s (one quorum master's link).
    ProxyDelay,
    /// Hold all bytes both ways for 1 s, then deliver them.
    ProxyFreeze,
    /// Drop all bytes both ways for 1 s, then cut the connections.
    ProxyDrop,
    /// Hold the replies only (the commands run) for 1 s.
    ProxyOneWay,
    /// Jump the server's wall clock ahead by twice the lease (libfaketime).
    ClockJump,
    /// Jump one client's wall clock ahead by 2 s (libfaketime; the rate kind, whose clients
    /// read their clock from a file): nothing relock computes may depend on it.
    ClientClockJump,
    /// A failover: `CLUSTER FAILOVER` on a replica, or `SENTINEL FAILOVER`.
    Failover,
}

impl Nemesis {
    pub fn name(self) -> &'static str {
        match self {
            Nemesis::PauseClient => "pause-client",
            Nemesis::PauseMidSection => "pause-mid-section",
            Nemesis::KillRestart => "kill-restart",
            Nemesis::PauseServer => "pause-server",
            Nemesis::ClientKill => "client-kill",
            Nemesis::ScriptFlush => "script-flush",
            Nemesis::ClientPauseWrite => "client-pause-write",
            Nemesis::ProxyDelay => "proxy-delay",
            Nemesis::ProxyFreeze => "proxy-freeze",
            Nemesis::ProxyDrop => "proxy-drop",
            Nemesis::ProxyOneWay => "proxy-one-way",
            Nemesis::ClockJump => "clock-jump",
            Nemesis::ClientClockJump => "client-clock-jump",
            Nemesis::Failover => "failover",
        }
    }

    /// Whether this nemesis can run against `kind`.
    pub fn applies_to(self, kind: Kind) -> bool {
        use Nemesis::*;
        match kind {
            Kind::Plain | Kind::Fair | Kind::Spin | Kind::Rw | Kind::Election | Kind::Job => {
                !matches!(self, Failover | ClientClockJump)
            }
            // A limiter has no section to pause in; every other fault of one server applies.
            Kind::Rate => !matches!(self, Failover | PauseMidSection),
            // A permit has no section to pause in (no read, no write).
            // A semaphore's permits have no lease: a holder killed for good, or a server
            // restarted empty, loses them, and an acquire or release that fails after a
            // command timeout (a server or link stalled for 1 s or more) may or may not have
            // taken effect. Only the faults after which the count must still be exact.
            Kind::Sem => matches!(self, PauseClient | ClientKill | ScriptFlush | ProxyDelay),
            Kind::Quorum => !matches!(self, Failover | ClockJump | ClientClockJump),
            Kind::Cluster => {
                matches!(
                    self,
                    PauseClient
                        | PauseMidSection
                        | ClientKill
                        | ScriptFlush
                        | Failover
                        | KillRestart
                )
            }
            Kind::Sentinel => matches!(
                self,
                PauseClient | PauseMidSection | ClientKill | ScriptFlush | Failover
            ),
        }
    }

    /// Whether mutual exclusion must hold through this nemesis on `kind`. A server restarted
    /// empty forgets its locks, a jumped clock expires them, and Sentinel's failover may lose
    /// acknowledged writes (replication is asynchronous): the lease cannot cover those, only
    /// fencing can. A quorum survives a minority restart (its quarantine), and a manual
    /// cluster failover waits for the replica to catch up. For the rate kind, "exclusion" is
    /// its limit: a server restarted empty forgets the grants' records and a jumped server
    /// clock expires them, but a client's clock must not matter.
    pub fn exclusion_required(self, kind: Kind) -> bool {
        match self {
            Nemesis::KillRestart => kind == Kind::Quorum,
            Nemesis::ClockJump => false,
            Nemesis::Failover => kind == Kind::Cluster,
            _ => true,
        }
    }
}

/// What a nemesis acts on.
pub struct Target<'a> {
    pub kind: Kind,
    pub topology: &'a Topology,
    /// (client number, pid, relock client id) of every client process.
    pub clients: &'a [(u32, u32, String)],
    pub lease: Duration,
    /// The lock a "holder" nemesis aims at.
    pub name: &'a str,
    /// Each client's history file, by client number (the sem kind's holders are found there).
    pub histories: &'a [std::path::PathBuf],
    pub rng: &'a mut fastrand::Rng,
    /// Called with a one-server lock server just before kill-restart kills it, with its
    /// writes paused (`CLIENT PAUSE … WRITE`): what the server keeps can be saved then, and
    /// nothing written after the save is lost unseen.
    pub before_kill: &'a mut dyn FnMut(&RedisServer) -> Result<(), String>,
}

/// Applies `n` and heals it. Returns its window, or why it could not run.
pub fn apply(n: Nemesis, t: &mut Target<'_>) -> Result<Window, String> {
    let start = now();
    // When holds may be forgotten or expired: refined below where the moment is known.
    let mut damage: Option<(i64, i64)> = None;
    let err = |e: relock_testkit::Error| format!("{}: {e}", n.name());
    let topo = t.topology;
    let masters = masters(topo);
    match n {
        Nemesis::PauseClient => {
            let pid = pause_a_holder(t)?;
            sleep(t.lease + Duration::from_millis(1000));
            kill(pid, Signal::SIGCONT).map_err(|e| format!("SIGCONT {pid}: {e}"))?;
        }
        Nemesis::PauseMidSection => {
            let pid = pause_mid_section(t)?;
            // Past the server's lease by a lease and a second, so that another client holds
            // the lock (and has written) when the paused one writes. The server's lease is the
            // watchdog lease, or for a fair lock (an election's too) the first lease of a
            // handed-over hold, which lasts until its first renewal: the client's fair
            // heartbeat, 5 s by default.
            let server_lease = match t.kind {
                Kind::Fair | Kind::Election => FAIR_HEARTBEAT.max(t.lease),
                _ => t.lease,
            };
            sleep(server_lease + t.lease + Duration::from_millis(1000));
            kill(pid, Signal::SIGCONT).map_err(|e| format!("SIGCONT {pid}: {e}"))?;
        }
        Nemesis::KillRestart if t.kind == Kind::Cluster => {
            let Topology::Cluster(c) = topo else {
                unreachable!("the cluster kind runs on a cluster")
            };
            // kill -9 the first name's master; its replica takes over after the node timeout;
            // the old master comes back empty (its nodes.conf kept) and rejoins as a replica.
            let m = c.master_of(t.name).map_err(err)?;
            let r = c
                .replica_of(m)
                .ok_or_else(|| format!("{}: no replica of {}", n.name(), m.port()))?;
            let killed = now();
            m.kill().map_err(err)?;
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while !r.is_master() {
                if std::time::Instant::now() >= deadline {
                    return Err(format!(
                        "{}: replica {} not promoted in 20 s",
                        n.name(),
                        r.port()
                    ));
                }
                sleep(Duration::from_millis(20));
            }
            // From the kill until the replica is master, unreplicated holds may be lost.
            damage = Some((killed, now()));
            m.restart_empty().map_err(err)?;
            c.wait_ready().map_err(err)?;
        }
        Nemesis::KillRestart => {
            let s = one_master(t, &masters)?;
            let pid = s.pid();
            // Scripts that write wait while the server's writes are paused, so whatever
            // `before_kill` reads is all the server ever ran; the kill ends the pause.
            s.cmd(&["CLIENT", "PAUSE", "10000", "WRITE"]).map_err(err)?;
            if let Err(e) = (t.before_kill)(s) {
                let _ = s.cmd(&["CLIENT", "UNPAUSE"]);
                return Err(e);
            }
            damage = Some((now(), now()));
            s.kill().map_err(err)?;
            pid.into_iter().for_each(crate::clock::forget);
            sleep(Duration::from_millis(300));
            s.restart_empty().map_err(err)?;
        }
        Nemesis::PauseServer => {
            let s = one_master(t, &masters)?;
            s.pause().map_err(err)?;
            sleep(Duration::from_millis(1500));
            s.resume().map_err(err)?;
        }
        Nemesis::ClientKill => {
            for s in &masters {
                s.client_kill_type("normal").map_err(err)?;
            }
        }
        Nemesis::ScriptFlush => {
            for s in &masters {
                s.script_flush().map_err(err)?;
            }
        }
        Nemesis::ClientPauseWrite => {
            for s in &masters {
                s.cmd(&["CLIENT", "PAUSE", "1000", "WRITE"]).map_err(err)?;
            }
            sleep(Duration::from_millis(1000));
        }
        Nemesis::ProxyDelay | Nemesis::ProxyFreeze | Nemesis::ProxyDrop | Nemesis::ProxyOneWay => {
            let proxies = topo.proxies();
            if proxies.is_empty() {
                return Err(format!("{} needs a fault proxy", n.name()));
            }
            // On a quorum, a minority: one master's link.
            let proxies = if t.kind == Kind::Quorum {
                vec![proxies[t.rng.usize(..proxies.len())]]
            } else {
                proxies
            };
            let (mode, dirs, hold) = match n {
                Nemesis::ProxyDelay => (
                    Mode::Delay(Duration::from_millis(150)),
                    &[Direction::Up, Direction::Down][..],
                    1500,
                ),
                Nemesis::ProxyFreeze => (Mode::Freeze, &[Direction::Up, Direction::Down][..], 1000),
                Nemesis::ProxyDrop => {
                    (Mode::Blackhole, &[Direction::Up, Direction::Down][..], 1000)
                }
                _ => (Mode::Freeze, &[Direction::Down][..], 1000),
            };
            for p in &proxies {
                for d in dirs {
                    p.set(*d, mode);
                }
            }
            sleep(Duration::from_millis(hold));
            for p in &proxies {
                if n == Nemesis::ProxyDrop {
                    // The streams lost bytes: only new connections are usable.
                    p.reset();
                }
                p.heal();
            }
        }
        Nemesis::ClockJump => {
            let Topology::Single {
                clock: Some(file), ..
            } = topo
            else {
                return Err("clock-jump needs libfaketime (apt-get install libfaketime)".into());
            };
            let secs = (t.lease.as_secs() * 2).max(2);
            let jumped = now();
            crate::clock::jump(file, secs)
                .map_err(|e| format!("clock-jump: {}: {e}", file.display()))?;
            damage = Some((jumped, now()));
            sleep(Duration::from_millis(500));
        }
        Nemesis::ClientClockJump => {
            if crate::clock::libfaketime().is_none() {
                return Err(
                    "client-clock-jump needs libfaketime (apt-get install libfaketime)".into(),
                );
            }
            let i = t.rng.usize(..t.histories.len().max(1));
            let file = t
                .histories
                .get(i)
                .map(|h| crate::clock::client_clock(h))
                .ok_or("client-clock-jump: no client")?;
            crate::clock::jump_client(&file, 2.0)
                .map_err(|e| format!("client-clock-jump: {}: {e}", file.display()))?;
            sleep(Duration::from_millis(500));
        }
        Nemesis::Failover => match topo {
            Topology::Cluster(c) => {
                let m = c.master_of(t.name).map_err(err)?;
                c.failover(m).map_err(err)?;
            }
            Topology::Sentinel(s) => {
                s.failover().map_err(err)?;
            }
            _ => return Err("failover needs a cluster or sentinel".into()),
        },
    }
    let mut heal = now();
    if n == Nemesis::KillRestart && t.kind == Kind::Quorum {
        // The restarted master may not vote until its restart quarantine ends (the lease,
        // counted in whole seconds of its uptime: up to one more second): until then a
        // three-master quorum runs on the other two alone, and the fault is not over.
        heal += (t.lease + Duration::from_secs(1)).as_nanos() as i64;
    }
    Ok(Window {
        nemesis: n.name().to_owned(),
        start,
        heal,
        exclusion_required: n.exclusion_required(t.kind),
        damage: damage.unwrap_or((start, heal)),
    })
}

/// The servers that take writes.
fn masters(topo: &Topology) -> Vec<&RedisServer> {
    match topo {
        Topology::Cluster(c) => c.masters(),
        Topology::Sentinel(s) => s.master().into_iter().collect(),
        other => other.lock_servers(),
    }
}

/// The server a one-server nemesis hits: the single server, or one quorum master (a minority).
fn one_master<'a>(
    t: &mut Target<'_>,
    masters: &[&'a RedisServer],
) -> Result<&'a RedisServer, String> {
    if masters.is_empty() {
        return Err("no master".into());
    }
    Ok(masters[t.rng.usize(..masters.len())])
}

/// relock's default fair heartbeat (the chaos clients keep it).
const FAIR_HEARTBEAT: Duration = Duration::from_secs(5);

/// Asks a client (SIGUSR1) to stop itself in its next section, after its read, and waits
/// until it has (its state in `/proc` is `T`). Returns its pid.
fn pause_mid_section(t: &mut Target<'_>) -> Result<Pid, String> {
    let pid = Pid::from_raw(t.clients[t.rng.usize(..t.clients.len())].1 as i32);
    kill(pid, Signal::SIGUSR1).map_err(|e| format!("SIGUSR1 {pid}: {e}"))?;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        // /proc/<pid>/stat: "pid (comm) state …"; comm may hold spaces, so read after the ')'.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().next());
        if state == Some("T") {
            return Ok(pid);
        }
        if std::time::Instant::now() >= deadline {
            return Err(format!(
                "pause-mid-section: client {pid} began no section within 10 s"
            ));
        }
        sleep(Duration::from_millis(2));
    }
}

/// SIGSTOPs a client while it holds `t.name` (checked after the stop, since a hold lasts
/// milliseconds); after 100 tries, any client.
fn pause_a_holder(t: &mut Target<'_>) -> Result<Pid, String> {
    // A rate limiter's permits are not held: any client (most are waiting for one).
    let tries = if t.kind == Kind::Rate { 0 } else { 100 };
    for _ in 0..tries {
        let Some(pid) = holder(t) else {
            sleep(Duration::from_millis(5));
            continue;
        };
        let pid = Pid::from_raw(pid as i32);
        kill(pid, Signal::SIGSTOP).map_err(|e| format!("SIGSTOP {pid}: {e}"))?;
        // A release already on the wire lands within a few ms; then it was not holding.
        sleep(Duration::from_millis(10));
        let pid_u32 = pid.as_raw() as u32;
        let still = if t.kind == Kind::Sem {
            sem_holders(t).contains(&pid_u32)
        } else {
            holder(t) == Some(pid_u32)
        };
        if still {
            return Ok(pid);
        }
        kill(pid, Signal::SIGCONT).map_err(|e| format!("SIGCONT {pid}: {e}"))?;
    }
    let pid = Pid::from_raw(t.clients[t.rng.usize(..t.clients.len())].1 as i32);
    kill(pid, Signal::SIGSTOP).map_err(|e| format!("SIGSTOP {pid}: {e}"))?;
    Ok(pid)
}

/// The pid of the client that holds `t.name` now, read from the lock hash's field
/// (`chaos-<n>:<hold>`, or a read-write lock's `chaos-<n>:<hold>:write` and its `mode`) on the
/// servers.
fn holder(t: &Target<'_>) -> Option<u32> {
    use relock_testkit::Value;
    if t.kind == Kind::Sem {
        return sem_holders(t).first().copied();
    }
    for s in masters(t.topology) {
        if let Ok(Value::Array(Some(items))) = s.cmd(&["HKEYS", t.name]) {
            for f in items.iter().filter_map(Value::as_string) {
                let f = f.strip_suffix(":write").unwrap_or(&f);
                let id = f.rsplit_once(':').map(|(id, _)| id.to_owned());
                if let Some((_, pid, _)) = t.clients.iter().find(|c| Some(&c.2) == id.as_ref()) {
                    return Some(*pid);
                }
            }
        }
    }
    None
}

/// The pids of the clients that hold a permit of the semaphore `t.name` now: a semaphore does
/// not know who took its permits, so these are the clients whose history's last event is the
/// grant of one (the sem kind records nothing else until its release).
fn sem_holders(t: &Target<'_>) -> Vec<u32> {
    use std::io::{Read, Seek, SeekFrom};
    let mut out = Vec::new();
    for (i, path) in t.histories.iter().enumerate() {
        let Ok(mut f) = std::fs::File::open(path) else {
            continue;
        };
        let len = f.metadata().map_or(0, |m| m.len());
        let mut tail = Vec::new();
        if f.seek(SeekFrom::Start(len.saturating_sub(1024))).is_err()
            || f.read_to_end(&mut tail).is_err()
        {
            continue;
        }
        let text = String::from_utf8_lossy(&tail);
        let last = text
            .trim_end_matches('\n')
            .rsplit('\n')
            .next()
            .unwrap_or("");
        let holds = serde_json::from_str::<crate::history::Event>(last)
            .is_ok_and(|e| e.n == t.name && matches!(e.op, crate::history::Op::Acquired { .. }));
        if let Some((_, pid, _)) = t.clients.iter().find(|c| holds && c.0 == i as u32) {
            out.push(*pid);
        }
    }
    out
}
