//! A job that runs at most once per occurrence across a fleet (ShedLock's model): every
//! "node" fires at nearly the same time; one runs the occurrence, the others skip without
//! waiting; after an early finish the lock stays taken for `at_least_for`, so a node whose
//! clock fires a little late skips too.
//!
//! ```sh
//! REDIS_URL=redis://127.0.0.1:6379 cargo run -p relock-redis --example scheduled_job
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[tokio::main]
async fn main() -> relock::Result<()> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let ran = Arc::new(AtomicUsize::new(0));
    let mut nodes = Vec::new();
    for node in 0..4 {
        // A client each, as on four machines.
        let client = relock::Client::connect(url.clone()).await?;
        let ran = ran.clone();
        nodes.push(tokio::spawn(async move {
            let job = client
                .job("example:nightly-report", Duration::from_secs(60))
                .at_least_for(Duration::from_secs(2));
            // Node 3's clock is 300 ms late: it fires after the run has finished.
            if node == 3 {
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            let outcome = job
                .run(async |run| {
                    println!(
                        "node {node} runs the report (token {})",
                        run.fencing_token()
                    );
                    ran.fetch_add(1, Ordering::SeqCst);
                })
                .await?;
            if outcome.is_none() {
                println!("node {node} skips: another node runs or ran this occurrence");
            }
            client.shutdown().await;
            Ok::<_, relock::Error>(())
        }));
    }
    for n in nodes {
        n.await.expect("a node's task")?;
    }
    assert_eq!(ran.load(Ordering::SeqCst), 1, "one run for the occurrence");

    // The next occurrence, once at_least_for has passed: one node runs it again.
    let client = relock::Client::connect(url).await?;
    let job = client.job("example:nightly-report", Duration::from_secs(60));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while job.lock().is_locked().await? {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the kept lock expires"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        job.run(async |_| "next occurrence").await?,
        Some("next occurrence")
    );
    client.shutdown().await;
    Ok(())
}
