//! A fair lock: workers that ask in turn get it in that order, each handed the lock directly
//! by the one before.
//!
//! ```sh
//! REDIS_URL=redis://127.0.0.1:6379 cargo run -p relock-redis --example fair_queue
//! ```

use std::time::Duration;

#[tokio::main]
async fn main() -> relock::Result<()> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let client = relock::Client::connect(url).await?;
    let printer = client.fair_lock("example:printer");

    // Hold it while the workers line up, so that they queue in the order they ask.
    let first = printer.lock().await?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut workers = Vec::new();
    for worker in 0..4usize {
        let (printer, tx) = (printer.clone(), tx.clone());
        workers.push(tokio::spawn(async move {
            let guard = printer.lock().await?;
            tx.send(worker).unwrap();
            tokio::time::sleep(Duration::from_millis(10)).await;
            guard.unlock().await
        }));
        // Let each join the line before the next asks: it is parked once it has.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while client.parked_waiters() < worker + 1 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "worker {worker} never waited"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    drop(tx);
    first.unlock().await?;
    for w in workers {
        w.await.expect("worker panicked")?;
    }
    let mut order = Vec::new();
    while let Some(w) = rx.recv().await {
        order.push(w);
    }
    println!("served in order: {order:?}");
    assert_eq!(order, [0, 1, 2, 3], "a fair lock serves in the order asked");
    client.shutdown().await;
    Ok(())
}
