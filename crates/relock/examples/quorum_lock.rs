//! A quorum lock (Redlock) over three independent masters: granted when a majority grants it
//! within the lease, so it survives one master being down.
//!
//! ```sh
//! REDIS_URLS=redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003 \
//!     cargo run -p relock-redis --example quorum_lock
//! ```
//!
//! A master that restarted less than the restart quarantine ago (by default the longest lease
//! in use, 30 s) may not vote: it may have forgotten a lock that another client still holds.
//! Against masters you have just started empty, with no lock to forget, set
//! `RELOCK_RESTART_QUARANTINE=0` (seconds) to try the example at once; never turn it off where
//! a master can restart under live locks (`relock::guide::safety`, "Restarted nodes: the quarantine").

#[tokio::main]
async fn main() -> relock::Result<()> {
    let urls = std::env::var("REDIS_URLS").unwrap_or_else(|_| {
        "redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003".into()
    });
    let mut builder = relock::QuorumClient::builder().urls(urls.split(','));
    if let Ok(secs) = std::env::var("RELOCK_RESTART_QUARANTINE") {
        let secs: u64 = secs
            .parse()
            .expect("RELOCK_RESTART_QUARANTINE: a number of seconds");
        builder = builder.restart_quarantine(std::time::Duration::from_secs(secs));
    }
    let client = builder.build().await?;
    let lock = client.lock("example:ledger");

    let guard = lock.lock().await?;
    println!(
        "held on a majority of {} masters, fencing token {}, valid for {:?}",
        urls.split(',').count(),
        guard.fencing_token(),
        guard
            .valid_until()
            .saturating_duration_since(std::time::Instant::now()),
    );
    guard.unlock().await?;
    client.shutdown().await;
    Ok(())
}
