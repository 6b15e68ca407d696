//! A job worker: one lock per job, the fencing token handed to the store, a nested call that
//! re-enters the hold inside its scope, and a stop as soon as the hold is lost.
//!
//! ```sh
//! REDIS_URL=redis://127.0.0.1:6379 cargo run -p relock-redis --example job_worker
//! ```

use std::time::Duration;

#[tokio::main]
async fn main() -> relock::Result<()> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let client = relock::Client::connect(url).await?;
    let lock = client.lock("example:job:42");

    // Waits for the lock; the watchdog renews its lease while the guard lives.
    let guard = lock.lock().await?;
    let token = guard.fencing_token();
    println!("job 42: locked, fencing token {token}");

    // A call that takes the same lock re-enters the hold inside the guard's scope instead of
    // waiting for itself.
    let steps = guard.scope(run_steps(&lock, token)).await?;

    // Stop as soon as the hold is lost (its lease ran out, or someone force-unlocked it).
    tokio::select! {
        _ = guard.lost() => println!("job 42: lock lost, stopping"),
        _ = tokio::time::sleep(Duration::from_millis(100)) => println!("job 42: {steps} steps done"),
    }
    guard.unlock().await?;
    client.shutdown().await;
    Ok(())
}

async fn run_steps(lock: &relock::Lock, token: u64) -> relock::Result<u32> {
    let nested = lock.lock().await?; // re-enters: same hold, same token
    assert_eq!(nested.fencing_token(), token);
    println!(
        "job 42: nested step runs under the same hold (count {})",
        lock.hold_count().await?
    );
    nested.unlock().await?;
    Ok(3)
}
