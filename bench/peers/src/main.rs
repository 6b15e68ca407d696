//! `relock-peer-bench <seconds> <url>...`: the Q scenario (one worker, serial acquire+release
//! of one key) with the `rslock` crate on the given masters. Prints one line:
//! `rslock <pairs> <p50_ms> <p99_ms> <pairs_per_s> <stuck>` (stuck: acquisitions that did not
//! finish within 3 s). Used by `relock bench-quorum --rslock-bin ...`.

use std::time::{Duration, Instant};

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let secs: u64 = args.next().and_then(|s| s.parse().ok()).expect("seconds");
    let urls: Vec<String> = args.collect();
    let manager = rslock::LockManager::new(urls);
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut lat = Vec::new();
    let mut stuck = 0;
    let start = Instant::now();
    while Instant::now() < deadline {
        let t = Instant::now();
        match tokio::time::timeout(
            Duration::from_secs(3),
            manager.lock("bench:q:rslock", Duration::from_secs(30)),
        )
        .await
        {
            Ok(Ok(lock)) => {
                lat.push(t.elapsed());
                let _ = tokio::time::timeout(Duration::from_secs(3), manager.unlock(&lock)).await;
            }
            Ok(Err(_)) => {}
            Err(_) => stuck += 1,
        }
    }
    let pairs = lat.len();
    let rate = pairs as f64 / start.elapsed().as_secs_f64();
    lat.sort();
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p / 100.0) as usize).min(lat.len().saturating_sub(1)))
            .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
    };
    println!("rslock {pairs} {:.3} {:.3} {rate:.0} {stuck}", pct(50.0), pct(99.0));
}
