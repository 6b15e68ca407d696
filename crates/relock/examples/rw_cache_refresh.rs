//! A cache refreshed under a read-write lock: readers share the read side, the refresher takes
//! the write side and waits until no reader is inside.
//!
//! ```sh
//! REDIS_URL=redis://127.0.0.1:6379 cargo run -p relock-redis --example rw_cache_refresh
//! ```

use std::sync::Arc;
use tokio::sync::Mutex;

#[tokio::main]
async fn main() -> relock::Result<()> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let client = relock::Client::connect(url).await?;
    let rw = client.read_write_lock("example:prices");
    // Stands in for a cache that several processes read and one refreshes.
    let cache = Arc::new(Mutex::new(vec![("apple", 1)]));

    // Two readers at once: the read side is shared.
    let (r1, r2) = (rw.read_lock(), rw.read_lock());
    let (a, b) = tokio::try_join!(r1.lock(), r2.lock())?;
    println!("two readers inside: {:?}", cache.lock().await);
    let refresher = tokio::spawn({
        let (rw, cache) = (rw.clone(), cache.clone());
        async move {
            // Waits until both readers have left.
            let write = rw.write_lock().lock().await?;
            cache.lock().await.push(("pear", 2));
            println!(
                "refreshed under the write lock (token {})",
                write.fencing_token()
            );
            write.unlock().await
        }
    });
    a.unlock().await?;
    b.unlock().await?;
    refresher.await.expect("refresher panicked")?;

    let read = rw.read_lock().lock().await?;
    println!("after the refresh: {:?}", cache.lock().await);
    assert_eq!(cache.lock().await.len(), 2);
    read.unlock().await?;
    client.shutdown().await;
    Ok(())
}
