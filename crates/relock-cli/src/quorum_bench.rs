//! `relock bench-quorum`: the Q scenarios of `docs/performance.md` on 5 local masters: one
//! worker, serial acquire+release of one key, for an N-node quorum (5 by default), a single
//! node, N nodes with one SIGSTOPped, and (with `--rslock-bin`) the `rslock` crate on the same
//! nodes.

use std::process::Command;
use std::time::{Duration, Instant};

use relock_testkit::RedisMasters;

use crate::stats::{ms, percentile};
use crate::CliError;

/// Options of `relock bench-quorum`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Seconds per case.
    #[arg(long, default_value_t = 3)]
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
}

pub(crate) struct Figures {
    pub(crate) pairs: usize,
    pub(crate) p50: Duration,
    pub(crate) p99: Duration,
    pub(crate) rate: f64,
}

impl Figures {
    fn print(&self, what: &str, base: Option<&Figures>) {
        print!(
            "  {what:<34} acquire p50 {}  p99 {}  {:>6.0} pairs/s",
            ms(self.p50),
            ms(self.p99),
            self.rate
        );
        match base {
            Some(b) => println!(
                "  (p50 {:.2} x, pairs/s {:.2} x the quorum)",
                self.p50.as_secs_f64() / b.p50.as_secs_f64().max(1e-9),
                self.rate / b.rate.max(1e-9)
            ),
            None => println!("  ({} pairs)", self.pairs),
        }
    }
}

/// One lock+unlock of `lock`; returns how long the acquire took.
pub(crate) async fn timed_pair(lock: &relock::QuorumLock) -> Result<Duration, relock::Error> {
    let t = Instant::now();
    let g = lock.lock().await?;
    let took = t.elapsed();
    g.unlock().await?;
    Ok(took)
}

pub(crate) async fn serial<F, Fut>(secs: Duration, mut pair: F) -> Result<Figures, CliError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Duration, relock::Error>>,
{
    let start = Instant::now();
    let mut lat = Vec::new();
    while start.elapsed() < secs {
        lat.push(pair().await?);
    }
    let rate = lat.len() as f64 / start.elapsed().as_secs_f64();
    Ok(Figures {
        pairs: lat.len(),
        p50: percentile(&mut lat, 50.0),
        p99: percentile(&mut lat, 99.0),
        rate,
    })
}

pub(crate) async fn run(args: Args) -> Result<(), CliError> {
    let m = RedisMasters::start(args.nodes)?;
    let secs = Duration::from_secs(args.seconds);
    println!(
        "relock bench-quorum: {} local masters, 1 worker, serial acquire+release, {} s per case\n",
        args.nodes, args.seconds
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
    let q = serial(secs, pair).await?;
    q.print(&format!("relock quorum, {} nodes", args.nodes), None);

    let single = relock::Client::connect(m[0].url()).await?;
    let slock = single.lock("bench:s");
    let s = serial(secs, || async {
        let t = Instant::now();
        let g = slock.lock().await?;
        let took = t.elapsed();
        g.unlock().await?;
        Ok(took)
    })
    .await?;
    s.print("relock single node (Client::lock)", Some(&q));
    single.shutdown().await;

    m[args.nodes / 2].pause()?;
    let p = serial(secs, pair).await;
    m[args.nodes / 2].resume()?;
    let p = p?;
    p.print(
        &format!("relock quorum, {} nodes, 1 paused", args.nodes),
        Some(&q),
    );
    quorum.shutdown().await;
    // Keys left behind once the paused node has caught up (the counter's 1 s grace aside).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let left: i64 = m.servers().iter().map(|s| s.dbsize().unwrap_or(-1)).sum();
    println!("    keys left on all nodes after release and resume: {left}");

    if let Some(bin) = &args.rslock_bin {
        for paused in [false, true] {
            if paused {
                m[args.nodes / 2].pause()?;
            }
            let out = Command::new(bin)
                .arg(args.seconds.to_string())
                .args(m.urls())
                .output()
                .map_err(|e| CliError::Failed(format!("running {bin}: {e}")))?;
            if paused {
                m[args.nodes / 2].resume()?;
            }
            let text = String::from_utf8_lossy(&out.stdout);
            let cols: Vec<&str> = text.split_whitespace().collect();
            let what = if paused {
                format!("rslock 0.10, {} nodes, 1 paused", args.nodes)
            } else {
                format!("rslock 0.10, {} nodes", args.nodes)
            };
            match cols.as_slice() {
                ["rslock", pairs, p50, p99, rate, stuck] => {
                    let f = |s: &str| s.parse::<f64>().unwrap_or(f64::NAN);
                    let fig = Figures {
                        pairs: pairs.parse().unwrap_or(0),
                        p50: Duration::from_secs_f64((f(p50) / 1000.0).max(0.0)),
                        p99: Duration::from_secs_f64((f(p99) / 1000.0).max(0.0)),
                        rate: f(rate),
                    };
                    fig.print(&what, Some(&q));
                    println!("    rslock acquisitions stuck > 3 s: {stuck}");
                }
                _ => println!("  {what}: unexpected output {text:?}"),
            }
        }
    }
    Ok(())
}
