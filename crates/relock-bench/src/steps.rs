//! The steps of a handoff inside relock, timed: relock reports each step of a handoff as a
//! TRACE event of target `relock::handoff` (`unlock`, `release.begin`, `release.sent`,
//! `release.replied`, `message`, `woken`, `attempt.sent`, `attempt.replied`, `granted`). The
//! bench's subscriber notes each with its time and its task while a measurement is armed; a
//! ping-pong of two holders on two clients then gives, per handoff, the path from the holder's
//! `unlock` to the waiter's guard, the time between each two steps, and the task hops inside
//! relock (every change of task on that path apart from the wire's, into `message`, which
//! the bare-fred floor has too). fred's own hops (a command to its connection
//! task and the reply back) are not steps: the floor pays them too.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

use crate::shared::CliError;
use crate::stats::{ms, Latencies};

/// Whether steps are being noted (only while a steps measurement runs).
static ARMED: AtomicBool = AtomicBool::new(false);
/// The steps noted: (step, when, task).
static SEEN: Mutex<Vec<(String, Instant, Option<tokio::task::Id>)>> = Mutex::new(Vec::new());

/// The bench's subscriber: the CLI's log lines (`RUST_LOG` or `RELOCK_LOG`, else warnings) on
/// stderr, and the handoff steps for [`measure`].
pub(crate) fn init_logging() {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_env("RUST_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_env("RELOCK_LOG"))
        .unwrap_or_else(|_| "warn".into());
    let log = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .with_filter(filter);
    // Enabled only while armed: the filter is asked again for each callsite when `arm`
    // rebuilds tracing's interest cache, so that outside a steps measurement the steps cost
    // what they cost a user without a subscriber for them (review: left enabled, each event was
    // built and recorded in every measurement, about 0.2 µs of client CPU per U pair).
    let steps = Steps.with_filter(tracing_subscriber::filter::filter_fn(|m| {
        ARMED.load(Ordering::SeqCst) && m.target() == "relock::handoff"
    }));
    tracing_subscriber::registry().with(log).with(steps).init();
}

/// Starts or stops noting steps.
fn arm(on: bool) {
    ARMED.store(on, Ordering::SeqCst);
    tracing::callsite::rebuild_interest_cache();
}

struct Steps;

impl<S: tracing::Subscriber> Layer<S> for Steps {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if !ARMED.load(Ordering::Relaxed) {
            return;
        }
        let at = Instant::now();
        struct Step(String);
        impl tracing::field::Visit for Step {
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                if field.name() == "step" {
                    self.0 = value.to_string();
                }
            }
            fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
        }
        let mut step = Step(String::new());
        event.record(&mut step);
        SEEN.lock()
            .unwrap()
            .push((step.0, at, tokio::task::try_id()));
    }
}

/// One step of a handoff: when, and in which task.
type Seen = (Instant, Option<tokio::task::Id>);

/// What [`measure`] found for one kind.
pub(crate) struct HandoffSteps {
    /// The most common path from `unlock` to `granted`, and how many handoffs took it, of all.
    pub(crate) path: Vec<String>,
    pub(crate) took_it: usize,
    pub(crate) handoffs: usize,
    /// Task hops inside relock on that path.
    pub(crate) hops: usize,
    /// p50 of the time from each step of that path to the next.
    pub(crate) gaps: Vec<Duration>,
    /// p50 from `unlock` to `granted`.
    pub(crate) total: Duration,
}

impl HandoffSteps {
    pub(crate) fn print(&self, kind: &str) {
        println!(
            "handoff steps, {kind} ({} of {} handoffs took this path; {} task hops inside relock; unlock → granted p50 {}):",
            self.took_it,
            self.handoffs,
            self.hops,
            ms(self.total)
        );
        for (w, gap) in self.path.windows(2).zip(&self.gaps) {
            println!("  {:>16} → {:<16} p50 {}", w[0], w[1], ms(*gap));
        }
    }
}

/// Hands `name` (a plain or a fair lock) back and forth `n` times between two holders on two
/// clients, each holding it `hold` (a handoff after a hold, as H-wait's), and notes the steps.
pub(crate) async fn measure(
    url: &str,
    fair: bool,
    n: usize,
    hold: Duration,
) -> Result<HandoffSteps, CliError> {
    let clients = [
        relock::Client::connect(url).await?,
        relock::Client::connect(url).await?,
    ];
    let done = Arc::new(AtomicBool::new(false));
    let handoffs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (holder_tx, _) = tokio::sync::watch::channel(usize::MAX);
    let holder_tx = Arc::new(holder_tx);
    SEEN.lock().unwrap().clear();
    arm(true);
    // Disarmed however this ends (an error included).
    struct Disarm;
    impl Drop for Disarm {
        fn drop(&mut self) {
            arm(false);
        }
    }
    let disarm = Disarm;
    let mut workers = Vec::new();
    for (id, client) in clients.iter().enumerate() {
        let lock = if fair {
            client.fair_lock("bench:steps")
        } else {
            client.lock("bench:steps")
        };
        let (done, handoffs, holder_tx) = (done.clone(), handoffs.clone(), holder_tx.clone());
        workers.push(tokio::spawn(async move {
            let mut holder_rx = holder_tx.subscribe();
            while !done.load(Ordering::SeqCst) {
                let Some(guard) = lock.try_lock_for(Duration::from_secs(2)).await? else {
                    continue;
                };
                if handoffs.fetch_add(1, Ordering::SeqCst) + 1 >= n {
                    done.store(true, Ordering::SeqCst);
                }
                holder_tx.send_replace(id);
                tokio::time::sleep(hold).await;
                guard.unlock().await?;
                // Ask again only once the other holds it: every handoff goes to a parked waiter.
                let _ = tokio::time::timeout(
                    Duration::from_secs(2),
                    holder_rx.wait_for(|h| *h != id || done.load(Ordering::SeqCst)),
                )
                .await;
            }
            Ok::<(), relock::Error>(())
        }));
    }
    for w in workers {
        w.await.map_err(|e| CliError::Failed(e.to_string()))??;
    }
    drop(disarm);
    for c in &clients {
        c.shutdown().await;
    }
    let seen = std::mem::take(&mut *SEEN.lock().unwrap());
    // Each handoff: from an `unlock` to the next `granted`, the releaser's `release.replied`
    // left out (it is off the waiter's path).
    let mut paths: BTreeMap<Vec<String>, Vec<Vec<Seen>>> = BTreeMap::new();
    let mut i = 0;
    while i < seen.len() {
        if seen[i].0 != "unlock" {
            i += 1;
            continue;
        }
        let mut path = vec![&seen[i]];
        let mut j = i + 1;
        while j < seen.len() && seen[j].0 != "granted" && seen[j].0 != "unlock" {
            if seen[j].0 != "release.replied" {
                path.push(&seen[j]);
            }
            j += 1;
        }
        if j < seen.len() && seen[j].0 == "granted" {
            path.push(&seen[j]);
            paths
                .entry(path.iter().map(|s| s.0.clone()).collect())
                .or_default()
                .push(path.iter().map(|s| (s.1, s.2)).collect());
        }
        i = j;
    }
    let handoffs = paths.values().map(Vec::len).sum();
    let (path, runs) = paths
        .into_iter()
        .max_by_key(|(_, runs)| runs.len())
        .ok_or_else(|| CliError::Failed("no handoff steps were seen".into()))?;
    // The hops of each handoff that took the path; the most common count.
    let mut counts: BTreeMap<usize, usize> = BTreeMap::new();
    for run in &runs {
        let hops = run
            .windows(2)
            .zip(path.windows(2))
            .filter(|(t, s)| t[0].1 != t[1].1 && s[1] != "message")
            .count();
        *counts.entry(hops).or_default() += 1;
    }
    let hops = counts
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .map_or(0, |(hops, _)| hops);
    let mut gaps = vec![Latencies::new(); path.len() - 1];
    let mut total = Latencies::new();
    for run in &runs {
        for (k, w) in run.windows(2).enumerate() {
            gaps[k].record(w[1].0 - w[0].0);
        }
        total.record(run[run.len() - 1].0 - run[0].0);
    }
    Ok(HandoffSteps {
        path,
        took_it: runs.len(),
        handoffs,
        hops,
        gaps: gaps.iter().map(|l| l.percentile(50.0)).collect(),
        total: total.percentile(50.0),
    })
}

/// What the server runs per handoff, `hold` as in [`measure`] (after a hold the server, idle
/// meanwhile, runs cold; back to back, warm): the commands by name and how many of each per
/// handoff (SLOWLOG, every command logged in one pass: scripts by name, and each command a
/// script runs under its own name), and the scripts' mean run time (INFO commandstats'
/// `usec_per_call` of EVALSHA, in another pass without the log, whose cost would count in the
/// scripts' time).
pub(crate) async fn server_work(
    url: &str,
    fair: bool,
    n: usize,
    hold: Duration,
) -> Result<ServerWork, CliError> {
    use fred::interfaces::ClientLike;
    let admin = crate::bench::fred_client(url).await?;
    // An admin command: its name, then its arguments.
    let run = |args: Vec<&str>| {
        let admin = admin.clone();
        let mut args: Vec<String> = args.into_iter().map(String::from).collect();
        let name = args.remove(0);
        async move {
            let cmd = fred::types::CustomCommand::new(name, None, false);
            admin
                .custom::<fred::types::Value, _>(cmd, args)
                .await
                .map_err(|e| CliError::Failed(e.to_string()))
        }
    };
    let get = |v: fred::types::Value| -> Option<String> {
        match v {
            fred::types::Value::Array(a) => a.get(1).and_then(|x| x.as_string()),
            fred::types::Value::Map(m) => m.values().next().and_then(|x| x.as_string()),
            _ => None,
        }
    };
    let slower_than = get(run(vec!["CONFIG", "GET", "slowlog-log-slower-than"]).await?);
    let max_len = get(run(vec!["CONFIG", "GET", "slowlog-max-len"]).await?);
    // Pass 1: every command logged.
    run(vec!["CONFIG", "SET", "slowlog-log-slower-than", "0"]).await?;
    run(vec!["CONFIG", "SET", "slowlog-max-len", "1000000"]).await?;
    run(vec!["SLOWLOG", "RESET"]).await?;
    let handoffs = measure(url, fair, n, hold).await?.handoffs.max(1);
    let log = run(vec!["SLOWLOG", "GET", "-1"]).await?;
    run(vec![
        "CONFIG",
        "SET",
        "slowlog-log-slower-than",
        slower_than.as_deref().unwrap_or("10000"),
    ])
    .await?;
    run(vec![
        "CONFIG",
        "SET",
        "slowlog-max-len",
        max_len.as_deref().unwrap_or("128"),
    ])
    .await?;
    run(vec!["SLOWLOG", "RESET"]).await?;
    // Pass 2: the scripts' time, nothing logged.
    run(vec!["CONFIG", "RESETSTAT"]).await?;
    let _ = measure(url, fair, n, hold).await?;
    let stats = run(vec!["INFO", "commandstats"]).await?;
    let _ = admin.quit().await;
    let names: std::collections::HashMap<String, &str> = [
        ("acquire", relock::lua::ACQUIRE),
        ("release", relock::lua::RELEASE),
        ("batch", relock::lua::BATCH),
        ("fair_acquire", relock::lua::FAIR_ACQUIRE),
        ("fair_release", relock::lua::FAIR_RELEASE),
        ("fair_leave", relock::lua::FAIR_LEAVE),
        ("fair_heartbeat", relock::lua::FAIR_HEARTBEAT),
    ]
    .into_iter()
    .map(|(name, lua)| (fred::util::sha1_hash(lua), name))
    .collect();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    // Each script call and the commands it ran: a script's commands are logged as they end and
    // the script when it ends, with nothing of another client's between (a script runs alone),
    // so, oldest first, the commands since the last script's entry are the next script's.
    let mut per_script: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut ran = 0;
    if let fred::types::Value::Array(mut entries) = log {
        entries.reverse();
        for entry in entries {
            let fred::types::Value::Array(fields) = entry else {
                continue;
            };
            let Some(fred::types::Value::Array(args)) = fields.get(3) else {
                continue;
            };
            let args: Vec<String> = args.iter().filter_map(|a| a.as_string()).collect();
            let Some(command) = args.first().map(|c| c.to_lowercase()) else {
                continue;
            };
            if matches!(
                command.as_str(),
                "slowlog" | "config" | "ping" | "info" | "client" | "quit" | "hello"
            ) {
                continue;
            }
            let name = match (command.as_str(), args.get(1)) {
                ("evalsha" | "evalsha_ro", Some(sha)) => {
                    let script = names.get(sha.as_str()).copied().unwrap_or("(other script)");
                    // fair_acquire's mode, ARGV[5] after its 4 keys: a first attempt (`try`)
                    // or a join (`wait`).
                    let call = match (script, args.get(11).map(String::as_str)) {
                        ("fair_acquire", Some(mode @ ("try" | "wait"))) => {
                            format!("fair_acquire ({mode})")
                        }
                        _ => script.to_owned(),
                    };
                    let e = per_script.entry(call).or_default();
                    e.0 += 1;
                    e.1 += std::mem::take(&mut ran);
                    format!("EVALSHA {script}")
                }
                _ => {
                    if !command.ends_with("subscribe") {
                        ran += 1;
                    }
                    command
                }
            };
            *counts.entry(name).or_default() += 1;
        }
    }
    let stats = stats.as_string().unwrap_or_default();
    let evalsha_us = stats
        .lines()
        .find(|l| l.starts_with("cmdstat_evalsha:"))
        .and_then(|l| l.split("usec_per_call=").nth(1))
        .and_then(|v| v.split(',').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN);
    let mut commands: Vec<(String, f64)> = counts
        .into_iter()
        .map(|(name, n)| (name, n as f64 / handoffs as f64))
        .collect();
    commands.sort_by_key(|c| std::cmp::Reverse(c.0.starts_with("EVALSHA")));
    let scripts = per_script
        .into_iter()
        .map(|(name, (calls, ran))| (name, ran as f64 / calls.max(1) as f64))
        .collect();
    Ok(ServerWork {
        commands,
        scripts,
        evalsha_us,
    })
}

/// What [`server_work`] found.
pub(crate) struct ServerWork {
    /// Commands by name (scripts as `EVALSHA <script>`), and how many per handoff.
    pub(crate) commands: Vec<(String, f64)>,
    /// Each script (`fair_acquire` by its mode, `try` or `wait`), and the commands it ran per
    /// call.
    pub(crate) scripts: Vec<(String, f64)>,
    /// The scripts' mean run time, µs.
    pub(crate) evalsha_us: f64,
}

impl ServerWork {
    /// The commands a script runs per handoff (all but the scripts and pub/sub's own).
    pub(crate) fn inner_calls(&self) -> f64 {
        // (Counted from the log's commands, not from `scripts`: a command logged after the last
        // script's entry counts too.)
        self.commands
            .iter()
            .filter(|(n, _)| !n.starts_with("EVALSHA") && !n.ends_with("subscribe"))
            .map(|(_, per)| per)
            .sum()
    }
}
