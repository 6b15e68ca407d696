//! `relock-bench quorum`: the Q scenarios of `docs/performance.md` on 5 local masters: one
//! worker, serial acquire+release of one key, for an N-node quorum (5 by default), a single
//! node, N nodes with one SIGSTOPped, and (with `--rslock-bin`) the `rslock` crate on the same
//! nodes.

use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use relock_testkit::RedisMasters;

use crate::plot::{PlotFile, QuorumPlot};
use crate::progress::Phase;
use crate::report::{out, outln, JsonTo, Text};
use crate::shared::CliError;
use crate::stats::{as_ms, ms, Latencies};

/// Options of `relock-bench quorum`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Seconds per case.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    seconds: u64,
    /// Masters to start.
    #[arg(long, default_value_t = 5)]
    nodes: usize,
    /// Per-node timeout of the quorum client, in ms.
    #[arg(long, default_value_t = 50)]
    node_timeout_ms: u64,
    /// The peer benchmark binary (`bench/peers`, built with `cargo build --release`).
    #[arg(long)]
    rslock_bin: Option<String>,
    /// Also write the results as JSON to FILE (`-`: stdout, the text report then goes to
    /// stderr).
    #[arg(long, value_name = "FILE", value_parser = JsonTo::from_arg)]
    json: Option<JsonTo>,
    /// Also draw each configuration's acquire latency distribution (CDF) to FILE (.svg or .png).
    #[arg(long, value_name = "FILE", value_parser = PlotFile::from_arg)]
    plot: Option<PlotFile>,
}

pub(crate) struct Figures {
    pub(crate) pairs: usize,
    pub(crate) p50: Duration,
    pub(crate) p99: Duration,
    pub(crate) rate: f64,
    /// Every acquire latency, when measured here (a peer reports its percentiles only).
    pub(crate) latencies: Option<Latencies>,
}

impl Figures {
    fn print(&self, text: Text, what: &str, base: Option<&Figures>) {
        out!(
            text,
            "  {what:<34} acquire p50 {}  p99 {}  {:>6.0} pairs/s",
            ms(self.p50),
            ms(self.p99),
            self.rate
        );
        match base {
            Some(b) => outln!(
                text,
                "  (p50 {:.2} x, pairs/s {:.2} x the quorum)",
                self.p50.as_secs_f64() / b.p50.as_secs_f64().max(1e-9),
                self.rate / b.rate.max(1e-9)
            ),
            None => outln!(text, "  ({} pairs)", self.pairs),
        }
    }

    /// The figures of a peer's output line: pairs, p50 ms, p99 ms, pairs/s.
    pub(crate) fn of_peer(pairs: &str, p50: &str, p99: &str, rate: &str) -> Figures {
        let f = |s: &str| s.parse::<f64>().unwrap_or(f64::NAN);
        Figures {
            pairs: pairs.parse().unwrap_or(0),
            p50: Duration::from_secs_f64((f(p50) / 1000.0).max(0.0)),
            p99: Duration::from_secs_f64((f(p99) / 1000.0).max(0.0)),
            rate: f(rate),
            latencies: None,
        }
    }
}

/// One configuration in the JSON.
#[derive(serde::Serialize)]
struct Configuration {
    name: String,
    /// `quorum`, `single_node`, `quorum_one_paused`, `rslock` or `rslock_one_paused`.
    kind: &'static str,
    nodes: usize,
    paused_nodes: usize,
    pairs: usize,
    pairs_per_s: f64,
    acquire_p50_ms: f64,
    acquire_p99_ms: f64,
    /// Measured here only (null for a peer, which reports p50 and p99).
    acquire_p90_ms: Option<f64>,
    acquire_max_ms: Option<f64>,
    /// This configuration's p50 ÷ the quorum's (null for the quorum itself).
    p50_ratio_to_quorum: Option<f64>,
    pairs_per_s_ratio_to_quorum: Option<f64>,
    /// rslock acquisitions stuck over 3 s (rslock only).
    stuck_over_3_s: Option<u64>,
}

impl Configuration {
    fn new(name: &str, kind: &'static str, nodes: usize, f: &Figures, q: Option<&Figures>) -> Self {
        Configuration {
            name: name.to_string(),
            kind,
            nodes,
            paused_nodes: usize::from(kind.ends_with("paused")),
            pairs: f.pairs,
            pairs_per_s: f.rate,
            acquire_p50_ms: as_ms(f.p50),
            acquire_p99_ms: as_ms(f.p99),
            acquire_p90_ms: f.latencies.as_ref().map(|l| as_ms(l.percentile(90.0))),
            acquire_max_ms: f.latencies.as_ref().map(|l| as_ms(l.max())),
            p50_ratio_to_quorum: q.map(|q| f.p50.as_secs_f64() / q.p50.as_secs_f64().max(1e-9)),
            pairs_per_s_ratio_to_quorum: q.map(|q| f.rate / q.rate.max(1e-9)),
            stuck_over_3_s: None,
        }
    }
}

/// What `--json` writes.
#[derive(serde::Serialize)]
struct Report {
    nodes: usize,
    seconds_per_case: u64,
    node_timeout_ms: u64,
    configurations: Vec<Configuration>,
    /// Keys left without a TTL (never expiring), once released and the paused node resumed.
    keys_left_without_ttl: i64,
    /// Keys left on nodes other than the paused one.
    keys_left_on_other_nodes: i64,
    /// Keys left on all nodes once released and the paused node resumed (-1 per node that did
    /// not answer).
    keys_left_after_release: i64,
}

/// One lock+unlock of `lock`; returns how long the acquire took.
pub(crate) async fn timed_pair(lock: &relock::QuorumLock) -> Result<Duration, relock::Error> {
    let t = Instant::now();
    let g = lock.lock().await?;
    let took = t.elapsed();
    g.unlock().await?;
    Ok(took)
}

/// Runs `pair` one after another for `secs`, shown as the progress phase `label`.
pub(crate) async fn serial<F, Fut>(
    label: &str,
    secs: Duration,
    mut pair: F,
) -> Result<Figures, CliError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Duration, relock::Error>>,
{
    let phase = Phase::start(label, secs, "pairs");
    let done = phase.counter();
    let start = Instant::now();
    let mut lat = Latencies::new();
    while start.elapsed() < secs {
        lat.record(pair().await?);
        done.fetch_add(1, Ordering::Relaxed);
    }
    let rate = lat.len() as f64 / start.elapsed().as_secs_f64();
    phase.finish().await;
    Ok(Figures {
        pairs: usize::try_from(lat.len()).unwrap_or(usize::MAX),
        p50: lat.percentile(50.0),
        p99: lat.percentile(99.0),
        rate,
        latencies: Some(lat),
    })
}

pub(crate) async fn run(args: Args) -> Result<(), CliError> {
    if let Some(plot) = &args.plot {
        plot.prepare()?;
    }
    let text = Text::new(args.json.as_ref());
    let m = RedisMasters::start(args.nodes)?;
    let secs = Duration::from_secs(args.seconds);
    let n = args.nodes;
    outln!(
        text,
        "relock-bench quorum: {n} local masters, 1 worker, serial acquire+release, {} s per case\n",
        args.seconds
    );
    let quorum = relock::QuorumClient::builder()
        .urls(m.urls())
        .node_timeout(Duration::from_millis(args.node_timeout_ms))
        // The servers were just started; nothing could have been lost on them.
        .restart_quarantine(Duration::ZERO)
        .build()
        .await?;
    let qlock = quorum.lock("bench:q");
    let pair = || timed_pair(&qlock);
    pair().await?;
    let mut measured: Vec<(String, &'static str, usize, Figures)> = Vec::new();
    let q = serial("quorum", secs, pair).await?;
    let q_name = format!("relock quorum, {n} nodes");
    q.print(text, &q_name, None);

    let single = relock::Client::connect(m[0].url()).await?;
    let slock = single.lock("bench:s");
    let s = serial("single node", secs, || async {
        let t = Instant::now();
        let g = slock.lock().await?;
        let took = t.elapsed();
        g.unlock().await?;
        Ok(took)
    })
    .await?;
    let s_name = "relock single node (Client::lock)".to_string();
    s.print(text, &s_name, Some(&q));
    measured.push((s_name, "single_node", 1, s));
    single.shutdown().await;

    m[n / 2].pause()?;
    let p = serial("quorum, 1 paused", secs, pair).await;
    m[n / 2].resume()?;
    let p = p?;
    let p_name = format!("relock quorum, {n} nodes, 1 paused");
    p.print(text, &p_name, Some(&q));
    measured.push((p_name, "quorum_one_paused", n, p));
    quorum.shutdown().await;
    // Keys left behind once the paused node has caught up (the counter's 1 s grace aside).
    // Until nothing is left, for at most 10 s: the paused node's connections may have been
    // replaced, and a release that was on the way is then sent again on the new ones.
    let count = || -> i64 { m.servers().iter().map(|s| s.dbsize().unwrap_or(-1)).sum() };
    let mut left = count();
    let until = Instant::now() + Duration::from_secs(10);
    while left != 0 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = count();
    }
    outln!(
        text,
        "    keys left on all nodes after release and resume: {left}"
    );
    // What is left, and whether it expires by itself: a hold nobody owns ends with its lease
    // (docs/reliability.md says which late vote can still leave one).
    let (mut left_without_ttl, mut left_elsewhere) = (0i64, 0i64);
    for (i, s) in m.servers().iter().enumerate() {
        for k in s.keys().unwrap_or_default() {
            let ttl = s.cmd(&["PTTL", &k]).ok().and_then(|v| v.as_int());
            // A hash's fields name the attempt that left it (a client id and a sequence).
            let fields = match s.cmd(&["HKEYS", &k]) {
                Ok(relock_testkit::Value::Array(Some(v))) => v
                    .iter()
                    .filter_map(relock_testkit::Value::as_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                _ => String::new(),
            };
            outln!(
                text,
                "    left on node {i}: {k} (pttl {ttl:?} ms; fields: {fields})"
            );
            left_without_ttl += i64::from(ttl.is_none_or(|t| t <= 0));
            left_elsewhere += i64::from(i != n / 2);
        }
    }

    let mut peers: Vec<(String, &'static str, Figures, u64)> = Vec::new();
    if let Some(bin) = &args.rslock_bin {
        for paused in [false, true] {
            if paused {
                m[n / 2].pause()?;
            }
            let out = Command::new(bin)
                .arg(args.seconds.to_string())
                .args(m.urls())
                .output()
                .map_err(|e| CliError::Failed(format!("running {bin}: {e}")));
            if paused {
                m[n / 2].resume()?;
            }
            let out = out?;
            let output = String::from_utf8_lossy(&out.stdout);
            let cols: Vec<&str> = output.split_whitespace().collect();
            let (what, kind) = if paused {
                (
                    format!("rslock 0.10, {n} nodes, 1 paused"),
                    "rslock_one_paused",
                )
            } else {
                (format!("rslock 0.10, {n} nodes"), "rslock")
            };
            match cols.as_slice() {
                ["rslock", pairs, p50, p99, rate, stuck] => {
                    let fig = Figures::of_peer(pairs, p50, p99, rate);
                    fig.print(text, &what, Some(&q));
                    outln!(text, "    rslock acquisitions stuck > 3 s: {stuck}");
                    peers.push((what, kind, fig, stuck.parse().unwrap_or(0)));
                }
                _ => outln!(text, "  {what}: unexpected output {output:?}"),
            }
        }
    }

    if let Some(json) = &args.json {
        let mut configurations = vec![Configuration::new(&q_name, "quorum", n, &q, None)];
        for (name, kind, nodes, f) in &measured {
            configurations.push(Configuration::new(name, kind, *nodes, f, Some(&q)));
        }
        for (name, kind, f, stuck) in &peers {
            configurations.push(Configuration {
                stuck_over_3_s: Some(*stuck),
                ..Configuration::new(name, kind, n, f, Some(&q))
            });
        }
        json.write(&Report {
            nodes: n,
            seconds_per_case: args.seconds,
            node_timeout_ms: args.node_timeout_ms,
            configurations,
            keys_left_after_release: left,
            keys_left_without_ttl: left_without_ttl,
            keys_left_on_other_nodes: left_elsewhere,
        })?;
    }
    // The plot last: a plot that cannot be written must not cost the JSON.
    if let Some(file) = &args.plot {
        let mut cdfs = Vec::new();
        for (name, f) in std::iter::once((&q_name, &q)).chain(measured.iter().map(|m| (&m.0, &m.3)))
        {
            if let Some(l) = &f.latencies {
                cdfs.push((name.clone(), l));
            }
        }
        QuorumPlot {
            cdfs,
            points: peers
                .iter()
                .map(|(name, _, f, _)| (name.clone(), f.p50, f.p99))
                .collect(),
        }
        .write(file)?;
    }
    Ok(())
}
