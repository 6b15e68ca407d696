//! `relock-chaos soak-resources`: a steady mixed load (every one-server kind, two client
//! processes each, contending) for a given time while connections are killed and the server
//! is paused now and then, sampling what could grow: each client's resident memory and live
//! tokio tasks, the server's connections, channels, subscribers, keys and `used_memory`. It
//! fails when a series grows from the second quarter of the run to the last beyond its
//! tolerance, or when connections, channels or tasks do not come back to their level after a
//! fault.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use relock_testkit::{RedisServer, Value};
use serde::Serialize;

use crate::kind::Kind;
use crate::topology::Topology;

/// `relock-chaos soak-resources …`
#[derive(Debug, Clone, clap::Args)]
pub struct SoakArgs {
    /// How long the load runs.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// A fault every this many seconds: `CLIENT KILL TYPE normal`, then a 1 s SIGSTOP of the
    /// server, in turn.
    #[arg(long, default_value_t = 15)]
    fault_every: u64,
    /// A sample every this many milliseconds.
    #[arg(long, default_value_t = 2000)]
    sample_ms: u64,
    /// Client processes per kind.
    #[arg(long, default_value_t = 2)]
    clients_per_kind: u32,
    /// Write the samples and verdicts as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Also draw the samples (an SVG file): each client's resident memory and the server's
    /// memory over the run, faults marked.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Where client histories and logs go (default: a temporary directory).
    #[arg(long)]
    dir: Option<PathBuf>,
}

/// The kinds of the mixed load: every kind that runs on one server.
const KINDS: [Kind; 6] = [
    Kind::Plain,
    Kind::Fair,
    Kind::Rw,
    Kind::Sem,
    Kind::Election,
    Kind::Job,
];

#[derive(Debug, Clone, Serialize)]
struct Sample {
    /// Seconds since the load began.
    t: f64,
    /// Per client process (in start order): resident memory (kB) and live tokio tasks.
    rss_kb: Vec<u64>,
    tasks: Vec<u64>,
    connected_clients: i64,
    used_memory: i64,
    keys: i64,
    /// Keys without a time to live (a semaphore's count, a latch): what nothing expires.
    lasting_keys: i64,
    /// Request ids of semaphore calls that got no reply (`relock_request:…`): kept for their
    /// 20-minute time to live by design (a late copy of the call must still find them), so
    /// they pile up with the faults for 20 minutes, then level off. Not in `keys`.
    request_keys: i64,
    channels: i64,
    subscribers: i64,
}

#[derive(Debug, Clone, Serialize)]
struct Series {
    name: String,
    first: f64,
    /// Means of the second and the last quarter of the run.
    q2: f64,
    q4: f64,
    last: f64,
    /// The most `q4` may be.
    limit: f64,
    ok: bool,
}

pub fn main(args: SoakArgs) -> i32 {
    match run(&args) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            eprintln!("relock-chaos soak-resources: {e}");
            2
        }
    }
}

fn run(args: &SoakArgs) -> Result<bool, String> {
    // SIGINT or SIGTERM ends the load early; the servers and clients are still torn down (a
    // second one exits at once).
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 130, stop.clone())
            .and_then(|_| signal_hook::flag::register(sig, stop.clone()))
            .map_err(|e| format!("signal handler: {e}"))?;
    }
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("relock-soak-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let topo = Topology::start(Kind::Plain, &dir)?;
    let Topology::Single { server, .. } = &topo else {
        unreachable!("the plain kind runs on one server")
    };
    let resource = RedisServer::start().map_err(|e| format!("resource redis-server: {e}"))?;
    let url = topo.client_urls().remove(0);
    let mut clients = Vec::new();
    for (k, kind) in KINDS.iter().enumerate() {
        for i in 0..args.clients_per_kind {
            let id = k as u32 * 100 + i;
            clients.push(spawn(*kind, id, &url, &resource.url(), &dir)?);
        }
    }
    let mut clients = Procs(clients);
    let began = Instant::now();
    let total = Duration::from_secs(args.seconds);
    let every = Duration::from_millis(args.sample_ms);
    let mut samples = Vec::new();
    let mut faults: Vec<(f64, &str)> = Vec::new();
    let mut next_fault = Duration::from_secs(args.fault_every);
    while began.elapsed() < total && !stop.load(std::sync::atomic::Ordering::SeqCst) {
        let at = began.elapsed();
        if at >= next_fault {
            let kind = if faults.len() % 2 == 0 {
                server
                    .client_kill_type("normal")
                    .map_err(|e| format!("client kill: {e}"))?;
                "client-kill"
            } else {
                server.pause().map_err(|e| format!("pause: {e}"))?;
                std::thread::sleep(Duration::from_secs(1));
                server.resume().map_err(|e| format!("resume: {e}"))?;
                "pause-server"
            };
            faults.push((at.as_secs_f64(), kind));
            next_fault += Duration::from_secs(args.fault_every);
        }
        samples.push(sample(at, &mut clients.0, server)?);
        std::thread::sleep(every.saturating_sub(began.elapsed() - at));
    }
    let exits = clients.stop();
    let series = judge(&samples, clients.0.len(), &faults);
    let recovered = recoveries(&samples, &faults);
    print_table(&series, &recovered, &faults, &samples);
    for e in &exits {
        println!("client exit: {e}");
    }
    let ok = series.iter().all(|s| s.ok) && recovered.is_empty() && exits.is_empty();
    if let Some(path) = &args.json {
        let json = serde_json::json!({
            "seconds": args.seconds,
            "clients": clients.0.iter().map(|c| c.label.clone()).collect::<Vec<_>>(),
            "faults": faults,
            "samples": samples,
            "series": series,
            "not_recovered": recovered,
            "bad_exits": exits,
            "ok": ok,
        });
        std::fs::write(path, serde_json::to_vec_pretty(&json).unwrap_or_default())
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some(path) = &args.plot {
        let labels: Vec<String> = clients.0.iter().map(|c| c.label.clone()).collect();
        let mb = |kb: f64| kb / 1024.0;
        let client_lines: Vec<crate::soak_plot::Line> = labels
            .iter()
            .enumerate()
            .map(|(i, label)| crate::soak_plot::Line {
                label: label.clone(),
                points: samples
                    .iter()
                    .map(|s| (s.t, mb(s.rss_kb[i] as f64)))
                    .collect(),
            })
            .collect();
        let server_lines = [crate::soak_plot::Line {
            label: "used_memory".into(),
            points: samples
                .iter()
                .map(|s| (s.t, s.used_memory as f64 / 1_048_576.0))
                .collect(),
        }];
        let marks: Vec<f64> = faults.iter().map(|f| f.0).collect();
        crate::soak_plot::write(path, &client_lines, &server_lines, &marks)
            .map_err(|e| format!("--plot {}: {e}", path.display()))?;
    }
    if args.dir.is_none() && ok {
        let _ = std::fs::remove_dir_all(&dir);
    }
    println!(
        "relock-chaos soak-resources: {}",
        if ok {
            "nothing grew"
        } else {
            "a series grew or did not recover"
        }
    );
    Ok(ok)
}

struct Proc {
    child: Child,
    label: String,
    stats: PathBuf,
}

/// The clients, killed if the soak ends early.
struct Procs(Vec<Proc>);

impl Procs {
    /// SIGTERM, and wait: the clients that did not exit 0 by themselves (killed, crashed,
    /// stuck), said.
    fn stop(&mut self) -> Vec<String> {
        for p in &self.0 {
            let _ = kill(Pid::from_raw(p.child.id() as i32), Signal::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut bad = Vec::new();
        for p in &mut self.0 {
            while matches!(p.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            match p.child.try_wait() {
                Ok(Some(status)) if status.success() => {}
                Ok(Some(status)) => bad.push(format!("{} ended with {status}", p.label)),
                _ => {
                    bad.push(format!("{} did not exit within 15 s of SIGTERM", p.label));
                    let _ = p.child.kill();
                    let _ = p.child.wait();
                }
            }
        }
        bad
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        for p in &mut self.0 {
            if matches!(p.child.try_wait(), Ok(None)) {
                let _ = p.child.kill();
                let _ = p.child.wait();
            }
        }
    }
}

fn spawn(kind: Kind, id: u32, url: &str, resource: &str, dir: &Path) -> Result<Proc, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let (mut cmd, out) = crate::run::client_command(&exe, id, kind, dir)?;
    let names = format!("soak-{0}-0,soak-{0}-1", kind.name());
    let child = cmd
        .args(["--url", url, "--resource", resource, "--names", &names])
        .arg("--no-log")
        .spawn()
        .map_err(|e| format!("spawning client {id}: {e}"))?;
    Ok(Proc {
        child,
        label: format!("{}-{}", kind.name(), id % 100),
        stats: out.with_extension("stats"),
    })
}

/// Counts the keys that have no time to live. `KEYS[1]`: none; `ARGV[1]`: none. Returns the
/// count.
const LASTING: &str = "local n = 0
for _, k in ipairs(redis.call('keys', '*')) do
  if redis.call('pttl', k) == -1 then n = n + 1 end
end
return n";

/// Counts the request-id keys (`relock_request:…`). `KEYS[1]`: none; `ARGV[1]`: none.
/// Returns the count.
const REQUESTS: &str = "return #redis.call('keys', 'relock_request:*')";

fn sample(at: Duration, clients: &mut [Proc], server: &RedisServer) -> Result<Sample, String> {
    let mut rss_kb = Vec::new();
    for p in clients.iter_mut() {
        // A client that died (a crash, the OOM killer) ends the soak: its series would read
        // as flat.
        if let Ok(Some(status)) = p.child.try_wait() {
            return Err(format!(
                "client {} exited during the load ({status})",
                p.label
            ));
        }
        let rss = std::fs::read_to_string(format!("/proc/{}/status", p.child.id()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            })
            .ok_or_else(|| format!("client {}: no VmRSS in /proc", p.label))?;
        rss_kb.push(rss);
    }
    let tasks = clients
        .iter()
        .map(|p| {
            std::fs::read_to_string(&p.stats)
                .ok()
                .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
                .and_then(|v| v["tasks"].as_u64())
                .unwrap_or(0)
        })
        .collect();
    let info = |section: &str, field: &str| -> Result<i64, String> {
        let text = server
            .cmd(&["INFO", section])
            .map_err(|e| format!("INFO: {e}"))?
            .as_string()
            .unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| format!("INFO {section} has no {field}"))
    };
    let request_keys = server
        .cmd(&["EVAL", REQUESTS, "0"])
        .map_err(|e| format!("counting request keys: {e}"))?
        .as_int()
        .unwrap_or(-1);
    let channels = server
        .pubsub_channels()
        .map_err(|e| format!("PUBSUB CHANNELS: {e}"))?;
    let mut subscribers = 0;
    if !channels.is_empty() {
        let mut cmd = vec!["PUBSUB", "NUMSUB"];
        cmd.extend(channels.iter().map(String::as_str));
        if let Ok(Value::Array(Some(items))) = server.cmd(&cmd) {
            subscribers = items
                .iter()
                .skip(1)
                .step_by(2)
                .filter_map(Value::as_int)
                .sum();
        }
    }
    Ok(Sample {
        t: at.as_secs_f64(),
        rss_kb,
        tasks,
        // Less the test kit's own connection, which asks.
        connected_clients: info("clients", "connected_clients")? - 1,
        used_memory: info("memory", "used_memory")?,
        keys: server.dbsize().map_err(|e| format!("DBSIZE: {e}"))? - request_keys,
        request_keys,
        lasting_keys: server
            .cmd(&["EVAL", LASTING, "0"])
            .map_err(|e| format!("counting keys: {e}"))?
            .as_int()
            .unwrap_or(-1),
        channels: channels.len() as i64,
        subscribers,
    })
}

/// Each series' second and last quarters, against its tolerance: resident memory may rise by
/// 2 % and 256 kB (a linear rise of 10 % over the run is 5 % between those quarters' means),
/// the server's memory by 5 % and 64 kB, tasks by 30 % and 3 (a fair waiter's clean-up task
/// lingers a second or two: the count at any instant varies; a task per operation would grow
/// by thousands), connections by 1, channels and
/// subscribers by 2, keys by 8 (holds and waiters come and go), keys without a time to live
/// not at all.
///
/// Samples taken during a fault or in the 3 s after it (connections being made again) are
/// left out of the quarters: the recovery check judges those moments.
fn judge(samples: &[Sample], clients: usize, faults: &[(f64, &str)]) -> Vec<Series> {
    let end = samples.last().map_or(0.0, |s| s.t);
    let calm = |s: &Sample| !faults.iter().any(|(f, _)| s.t >= *f && s.t <= f + 3.0);
    let quarter = |q: f64| -> Vec<&Sample> {
        samples
            .iter()
            .filter(|s| s.t >= end * (q - 1.0) / 4.0 && s.t < end * q / 4.0 + 1e-9 && calm(s))
            .collect()
    };
    let (q2, q4) = (quarter(2.0), quarter(4.0));
    let mean = |v: &[&Sample], f: &dyn Fn(&Sample) -> f64| {
        v.iter().map(|s| f(s)).sum::<f64>() / v.len().max(1) as f64
    };
    let mut out = Vec::new();
    let mut add = |name: String, f: &dyn Fn(&Sample) -> f64, slack: f64, rel: f64| {
        let (a, b) = (mean(&q2, f), mean(&q4, f));
        let limit = a * (1.0 + rel) + slack;
        out.push(Series {
            name,
            first: samples.first().map_or(0.0, f),
            q2: a,
            q4: b,
            last: samples.last().map_or(0.0, f),
            limit,
            ok: b <= limit,
        });
    };
    for i in 0..clients {
        add(
            format!("client {i} rss_kb"),
            &|s: &Sample| s.rss_kb[i] as f64,
            256.0,
            0.02,
        );
        add(
            format!("client {i} tasks"),
            &|s: &Sample| s.tasks[i] as f64,
            3.0,
            0.3,
        );
    }
    add(
        "server connected_clients".into(),
        &|s: &Sample| s.connected_clients as f64,
        1.0,
        0.0,
    );
    add(
        "server used_memory".into(),
        &|s: &Sample| s.used_memory as f64,
        65_536.0,
        0.05,
    );
    add("server keys".into(), &|s: &Sample| s.keys as f64, 8.0, 0.0);
    add(
        "server keys without a TTL".into(),
        &|s: &Sample| s.lasting_keys as f64,
        0.0,
        0.0,
    );
    add(
        "server channels".into(),
        &|s: &Sample| s.channels as f64,
        2.0,
        0.0,
    );
    add(
        "server subscribers".into(),
        &|s: &Sample| s.subscribers as f64,
        2.0,
        0.0,
    );
    out
}

/// After each fault, by the last samples before the next one (or the end): the connections
/// back to their level before the fault (within 1), and the mean of each client's tasks over
/// the last three samples not above its mean over the three before the fault (within 30 %
/// and 3: waiters come and go; channels, which come and go with waiters too, are judged by the
/// quarters). What did not come back, said.
fn recoveries(samples: &[Sample], faults: &[(f64, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    let mean = |v: &[&Sample], f: &dyn Fn(&Sample) -> f64| {
        v.iter().map(|s| f(s)).sum::<f64>() / v.len().max(1) as f64
    };
    for (i, (at, what)) in faults.iter().enumerate() {
        let until = faults.get(i + 1).map_or(f64::MAX, |f| f.0);
        let before: Vec<&Sample> = samples.iter().filter(|s| s.t < *at).rev().take(3).collect();
        let after: Vec<&Sample> = samples
            .iter()
            .filter(|s| s.t > at + 3.0 && s.t < until)
            .rev()
            .take(3)
            .collect();
        if before.is_empty() || after.is_empty() {
            continue;
        }
        let (b, a) = (before[0], after[0]);
        if (a.connected_clients - b.connected_clients).abs() > 1 {
            out.push(format!(
                "{what} at {at:.0} s: {} connections before, {} at {:.0} s",
                b.connected_clients, a.connected_clients, a.t
            ));
        }
        for c in 0..b.tasks.len() {
            let tasks = |s: &Sample| s.tasks[c] as f64;
            if mean(&after, &tasks) > mean(&before, &tasks) * 1.3 + 3.0 {
                out.push(format!(
                    "{what} at {at:.0} s: client {c} had {:.1} tasks before, {:.1} after",
                    mean(&before, &tasks),
                    mean(&after, &tasks)
                ));
            }
        }
    }
    out
}

fn print_table(series: &[Series], recovered: &[String], faults: &[(f64, &str)], s: &[Sample]) {
    println!(
        "{} samples over {:.0} s, {} faults ({})",
        s.len(),
        s.last().map_or(0.0, |x| x.t),
        faults.len(),
        faults
            .iter()
            .map(|(t, w)| format!("{w} at {t:.0} s"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("| series | first | 2nd quarter | last quarter | last | limit | verdict |");
    println!("|---|---|---|---|---|---|---|");
    for x in series {
        println!(
            "| {} | {:.0} | {:.1} | {:.1} | {:.0} | {:.1} | {} |",
            x.name,
            x.first,
            x.q2,
            x.q4,
            x.last,
            x.limit,
            if x.ok { "ok" } else { "GREW" }
        );
    }
    for r in recovered {
        println!("not recovered: {r}");
    }
}
