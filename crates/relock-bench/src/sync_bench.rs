//! `relock-bench sync`: Redisson's other synchronizers beside the plain lock, in one run on one
//! server: uncontended pairs/s (plain lock on own keys, read lock on one shared key, semaphore
//! with a permit per task) and H-wait handoff latency (plain lock, write lock, a semaphore's
//! one permit); the rate limiter's grants at the limit, its accuracy and its `try_acquire`
//! beside a bare `EVALSHA` (`rate_bench`).

use std::time::{Duration, Instant};

use crate::bench::{contended, pairs_per_s, uncontended, Subject};
use crate::report::{outln, JsonTo, Text};
use crate::shared::{CliError, Target};
use crate::stats::{as_ms, ms};

/// Options of `relock-bench sync`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Redis to use; by default a local redis-server is started.
    #[arg(long)]
    redis: Option<String>,
    /// Seconds per case.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    seconds: u64,
    /// Tasks for the uncontended cases.
    #[arg(long, default_value_t = 64)]
    tasks: usize,
    /// Workers (in 2 clients) for the handoff cases.
    #[arg(long, default_value_t = 16)]
    workers: usize,
    /// How long a holder keeps the lock or permit in the handoff cases, in ms.
    #[arg(long, default_value_t = 5)]
    hold_ms: u64,
    /// Also write the results as JSON to FILE (`-`: stdout, the text report then goes to
    /// stderr).
    #[arg(long, value_name = "FILE", value_parser = JsonTo::from_arg)]
    json: Option<JsonTo>,
}

#[derive(serde::Serialize)]
struct Rate {
    case: &'static str,
    pairs_per_s: f64,
    ratio_to_plain: f64,
}

#[derive(serde::Serialize)]
struct Handoff {
    case: &'static str,
    handoffs: u64,
    p50_ms: f64,
    p99_ms: f64,
    p50_ratio_to_plain: f64,
    acquisitions_timed_out: u64,
}

#[derive(serde::Serialize)]
struct Report {
    redis: String,
    seconds_per_case: u64,
    tasks: usize,
    workers: usize,
    hold_ms: u64,
    uncontended: Vec<Rate>,
    handoff: Vec<Handoff>,
    spinning_waiters: Vec<Spinning>,
    takeover_p50_ms: f64,
    takeover_max_ms: f64,
    takeover_lease_ms: u64,
    rate_limiter: crate::rate_bench::RateRows,
}

/// What N spinning waiters cost the server.
#[derive(serde::Serialize)]
struct Spinning {
    waiters: usize,
    server_commands_per_s: f64,
    acquire_calls_per_s: f64,
}

/// Every command the server ran so far, and its `EVALSHA` calls (`INFO commandstats`).
async fn command_counts(url: &str) -> Result<(u64, u64), CliError> {
    use fred::interfaces::ClientLike;
    let client = crate::bench::fred_client(url).await?;
    let info: String = client
        .info(Some(fred::types::InfoKind::CommandStats))
        .await
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let _ = client.quit().await;
    let (mut all, mut evalsha) = (0, 0);
    for line in info.lines() {
        let Some((name, rest)) = line.split_once(":calls=") else {
            continue;
        };
        let calls: u64 = rest
            .split(',')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        all += calls;
        if name == "cmdstat_evalsha" {
            evalsha += calls;
        }
    }
    Ok((all, evalsha))
}

/// `n` spin waiters (one client) on a spin lock another client holds: the server's commands
/// per second and `EVALSHA` calls per second over `secs`, measured after their first second
/// (the back-off's climb to its cap).
async fn spinning_waiters(url: &str, n: usize, secs: Duration) -> Result<(f64, f64), CliError> {
    let holder = relock::Client::connect(url).await?;
    let waiters = relock::Client::connect(url).await?;
    relock_cli::shared::signals::register(&holder);
    relock_cli::shared::signals::register(&waiters);
    let name = format!("bench:spinning:{n}");
    let guard = holder.spin_lock(name.as_str()).lock().await?;
    let mut tasks = Vec::new();
    for _ in 0..n {
        let lock = waiters.spin_lock(name.as_str());
        tasks.push(tokio::spawn(async move {
            if let Ok(Some(g)) = lock.try_lock_for(Duration::from_secs(3600)).await {
                let _ = g.unlock().await;
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (all0, eval0, t0) = {
        let (a, e) = command_counts(url).await?;
        (a, e, Instant::now())
    };
    tokio::time::sleep(secs).await;
    let (all1, eval1) = command_counts(url).await?;
    let took = t0.elapsed().as_secs_f64();
    for t in &tasks {
        t.abort();
    }
    guard.unlock().await?;
    waiters.shutdown().await;
    holder.shutdown().await;
    // The two INFO calls themselves are in the count: negligible beside the polls.
    Ok(((all1 - all0) as f64 / took, (eval1 - eval0) as f64 / took))
}

/// The watchdog lease of the takeover runs (short, so that a run takes about a second).
const TAKEOVER_LEASE: Duration = Duration::from_millis(900);

/// A leader's client behind a proxy stops answering (both directions silenced, as a crash or
/// a partition); a standby waiting in `campaign` leads after its lease. Five runs: the time
/// from the silence to the standby's leadership, each.
async fn takeover(url: &str) -> Result<crate::stats::Latencies, CliError> {
    let fail = |e: relock_testkit::Error| CliError::Failed(e.to_string());
    let addr = url
        .strip_prefix("redis://")
        .and_then(|a| a.split('/').next())
        .ok_or_else(|| CliError::Failed(format!("takeover needs a redis:// URL, not {url}")))?;
    let mut times = crate::stats::Latencies::default();
    for run in 0..5 {
        let proxy = relock_testkit::FaultProxy::start(addr).map_err(fail)?;
        let leader = relock::Client::builder()
            .url(proxy.url())
            .watchdog_lease(TAKEOVER_LEASE)
            .command_timeout(Duration::from_millis(300))
            .build()
            .await?;
        let standby = relock::Client::builder()
            .url(url)
            .watchdog_lease(TAKEOVER_LEASE)
            .build()
            .await?;
        let name = format!("bench:takeover:{run}");
        let led = leader.election(&name).campaign("leader").await?;
        let waiting = {
            let e = standby.election(&name);
            tokio::spawn(async move { e.campaign("standby").await })
        };
        // Once the standby is in line.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while standby.fair_lock(&name).status().await?.queue.is_empty() {
            if std::time::Instant::now() > deadline {
                return Err(CliError::Failed("the standby never queued".into()));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let silenced = std::time::Instant::now();
        proxy.set_both(relock_testkit::Mode::Blackhole);
        let took = waiting
            .await
            .map_err(|e| CliError::Failed(e.to_string()))??;
        times.record(silenced.elapsed());
        took.resign().await?;
        drop(led);
        proxy.set_both(relock_testkit::Mode::Pass);
        standby.shutdown().await;
        let _ = tokio::time::timeout(Duration::from_secs(2), leader.shutdown()).await;
    }
    Ok(times)
}

pub(crate) async fn run(args: Args) -> Result<(), CliError> {
    let text = Text::new(args.json.as_ref());
    let target = Target::new(args.redis.clone())?;
    let secs = Duration::from_secs(args.seconds);
    outln!(
        text,
        "relock-bench sync on {} ({} s per case)\n",
        relock::redacted_url(&target.url),
        args.seconds
    );
    let plain = uncontended(&target.url, args.tasks, None, true, secs, "plain lock")
        .await?
        .pairs;
    let reads = shared_reads(&target.url, args.tasks, secs).await?;
    let permits = permits(&target.url, args.tasks, secs).await?;
    outln!(text, "uncontended: {} tasks", args.tasks);
    let mut rates = Vec::new();
    for (case, rate) in [
        ("plain lock, own keys", plain),
        ("read lock, one shared key", reads),
        ("semaphore, a permit per task", permits),
    ] {
        outln!(
            text,
            "  {case:<30} {rate:>9.0} pairs/s  ({:.2} x the plain lock)",
            rate / plain
        );
        rates.push(Rate {
            case,
            pairs_per_s: rate,
            ratio_to_plain: rate / plain,
        });
    }
    outln!(
        text,
        "\nhandoff (H-wait): {} workers in 2 clients, hold {} ms, re-ask only after another worker holds it",
        args.workers,
        args.hold_ms
    );
    let mut handoffs: Vec<Handoff> = Vec::new();
    for (case, subject) in [
        ("plain lock", Subject::Plain),
        ("write lock", Subject::Write),
        ("semaphore permit", Subject::Permit),
        ("fair lock", Subject::Fair),
        ("election", Subject::Election),
        ("spin lock", Subject::Spin),
    ] {
        let hold = Duration::from_millis(args.hold_ms);
        let h = contended(&target.url, args.workers, hold, secs, subject).await?;
        let (p50, p99) = (h.latencies.percentile(50.0), h.latencies.percentile(99.0));
        let plain_p50 = handoffs.first().map_or(as_ms(p50), |p| p.p50_ms);
        let ratio = as_ms(p50) / plain_p50.max(1e-6);
        outln!(
            text,
            "  {case:<18} p50 {}  p99 {}  ({ratio:.2} x the plain lock's p50; {} handoffs, {} timed out)",
            ms(p50),
            ms(p99),
            h.latencies.len(),
            h.lost_wakeups
        );
        handoffs.push(Handoff {
            case,
            handoffs: h.latencies.len(),
            p50_ms: as_ms(p50),
            p99_ms: as_ms(p99),
            p50_ratio_to_plain: ratio,
            acquisitions_timed_out: h.lost_wakeups,
        });
    }
    let fair = handoffs
        .iter()
        .find(|h| h.case == "fair lock")
        .map(|h| h.p50_ms);
    let election = handoffs
        .iter()
        .find(|h| h.case == "election")
        .map(|h| h.p50_ms);
    if let (Some(f), Some(e)) = (fair, election) {
        outln!(
            text,
            "  election p50 ÷ fair lock p50: {:.2} (a resignation adds one call before the release; no target)",
            e / f.max(1e-6)
        );
    }
    outln!(
        text,
        "\nspinning waiters: one client holds a spin lock, N tasks of another wait for it (back-off: the default, 1 ms doubling to 128 ms, up to 4 ms of jitter); what their polls cost the server (INFO commandstats, every command, over {} s after the first second)",
        args.seconds
    );
    let mut spinning = Vec::new();
    for n in [1usize, 16, 256] {
        let (per_s, evalsha_per_s) = spinning_waiters(&target.url, n, secs).await?;
        outln!(
            text,
            "  {n:>3} waiters: {per_s:>7.0} server commands/s ({evalsha_per_s:.0} acquire calls/s, {:.1} per waiter per second; no target)",
            evalsha_per_s / n as f64
        );
        spinning.push(Spinning {
            waiters: n,
            server_commands_per_s: per_s,
            acquire_calls_per_s: evalsha_per_s,
        });
    }
    let limiter = crate::rate_bench::run(&target.url, args.workers, secs).await?;
    outln!(
        text,
        "\nrate limiter: {} tasks acquire(1) in a loop at {} permits per {} ms ({:.0} per second): {:.0} grants/s ({:.2} x the limit); the most granted in any window of the interval, by the server's scores: {:.2} x the rate (must be <= 1.00; {} of {} grants' records seen)",
        limiter.tasks,
        limiter.rate,
        limiter.interval_ms,
        limiter.limit_per_s,
        limiter.grants_per_s,
        limiter.grants_per_s / limiter.limit_per_s,
        limiter.accuracy,
        limiter.grants_seen,
        limiter.grants
    );
    outln!(
        text,
        "  try_acquire p50 {:.3} ms p99 {:.3} ms, a bare EVALSHA of `return 1` p50 {:.3} ms p99 {:.3} ms (one task each): p50 {:.2} x the bare EVALSHA",
        limiter.try_acquire_p50_ms,
        limiter.try_acquire_p99_ms,
        limiter.evalsha_p50_ms,
        limiter.evalsha_p99_ms,
        limiter.p50_ratio_to_evalsha
    );
    let takeover = takeover(&target.url).await?;
    outln!(
        text,
        "\ntakeover: a leader stops answering (its connections silenced), lease {} ms: the standby leads after p50 {} max {} ({} runs; bound: lease + lease/3 = {} ms; no target)",
        TAKEOVER_LEASE.as_millis(),
        ms(takeover.percentile(50.0)),
        ms(takeover.percentile(100.0)),
        takeover.len(),
        (TAKEOVER_LEASE + TAKEOVER_LEASE / 3).as_millis()
    );
    if let Some(json) = &args.json {
        json.write(&Report {
            redis: relock::redacted_url(&target.url),
            seconds_per_case: args.seconds,
            tasks: args.tasks,
            workers: args.workers,
            hold_ms: args.hold_ms,
            uncontended: rates,
            handoff: handoffs,
            spinning_waiters: spinning,
            takeover_p50_ms: as_ms(takeover.percentile(50.0)),
            takeover_max_ms: as_ms(takeover.percentile(100.0)),
            takeover_lease_ms: TAKEOVER_LEASE.as_millis() as u64,
            rate_limiter: limiter,
        })?;
    }
    Ok(())
}

/// Read-lock acquire+release pairs/s: `tasks` tasks read one shared key (readers share, so
/// none waits).
async fn shared_reads(url: &str, tasks: usize, secs: Duration) -> Result<f64, CliError> {
    let client = relock::Client::connect(url).await?;
    relock_cli::shared::signals::register(&client);
    let lock = client.read_write_lock("bench:r").read_lock();
    lock.lock().await?.unlock().await?;
    let rate = pairs_per_s(tasks, secs, "read lock", |_| {
        let lock = lock.clone();
        move || {
            let lock = lock.clone();
            async move { lock.lock().await?.unlock().await }
        }
    })
    .await?;
    client.shutdown().await;
    Ok(rate)
}

/// Semaphore acquire+release pairs/s: `tasks` tasks on one semaphore with a permit each (none
/// waits).
async fn permits(url: &str, tasks: usize, secs: Duration) -> Result<f64, CliError> {
    let client = relock::Client::connect(url).await?;
    relock_cli::shared::signals::register(&client);
    let sem = client.semaphore("bench:s");
    sem.drain().await?;
    sem.release(tasks as u64).await?;
    let rate = pairs_per_s(tasks, secs, "semaphore", |_| {
        let sem = sem.clone();
        move || {
            let sem = sem.clone();
            async move { sem.acquire(1).await?.release().await }
        }
    })
    .await?;
    let _: i64 = fred::interfaces::KeysInterface::del(client.pool(), "bench:s")
        .await
        .map_err(|e| CliError::Failed(e.to_string()))?;
    client.shutdown().await;
    Ok(rate)
}
