//! A separate process that takes a lock and holds it until killed, for "holder killed" and
//! "waiter killed" tests.
//!
//! Usage: `relock-test-holder <redis-url> <lock-name> <watchdog-lease-ms> [fair <heartbeat-ms>]`.
//! With `fair` it takes the fair lock (so, while the lock is held, it waits in line). Prints
//! `HELD <token>` once it holds the lock.

use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: relock-test-holder <redis-url> <lock-name> <watchdog-lease-ms> [fair <heartbeat-ms>]";
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (url, name, lease) = match args.as_slice() {
        [u, n, l, ..] => (u.clone(), n.clone(), l.parse::<u64>()?),
        _ => return Err(usage.into()),
    };
    let fair = match args.get(3..) {
        Some([mode, hb]) if mode == "fair" => Some(hb.parse::<u64>()?),
        Some([]) => None,
        _ => return Err(usage.into()),
    };
    let mut builder = relock::Client::builder()
        .url(url)
        .watchdog_lease(Duration::from_millis(lease));
    if let Some(hb) = fair {
        builder = builder.fair_heartbeat(Duration::from_millis(hb));
    }
    let client = builder.build().await?;
    let lock = match fair {
        Some(_) => client.fair_lock(name),
        None => client.lock(name),
    };
    let guard = lock.lock().await?;
    println!("HELD {}", guard.fencing_token());
    guard.lost().await;
    Err("the lock was lost".into())
}
