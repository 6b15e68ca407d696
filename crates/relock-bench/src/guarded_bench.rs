//! `relock-bench guarded`: the cost of a guarded write (`LockGuard::write`) beside the same
//! commands sent bare by fred in one `MULTI`/`EXEC`, in one run on one server: one task, one
//! call at a time, the two kinds of call in turn, so each figure is a round trip and the
//! server's work, and both meet the same machine. The target is a
//! guarded write at most 1.3 × the bare transaction's p50 (both with 1 and with 10 commands).

use std::time::{Duration, Instant};

use relock::fred::interfaces::{ClientLike, HashesInterface};
use relock::fred::types::{ClusterHash, CustomCommand, Value};

use crate::report::{outln, JsonTo, Text};
use crate::shared::{CliError, Target};
use crate::stats::{as_ms, Latencies};

/// The ratio the guarded write may cost over the bare transaction.
const TARGET: f64 = 1.3;

/// Options of `relock-bench guarded`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Redis to use; by default a local redis-server is started.
    #[arg(long)]
    redis: Option<String>,
    /// Seconds per kind of call and batch size (the two kinds run in turn).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    seconds: u64,
    /// Also write the results as JSON to FILE (`-`: stdout, the text report then goes to
    /// stderr).
    #[arg(long, value_name = "FILE", value_parser = JsonTo::from_arg)]
    json: Option<JsonTo>,
}

#[derive(serde::Serialize)]
struct Case {
    commands: usize,
    guarded_p50_us: f64,
    guarded_p99_us: f64,
    bare_multi_p50_us: f64,
    bare_multi_p99_us: f64,
    ratio_p50: f64,
    target: f64,
    met: bool,
    calls: u64,
}

#[derive(serde::Serialize)]
struct Report {
    redis: String,
    seconds_per_case: u64,
    cases: Vec<Case>,
}

fn failed(e: impl std::fmt::Display) -> CliError {
    CliError::Failed(e.to_string())
}

/// Runs `a` and `b` in turn, one call at a time, for `secs` each (after a short warm-up):
/// their latencies. Interleaved, so that both meet the same machine: run one after the
/// other, the first case met a colder machine and the ratio moved by ±0.3 between runs.
async fn time_pair<A, AF, B, BF>(
    secs: Duration,
    mut a: A,
    mut b: B,
) -> Result<(Latencies, Latencies), CliError>
where
    A: FnMut() -> AF,
    AF: std::future::Future<Output = Result<(), CliError>>,
    B: FnMut() -> BF,
    BF: std::future::Future<Output = Result<(), CliError>>,
{
    for _ in 0..200 {
        a().await?;
        b().await?;
    }
    let (mut la, mut lb) = (Latencies::new(), Latencies::new());
    let end = Instant::now() + 2 * secs;
    while Instant::now() < end {
        let t = Instant::now();
        a().await?;
        la.record(t.elapsed());
        let t = Instant::now();
        b().await?;
        lb.record(t.elapsed());
    }
    Ok((la, lb))
}

/// Runs the benchmark.
pub(crate) async fn run(args: Args) -> Result<(), CliError> {
    let text = Text::new(args.json.as_ref());
    let target = Target::new(args.redis.clone())?;
    let secs = Duration::from_secs(args.seconds);
    outln!(
        text,
        "relock-bench guarded on {} ({} s per case, one call at a time)\n",
        relock::redacted_url(&target.url),
        args.seconds
    );
    let client = relock::Client::connect(target.url.clone())
        .await
        .map_err(failed)?;
    let bare = relock::fred::types::Builder::from_config(
        relock::fred::types::config::Config::from_url(&target.url).map_err(failed)?,
    )
    .build()
    .map_err(failed)?;
    bare.init().await.map_err(failed)?;
    let guard = client.lock("bench:guarded").lock().await.map_err(failed)?;
    let mut cases = Vec::new();
    for n in [1usize, 10] {
        let keys: Vec<String> = (0..n).map(|i| format!("{{bench:guarded}}:k{i}")).collect();
        let guarded = || {
            let mut batch = relock::Commands::new();
            for k in &keys {
                batch = batch.cmd("HSET").key(k).arg("f").arg("v");
            }
            let guard = &guard;
            async move { guard.write(batch).await.map(|_| ()).map_err(failed) }
        };
        // MULTI, the commands and EXEC in one pipeline: one round trip, as the guarded write.
        let multi = || {
            let p = bare.pipeline();
            let keys = keys.clone();
            async move {
                let word =
                    |w: &'static str| CustomCommand::new_static(w, ClusterHash::FirstKey, false);
                let _: () = p
                    .custom(word("MULTI"), Vec::<Value>::new())
                    .await
                    .map_err(failed)?;
                for k in &keys {
                    let _: () = p.hset(k.as_str(), ("f", "v")).await.map_err(failed)?;
                }
                let _: () = p
                    .custom(word("EXEC"), Vec::<Value>::new())
                    .await
                    .map_err(failed)?;
                let replies: Vec<Value> = p.all().await.map_err(failed)?;
                match replies.last() {
                    Some(Value::Array(done)) if done.len() == keys.len() => Ok(()),
                    other => Err(failed(format!("unexpected EXEC reply {other:?}"))),
                }
            }
        };
        let (guarded, multi) = time_pair(secs, guarded, multi).await?;
        let (g50, m50) = (guarded.percentile(50.0), multi.percentile(50.0));
        let ratio = as_ms(g50) / as_ms(m50);
        outln!(
            text,
            "  {n:>2} command(s): guarded p50 {:>7.1} µs, p99 {:>7.1} µs; bare MULTI/EXEC p50 {:>7.1} µs, p99 {:>7.1} µs; ratio {ratio:.2} x (target <= {TARGET} x: {})",
            as_ms(g50) * 1000.0,
            as_ms(guarded.percentile(99.0)) * 1000.0,
            as_ms(m50) * 1000.0,
            as_ms(multi.percentile(99.0)) * 1000.0,
            if ratio <= TARGET { "met" } else { "not met" }
        );
        cases.push(Case {
            commands: n,
            guarded_p50_us: as_ms(g50) * 1000.0,
            guarded_p99_us: as_ms(guarded.percentile(99.0)) * 1000.0,
            bare_multi_p50_us: as_ms(m50) * 1000.0,
            bare_multi_p99_us: as_ms(multi.percentile(99.0)) * 1000.0,
            ratio_p50: ratio,
            target: TARGET,
            met: ratio <= TARGET,
            calls: guarded.len(),
        });
        let _: i64 = relock::fred::interfaces::KeysInterface::del(&bare, keys)
            .await
            .map_err(failed)?;
    }
    guard.unlock().await.map_err(failed)?;
    client.shutdown().await;
    let _ = bare.quit().await;
    if let Some(to) = &args.json {
        to.write(&Report {
            redis: relock::redacted_url(&target.url),
            seconds_per_case: args.seconds,
            cases,
        })?;
    }
    Ok(())
}
