//! `relock-bench watchdog`: holds many locks on one client and measures what keeping them costs:
//! renewal script calls per period (against one per 100 locks) and the client's CPU share.

use std::time::{Duration, Instant};

use relock_testkit::RedisServer;

use crate::shared::CliError;

/// Options of `relock-bench watchdog`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Locks to hold.
    #[arg(long, default_value_t = 100_000, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    locks: usize,
    /// Watchdog lease in ms (renewal every lease/3).
    #[arg(long, default_value_t = 3000)]
    lease_ms: u64,
    /// Renewal periods to observe.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    periods: u32,
    /// Holds do not listen on their locks' channels (`ClientBuilder::watch_holds(false)`): the
    /// baseline for what the hold watch costs.
    #[arg(long)]
    no_watch_holds: bool,
}

/// This process's CPU time (user + system) from `getrusage(RUSAGE_SELF)`: microsecond
/// resolution, whatever the kernel's clock tick.
pub(crate) fn cpu_time() -> Option<Duration> {
    rusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
}

/// The CPU time of this process's children that have ended and been waited for (a peer
/// benchmark run as a subprocess): its difference around one run is that run's CPU time.
pub(crate) fn children_cpu_time() -> Option<Duration> {
    rusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
}

fn rusage(who: nix::sys::resource::UsageWho) -> Option<Duration> {
    use nix::sys::resource::getrusage;
    use nix::sys::time::TimeValLike;
    let usage = getrusage(who).ok()?;
    let us = usage.user_time().num_microseconds() + usage.system_time().num_microseconds();
    Some(Duration::from_micros(u64::try_from(us).ok()?))
}

pub(crate) async fn run(args: Args) -> Result<(), CliError> {
    let server = RedisServer::start()?;
    let lease = Duration::from_millis(args.lease_ms);
    let client = relock::Client::builder()
        .url(server.url())
        .watchdog_lease(lease)
        .watch_holds(!args.no_watch_holds)
        .build()
        .await?;
    relock_cli::shared::signals::register(&client);
    println!(
        "relock-bench watchdog: {} locks on one client, lease {:?} (renewal every {:?}), hold watch {}",
        args.locks,
        lease,
        lease / 3,
        if args.no_watch_holds { "off" } else { "on" }
    );
    let started = Instant::now();
    let mut tasks = Vec::new();
    // Exactly `locks` locks: a surplus dropped before the window would land its releases in
    // it and be counted as renewal calls (an earlier version took 100 032 and dropped 32: the
    // "1.01 per 100 locks" it reported was those releases, not the watchdog).
    let (per, extra) = (args.locks / 64, args.locks % 64);
    for t in 0..64 {
        let client = client.clone();
        let (from, n) = (t * per + t.min(extra), per + usize::from(t < extra));
        tasks.push(tokio::spawn(async move {
            let mut guards = Vec::with_capacity(n);
            for i in from..from + n {
                guards.push(client.lock(format!("bench:w:{i}")).lock().await?);
            }
            Ok::<_, relock::Error>(guards)
        }));
    }
    let mut guards = Vec::with_capacity(args.locks);
    for t in tasks {
        guards.extend(t.await.map_err(|e| CliError::Failed(e.to_string()))??);
    }
    println!(
        "  acquired {} locks in {:?}",
        guards.len(),
        started.elapsed()
    );

    server.reset_stats()?;
    let (wall0, cpu0) = (Instant::now(), cpu_time());
    let window = lease / 3 * args.periods;
    tokio::time::sleep(window).await;
    let (wall, cpu1) = (wall0.elapsed(), cpu_time());
    let calls = server.command_calls("evalsha")? + server.command_calls("eval")?;
    let lost = guards.iter().filter(|g| g.is_lost()).count();
    let per_period = calls as f64 / f64::from(args.periods);
    println!(
        "  renewal script calls: {calls} in {} periods = {per_period:.0} per period ({:.2} per 100 locks; target <= 1)",
        args.periods,
        per_period / (args.locks as f64 / 100.0)
    );
    if let (Some(a), Some(b)) = (cpu0, cpu1) {
        println!(
            "  client CPU while holding: {:.1}% of one core (target <= 5%)",
            (b - a).as_secs_f64() / wall.as_secs_f64() * 100.0
        );
    }
    println!("  holds lost: {lost}");
    println!(
        "  channels subscribed (hold watches, at most 10,000): {}",
        server.pubsub_channels()?.len()
    );
    // Shutdown releases every hold at once; the guards then report themselves ended.
    let t = Instant::now();
    client.shutdown().await;
    drop(guards);
    println!("  released (client shutdown) in {:?}", t.elapsed());
    Ok(())
}
