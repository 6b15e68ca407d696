//! A process that takes a lock and returns from `main` (current-thread runtime), for the
//! clean-exit scenario.
//!
//! Usage: `relock-test-exit <redis-url> <lock-name> with|shutdown|dropped|permit-dropped`.
//! - `with`: the documented pattern: `lock.with(..)`, then `client.shutdown()`.
//! - `shutdown`: returns while a guard is still alive, after `client.shutdown()`.
//! - `dropped`: returns while holding, without `shutdown()`: the lock stays held until its
//!   lease ends, and the client's last handle logs which locks it left.
//! - `permit-dropped`: takes one permit of the semaphore `<lock-name>` (3 permits), drops its
//!   guard and returns without `shutdown()`: the permit must still come back.
//!
//! Logs (WARN and above) go to stderr.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, name, mode] = args.as_slice() else {
        return Err(
            "usage: relock-test-exit <redis-url> <lock-name> with|shutdown|dropped|permit-dropped"
                .into(),
        );
    };
    let client = relock::Client::connect(url.clone()).await?;
    let lock = client.lock(name.clone());
    match mode.as_str() {
        "with" => {
            let token = lock.with(async |g| g.fencing_token()).await?;
            println!("HELD {token}");
            client.shutdown().await;
        }
        "shutdown" => {
            let guard = lock.lock().await?;
            println!("HELD {}", guard.fencing_token());
            client.shutdown().await;
            drop(guard);
        }
        "dropped" => {
            let guard = lock.lock().await?;
            println!("HELD {}", guard.fencing_token());
            // Returns with `guard` (and `client`) still alive: both are dropped as `main`
            // returns, when the runtime no longer runs the release.
        }
        "permit-dropped" => {
            let sem = client.semaphore(name.clone());
            sem.try_set_permits(3).await?;
            let permits = sem.acquire(1).await?;
            println!("HELD 1");
            // Dropped as `main` returns: its give-back is spawned on a runtime that ends
            // before it runs.
            drop(permits);
        }
        other => return Err(format!("unknown mode {other}").into()),
    }
    Ok(())
}
