//! A separate process that takes a lock and holds it until killed, for "holder killed" tests.
//!
//! Usage: `relock-test-holder <redis-url> <lock-name> <watchdog-lease-ms>`. Prints
//! `HELD <token>` once it holds the lock.

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (url, name, lease) = match (args.next(), args.next(), args.next()) {
        (Some(u), Some(n), Some(l)) => (u, n, l.parse::<u64>()?),
        _ => {
            return Err(
                "usage: relock-test-holder <redis-url> <lock-name> <watchdog-lease-ms>".into(),
            )
        }
    };
    let client = relock::Client::builder()
        .url(url)
        .watchdog_lease(std::time::Duration::from_millis(lease))
        .build()
        .await?;
    let guard = client.lock(name).lock().await?;
    println!("HELD {}", guard.fencing_token());
    guard.lost().await;
    Err("the lock was lost".into())
}
