//! A fan-out limited across processes: ten jobs, at most three at a time, each holding a
//! permit of a semaphore that every process shares. A permit is a guard: it goes back when
//! dropped, also on an early `?` or a panic.
//!
//! ```sh
//! REDIS_URL=redis://127.0.0.1:6379 cargo run -p relock-redis --example semaphore_fanout
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[tokio::main]
async fn main() -> relock::Result<()> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let client = relock::Client::connect(url).await?;
    let slots = client.permit_expirable_semaphore("example:crawler-slots");
    // Sets the count if the semaphore has none yet (the first process to start sets it).
    slots.try_set_permits(3).await?;

    let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut jobs = Vec::new();
    for job in 0..10 {
        let (slots, running, most) = (slots.clone(), running.clone(), most.clone());
        jobs.push(tokio::spawn(async move {
            // `None`: the permit's lease is renewed while the guard lives.
            let _permit = slots.acquire(None).await?;
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            running.fetch_sub(1, Ordering::SeqCst);
            println!("job {job} done");
            Ok::<_, relock::Error>(())
        }));
    }
    for j in jobs {
        j.await.expect("job panicked")?;
    }
    let most = most.load(Ordering::SeqCst);
    println!("at most {most} jobs ran at once");
    assert!(most <= 3);
    client.shutdown().await;
    Ok(())
}
