//! The rate limiter's rows of `relock-bench sync`: its grants per second at the limit and how
//! exactly it keeps the limit (the most permits the server granted in any window of the
//! interval, from the grants' own scores, ÷ the rate: at most 1.0), and a `try_acquire`'s
//! latency beside a bare `EVALSHA` of a trivial script in the same run.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use fred::interfaces::{ClientLike, LuaInterface, SortedSetsInterface};

use crate::shared::CliError;
use crate::stats::Latencies;

/// The limit the "at the limit" row runs at: `RATE` permits per `INTERVAL` (500 per second).
const RATE: u64 = 50;
const INTERVAL: Duration = Duration::from_millis(100);

/// What the limiter's rows measured.
#[derive(Debug, serde::Serialize)]
pub(crate) struct RateRows {
    pub(crate) rate: u64,
    pub(crate) interval_ms: u64,
    pub(crate) tasks: usize,
    /// Grants per second, `tasks` tasks calling `acquire(1)` in a loop.
    pub(crate) grants_per_s: f64,
    /// The rate as grants per second (`rate` ÷ `interval`).
    pub(crate) limit_per_s: f64,
    /// The most grants in any window of the interval (by the server's scores) ÷ the rate.
    pub(crate) accuracy: f64,
    /// Grants whose record the reader saw (it reads the records every quarter interval; all of
    /// them, unless the reader fell behind).
    pub(crate) grants_seen: u64,
    pub(crate) grants: u64,
    /// One task's `try_acquire(1)`, granted each time, p50 and p99.
    pub(crate) try_acquire_p50_ms: f64,
    pub(crate) try_acquire_p99_ms: f64,
    /// One task's `EVALSHA` of `return 1`, p50 and p99, on the same server.
    pub(crate) evalsha_p50_ms: f64,
    pub(crate) evalsha_p99_ms: f64,
    /// `try_acquire`'s p50 ÷ the bare `EVALSHA`'s.
    pub(crate) p50_ratio_to_evalsha: f64,
}

/// Runs the rows, `secs` for each, `tasks` tasks at the limit.
pub(crate) async fn run(url: &str, tasks: usize, secs: Duration) -> Result<RateRows, CliError> {
    let client = relock::Client::connect(url).await?;
    relock_cli::shared::signals::register(&client);
    let (grants, grants_per_s, scores) = at_the_limit(&client, url, tasks, secs).await?;
    let accuracy = most_in_a_window(&scores, INTERVAL.as_millis() as i64) as f64 / RATE as f64;
    let acquire = try_acquire_latency(&client, secs).await?;
    let evalsha = evalsha_latency(url, secs).await?;
    client.shutdown().await;
    let ms = crate::stats::as_ms;
    let (a50, e50) = (acquire.percentile(50.0), evalsha.percentile(50.0));
    Ok(RateRows {
        rate: RATE,
        interval_ms: INTERVAL.as_millis() as u64,
        tasks,
        grants_per_s,
        limit_per_s: RATE as f64 / INTERVAL.as_secs_f64(),
        accuracy,
        grants_seen: scores.len() as u64,
        grants,
        try_acquire_p50_ms: ms(a50),
        try_acquire_p99_ms: ms(acquire.percentile(99.0)),
        evalsha_p50_ms: ms(e50),
        evalsha_p99_ms: ms(evalsha.percentile(99.0)),
        p50_ratio_to_evalsha: ms(a50) / ms(e50).max(1e-6),
    })
}

/// `tasks` tasks `acquire(1)` in a loop for `secs` on a limiter of [`RATE`] per [`INTERVAL`],
/// while a reader collects every grant's record (its score is the server's time of the grant,
/// in ms) before it expires. Returns the grants, grants per second and the scores seen.
async fn at_the_limit(
    client: &relock::Client,
    url: &str,
    tasks: usize,
    secs: Duration,
) -> Result<(u64, f64, Vec<i64>), CliError> {
    let limiter = client.rate_limiter("bench:rate");
    limiter.delete().await?;
    limiter
        .set_rate(relock::RateType::Overall, RATE, INTERVAL)
        .await?;
    let until = Instant::now() + secs;
    let workers: Vec<_> = (0..tasks)
        .map(|_| {
            let limiter = limiter.clone();
            tokio::spawn(async move {
                let mut n = 0u64;
                while Instant::now() < until {
                    if limiter.acquire(1).await.is_err() {
                        break;
                    }
                    n += 1;
                }
                n
            })
        })
        .collect();
    // A record lives at least the interval: reading them all every quarter of it sees each.
    let reader = crate::bench::fred_client(url).await?;
    let mut seen: HashMap<Vec<u8>, i64> = HashMap::new();
    let began = Instant::now();
    while Instant::now() < until + INTERVAL {
        // Member, score, member, score, ...
        let records: Vec<fred::types::Value> = reader
            .zrange("{bench:rate}:permits", 0, -1, None, false, None, true)
            .await
            .map_err(|e| CliError::Failed(e.to_string()))?;
        for pair in records.chunks(2) {
            if let [member, score] = pair {
                if let (Some(bytes), Some(score)) = (member.as_bytes(), score.as_f64()) {
                    seen.insert(bytes.to_vec(), score as i64);
                }
            }
        }
        tokio::time::sleep(INTERVAL / 4).await;
    }
    let mut grants = 0;
    for w in workers {
        grants += w.await.map_err(|e| CliError::Failed(e.to_string()))?;
    }
    let took = began.elapsed().min(secs + INTERVAL).as_secs_f64();
    let _ = reader.quit().await;
    limiter.delete().await?;
    let mut scores: Vec<i64> = seen.into_values().collect();
    scores.sort_unstable();
    Ok((grants, grants as f64 / took, scores))
}

/// The most scores (sorted, ms) in any window `[s, s + interval)`: the limiter counts a record
/// until `interval` after its score.
fn most_in_a_window(scores: &[i64], interval: i64) -> usize {
    let mut most = 0;
    let mut j = 0;
    for i in 0..scores.len() {
        while j < scores.len() && scores[j] < scores[i] + interval {
            j += 1;
        }
        most = most.max(j - i);
    }
    most
}

/// One task's granted `try_acquire(1)`s for `secs` (a limit it never reaches).
async fn try_acquire_latency(
    client: &relock::Client,
    secs: Duration,
) -> Result<Latencies, CliError> {
    let limiter = client.rate_limiter("bench:rate:latency");
    limiter.delete().await?;
    limiter
        .set_rate(
            relock::RateType::Overall,
            u64::from(u32::MAX),
            Duration::from_millis(1),
        )
        .await?;
    let mut times = Latencies::new();
    let until = Instant::now() + secs;
    while Instant::now() < until {
        let t = Instant::now();
        if !limiter.try_acquire(1).await? {
            return Err(CliError::Failed(
                "a try_acquire below the limit was refused".into(),
            ));
        }
        times.record(t.elapsed());
    }
    limiter.delete().await?;
    Ok(times)
}

/// One task's `EVALSHA` of `return 1` for `secs`.
async fn evalsha_latency(url: &str, secs: Duration) -> Result<Latencies, CliError> {
    let client = crate::bench::fred_client(url).await?;
    let fail = |e: fred::error::Error| CliError::Failed(e.to_string());
    let sha: String = client.script_load("return 1").await.map_err(fail)?;
    let mut times = Latencies::new();
    let until = Instant::now() + secs;
    while Instant::now() < until {
        let t = Instant::now();
        let _: i64 = client
            .evalsha(sha.as_str(), Vec::<String>::new(), Vec::<String>::new())
            .await
            .map_err(fail)?;
        times.record(t.elapsed());
    }
    let _ = client.quit().await;
    Ok(times)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_in_a_window_counts_a_half_open_interval() {
        assert_eq!(most_in_a_window(&[], 100), 0);
        assert_eq!(most_in_a_window(&[0, 50, 99, 100, 150], 100), 3);
        assert_eq!(most_in_a_window(&[0, 100, 200], 100), 1);
    }
}
