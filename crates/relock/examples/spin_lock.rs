//! A spin lock: the plain lock without pub/sub (Redisson's `RSpinLock`), for servers or proxies
//! without it, or fleets where a release message on every unlock costs too much. Four workers
//! take turns at a shared counter; none of them ever subscribes, and no release publishes.
//!
//! ```sh
//! REDIS_URL=redis://127.0.0.1:6379 cargo run -p relock-redis --example spin_lock
//! ```

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[tokio::main]
async fn main() -> relock::Result<()> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    // Waiters poll: at first every few milliseconds, then every 50 ms (plus up to 4 ms of
    // jitter). The default is Redisson's: from 1 ms, doubling, at most 128 ms.
    let client = relock::Client::builder()
        .url(url)
        .spin_backoff(relock::SpinBackoff::exponential(
            Duration::from_millis(2),
            2,
            Duration::from_millis(50),
        ))
        .build()
        .await?;
    let lock = client.spin_lock("example:spin");
    let counter = Arc::new(AtomicU32::new(0));
    let mut workers = Vec::new();
    for _ in 0..4 {
        let (lock, counter) = (lock.clone(), counter.clone());
        workers.push(tokio::spawn(async move {
            for _ in 0..5 {
                // Acquire, run, release (also on error or panic).
                lock.with(async |guard| {
                    // A read-modify-write that only the holder does.
                    let seen = counter.load(Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    counter.store(seen + 1, Ordering::SeqCst);
                    guard.fencing_token()
                })
                .await?;
            }
            relock::Result::Ok(())
        }));
    }
    for w in workers {
        w.await.expect("worker panicked")?;
    }
    let total = counter.load(Ordering::SeqCst);
    println!(
        "20 turns, counter {total}, channels subscribed: {}",
        client.subscribed_channels()
    );
    assert_eq!(total, 20, "one holder at a time");
    assert_eq!(
        client.subscribed_channels(),
        0,
        "a spin lock never subscribes"
    );

    // A bounded wait never sleeps past its bound.
    let guard = lock.lock().await?;
    let other = lock.clone();
    let started = std::time::Instant::now();
    let got = tokio::spawn(async move { other.try_lock_for(Duration::from_millis(200)).await })
        .await
        .expect("task panicked")?;
    assert!(got.is_none());
    println!("try_lock_for(200 ms) gave up after {:?}", started.elapsed());
    guard.unlock().await?;
    client.shutdown().await;
    Ok(())
}
