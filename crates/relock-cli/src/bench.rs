//! `relock bench`: the figures of `docs/performance.md`, each beside a ceiling measured by
//! `redis-benchmark` on the same server in the same run.

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fred::interfaces::{ClientLike, LuaInterface};

use crate::stats::{ms, percentile};
use crate::{CliError, Target};

/// Options of `relock bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Redis to use; by default a local redis-server is started.
    #[arg(long)]
    redis: Option<String>,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 3)]
    seconds: u64,
    /// Tasks for the uncontended case (each on its own key).
    #[arg(long, default_value_t = 64)]
    tasks: usize,
    /// Command connections per client.
    #[arg(long, default_value_t = 4)]
    connections: usize,
    /// Workers (in 2 clients) for the contended case.
    #[arg(long, default_value_t = 16)]
    workers: usize,
    /// How long a holder keeps the lock in the contended case, in ms.
    #[arg(long, default_value_t = 5)]
    hold_ms: u64,
    /// Skip the redis-benchmark ceilings.
    #[arg(long)]
    no_baseline: bool,
    /// Send every lock operation on its own (`ClientBuilder::coalesce(false)`).
    #[arg(long)]
    no_coalesce: bool,
}

pub(crate) async fn run(args: Args) -> Result<(), CliError> {
    let target = Target::new(args.redis.clone())?;
    let secs = Duration::from_secs(args.seconds);
    println!(
        "relock bench on {} ({} s per case)\n",
        relock::redacted_url(&target.url),
        args.seconds
    );

    // redis-benchmark takes a password only on its command line (`-a`), where every user of
    // the machine can read it: with credentials in the URL the baselines are skipped.
    let has_credentials = target
        .url
        .split_once("://")
        .is_some_and(|(_, rest)| rest.contains('@'));
    if has_credentials && !args.no_baseline {
        println!("(redis-benchmark baselines skipped: the URL has credentials, which redis-benchmark would take on its command line)\n");
    }
    let ceilings = if args.no_baseline || has_credentials {
        None
    } else {
        Some(baselines(&target, args.tasks).await?)
    };

    let pairs = uncontended(
        &target.url,
        args.tasks,
        Some(args.connections),
        !args.no_coalesce,
        secs,
    )
    .await?;
    println!(
        "uncontended: {} tasks, own keys, {} connections",
        args.tasks, args.connections
    );
    println!("  relock lock+unlock            {:>9.0} pairs/s", pairs);
    if let Some(c) = &ceilings {
        println!(
            "  redis-benchmark acquire -c {} {:>9.0} scripts/s -> {:.0} pairs/s ceiling; relock = {:.2} x",
            args.tasks,
            c.acquire_rps,
            c.acquire_rps / 2.0,
            pairs / (c.acquire_rps / 2.0)
        );
        println!(
            "  same, pipelined -P 16         {:>9.0} scripts/s -> {:.0} pairs/s; relock = {:.2} x",
            c.acquire_rps_pipelined,
            c.acquire_rps_pipelined / 2.0,
            pairs / (c.acquire_rps_pipelined / 2.0)
        );
    }

    println!(
        "\ncontended (H-wait): {} workers in 2 clients, one key, hold {} ms, re-ask only after another worker holds it",
        args.workers, args.hold_ms
    );
    let mut plain_p50 = None;
    for fair in [false, true] {
        let calls_before = evalsha_calls(&target.url).await;
        let h = contended(
            &target.url,
            args.workers,
            Duration::from_millis(args.hold_ms),
            secs,
            fair,
        )
        .await?;
        let calls_after = evalsha_calls(&target.url).await;
        let mut lat = h.latencies;
        let (p50, p99) = (percentile(&mut lat, 50.0), percentile(&mut lat, 99.0));
        println!("  {} lock", if fair { "fair" } else { "plain" });
        println!(
            "    handoffs                    {:>9.0} /s ({} in {} s)",
            lat.len() as f64 / secs.as_secs_f64(),
            lat.len(),
            args.seconds
        );
        print!(
            "    handoff latency             p50 {}  p99 {}",
            ms(p50),
            ms(p99)
        );
        match plain_p50 {
            None => {
                plain_p50 = Some(p50);
                println!();
            }
            Some(plain) => println!(
                "  (p50 = {:.2} x the plain lock's)",
                p50.as_secs_f64() / Duration::as_secs_f64(&plain).max(1e-9)
            ),
        }
        println!("    lock acquisitions timed out {}", h.lost_wakeups);
        if let (Some(b), Some(a)) = (calls_before, calls_after) {
            // Every acquire attempt, release (one per acquisition) and fair heartbeat is one
            // script call.
            let per = (a - b) as f64 / h.acquisitions.max(1) as f64;
            println!(
                "    server script calls/handoff {per:.2}: {:.2} acquire attempts (+ heartbeats) and 1 release",
                per - 1.0
            );
        }
        if let Some(c) = &ceilings {
            println!(
                "    redis-benchmark PING -c 1   p50 {}; handoff p50 = {:.1} x PING p50",
                ms(c.ping_p50),
                p50.as_secs_f64() / c.ping_p50.as_secs_f64().max(1e-9)
            );
        }
    }
    Ok(())
}

struct Ceilings {
    acquire_rps: f64,
    acquire_rps_pipelined: f64,
    ping_p50: Duration,
}

/// redis-benchmark on the same server: the acquire script on random keys, and PING latency.
async fn baselines(target: &Target, concurrency: usize) -> Result<Ceilings, CliError> {
    let url = &target.url;
    let client = fred_client(url).await?;
    let sha: String = client
        .script_load(relock::lua::ACQUIRE)
        .await
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let _ = client.quit().await;
    let (host, port) = host_port(url)?;
    let c = concurrency.to_string();
    // Short leases so the keys the benchmark creates expire by themselves.
    let script = [
        "EVALSHA",
        &sha,
        "2",
        "rb:{__rand_int__}",
        "rb:tok:{__rand_int__}",
        "2000",
        "owner:1",
        "1000",
    ];
    let acquire_rps = redis_benchmark(
        &host,
        &port,
        &["-c", &c, "-n", "100000", "-r", "10000000"],
        &script,
    )?
    .0;
    let acquire_rps_pipelined = redis_benchmark(
        &host,
        &port,
        &["-c", &c, "-P", "16", "-n", "400000", "-r", "10000000"],
        &script,
    )?
    .0;
    let ping_p50 = redis_benchmark(&host, &port, &["-c", "1", "-n", "20000"], &["PING"])?.1;
    if target.server.is_some() {
        flush(url).await?;
    }
    Ok(Ceilings {
        acquire_rps,
        acquire_rps_pipelined,
        ping_p50,
    })
}

/// Runs redis-benchmark in CSV mode; returns (requests/s, p50 latency).
pub(crate) fn redis_benchmark(
    host: &str,
    port: &str,
    opts: &[&str],
    command: &[&str],
) -> Result<(f64, Duration), CliError> {
    let out = Command::new("redis-benchmark")
        .args(["-h", host, "-p", port, "--csv"])
        .args(opts)
        .args(command)
        .output()
        .map_err(|e| {
            CliError::Failed(format!(
                "running redis-benchmark (install redis-tools): {e}"
            ))
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text
        .lines()
        .rfind(|l| !l.starts_with("\"test\""))
        .ok_or_else(|| {
            CliError::Failed(format!(
                "redis-benchmark printed nothing: {}",
                String::from_utf8_lossy(&out.stderr)
            ))
        })?;
    let cols: Vec<f64> = row
        .split(',')
        .skip(1)
        .filter_map(|c| c.trim_matches('"').parse().ok())
        .collect();
    match cols.as_slice() {
        [rps, _avg, _min, p50, ..] => Ok((*rps, Duration::from_secs_f64(p50 / 1000.0))),
        _ => Err(CliError::Failed(format!(
            "unexpected redis-benchmark output: {row}"
        ))),
    }
}

pub(crate) fn host_port(url: &str) -> Result<(String, String), CliError> {
    let rest = url.split("://").nth(1).unwrap_or(url);
    let hostport = rest.split('/').next().unwrap_or(rest);
    let hostport = hostport.rsplit('@').next().unwrap_or(hostport);
    match hostport.rsplit_once(':') {
        Some((h, p)) => Ok((h.to_string(), p.to_string())),
        None => Ok((hostport.to_string(), "6379".to_string())),
    }
}

pub(crate) async fn fred_client(url: &str) -> Result<fred::clients::Client, CliError> {
    let config =
        fred::types::config::Config::from_url(url).map_err(|e| CliError::Failed(e.to_string()))?;
    let client = fred::clients::Client::new(config, None, None, None);
    client
        .init()
        .await
        .map_err(|e| CliError::Failed(format!("{}: {e}", relock::redacted_url(url))))?;
    Ok(client)
}

/// FLUSHALL on a server this run started (what a benchmark left).
pub(crate) async fn flush(url: &str) -> Result<(), CliError> {
    let client = fred_client(url).await?;
    let _: () = client
        .flushall(false)
        .await
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let _ = client.quit().await;
    Ok(())
}

async fn evalsha_calls(url: &str) -> Option<u64> {
    let client = fred_client(url).await.ok()?;
    let info: String = client
        .info(Some(fred::types::InfoKind::CommandStats))
        .await
        .ok()?;
    let _ = client.quit().await;
    let calls = |cmd: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("cmdstat_{cmd}:calls=")))
            .and_then(|r| r.split(',').next())
            .and_then(|n| n.parse::<u64>().ok())
    };
    Some(calls("evalsha")? + calls("eval").unwrap_or(0))
}

pub(crate) async fn uncontended(
    url: &str,
    tasks: usize,
    connections: Option<usize>,
    coalesce: bool,
    secs: Duration,
) -> Result<f64, CliError> {
    let mut builder = relock::Client::builder().url(url).coalesce(coalesce);
    if let Some(n) = connections {
        builder = builder.connections(n);
    }
    let client = builder.build().await?;
    crate::signals::register(&client);
    let done = Arc::new(AtomicU64::new(0));
    // Warm up the connections and the script cache.
    client.lock("bench:u:warm").lock().await?.unlock().await?;
    let start = Instant::now();
    let deadline = start + secs;
    let mut handles = Vec::new();
    for i in 0..tasks {
        let (lock, done) = (client.lock(format!("bench:u:{i}")), done.clone());
        handles.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                lock.lock().await?.unlock().await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<(), relock::Error>(())
        }));
    }
    for h in handles {
        h.await.map_err(|e| CliError::Failed(e.to_string()))??;
    }
    let pairs = done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64();
    client.shutdown().await;
    Ok(pairs)
}

pub(crate) struct Contended {
    pub(crate) latencies: Vec<Duration>,
    pub(crate) acquisitions: u64,
    pub(crate) lost_wakeups: u64,
}

/// H-wait from `docs/performance.md`: after its unlock a worker asks again only once another
/// worker holds the lock, so every handoff goes to a waiter that was parked.
pub(crate) async fn contended(
    url: &str,
    workers: usize,
    hold: Duration,
    secs: Duration,
    fair: bool,
) -> Result<Contended, CliError> {
    let clients = [
        relock::Client::connect(url).await?,
        relock::Client::connect(url).await?,
    ];
    for c in &clients {
        crate::signals::register(c);
    }
    let (holder_tx, _) = tokio::sync::watch::channel(usize::MAX);
    let holder_tx = Arc::new(holder_tx);
    let last_release: Arc<Mutex<Option<(Instant, usize)>>> = Arc::default();
    let latencies: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let acquisitions = Arc::new(AtomicU64::new(0));
    let timeouts = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + secs;
    let mut handles = Vec::new();
    for id in 0..workers {
        let lock = if fair {
            clients[id % 2].fair_lock("bench:f")
        } else {
            clients[id % 2].lock("bench:h")
        };
        let (holder_tx, last_release, latencies) =
            (holder_tx.clone(), last_release.clone(), latencies.clone());
        let (acquisitions, timeouts) = (acquisitions.clone(), timeouts.clone());
        handles.push(tokio::spawn(async move {
            let mut holder_rx = holder_tx.subscribe();
            while Instant::now() < deadline {
                // A parked waiter is woken within the holder's TTL at worst (30 s); far less
                // than that counts as a lost wake-up.
                let Some(guard) = lock.try_lock_for(Duration::from_secs(2)).await? else {
                    timeouts.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                let got = Instant::now();
                acquisitions.fetch_add(1, Ordering::Relaxed);
                holder_tx.send_replace(id);
                if let Some((at, by)) = *last_release.lock().unwrap() {
                    if by != id {
                        latencies.lock().unwrap().push(got - at);
                    }
                }
                tokio::time::sleep(hold).await;
                *last_release.lock().unwrap() = Some((Instant::now(), id));
                guard.unlock().await?;
                // Re-ask only once someone else holds it (or the run is over).
                let _ = tokio::time::timeout_at(
                    deadline.into(),
                    holder_rx.wait_for(|h| *h != id && *h != usize::MAX),
                )
                .await;
            }
            Ok::<(), relock::Error>(())
        }));
    }
    for h in handles {
        h.await.map_err(|e| CliError::Failed(e.to_string()))??;
    }
    for c in &clients {
        c.shutdown().await;
    }
    let latencies = std::mem::take(&mut *latencies.lock().unwrap());
    Ok(Contended {
        latencies,
        acquisitions: acquisitions.load(Ordering::Relaxed),
        lost_wakeups: timeouts.load(Ordering::Relaxed),
    })
}
