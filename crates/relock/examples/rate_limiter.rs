//! A rate limiter shared by every worker (Redisson's `RRateLimiter`): at most 5 calls in any
//! 200 ms to a pretend API, whoever makes them. Three workers make 15 calls between them; each
//! waits for a permit, sleeping until the oldest call of the window is 200 ms old.
//!
//! ```sh
//! REDIS_URL=redis://127.0.0.1:6379 cargo run -p relock-redis --example rate_limiter
//! ```

use std::time::{Duration, Instant};

use relock::RateType;

#[tokio::main]
async fn main() -> relock::Result<()> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let client = relock::Client::connect(&url).await?;
    let limiter = client.rate_limiter("example:api-calls");
    let interval = Duration::from_millis(200);
    // Every process may call this at start-up: only the first sets the rate.
    limiter.try_set_rate(RateType::Overall, 5, interval).await?;

    let started = Instant::now();
    let mut workers = Vec::new();
    for worker in 0..3 {
        let limiter = limiter.clone();
        workers.push(tokio::spawn(async move {
            let mut calls = Vec::new();
            for _ in 0..5 {
                limiter.acquire(1).await?; // sleeps while 5 calls were made in the last 200 ms
                calls.push(started.elapsed());
            }
            println!("worker {worker}: calls at {calls:?}");
            Ok::<_, relock::Error>(())
        }));
    }
    for w in workers {
        w.await.expect("a worker panicked")?;
    }
    // 15 calls at 5 per 200 ms: the last five wait until the first ten are old enough, two
    // windows after the first call.
    let took = started.elapsed();
    println!("15 calls in {took:?}");
    assert!(took >= interval * 2 - Duration::from_millis(5), "{took:?}");
    println!(
        "{} permits available now",
        limiter.available_permits().await?
    );
    limiter.delete().await?;
    client.shutdown().await;
    Ok(())
}
