//! The fencing check in SQL: orders kept in a real SQL database (SQLite, bundled) with a
//! `fence` column, written with `UPDATE ... WHERE fence <= $token`. Holder A takes the lock,
//! is paused past its lease (a GC pause, a stalled VM); holder B takes the lock after the lease
//! ends and updates the order; A wakes up and updates too, with its older token: no row
//! changes, so A knows it was refused, and the order is B's.
//!
//! ```sh
//! REDIS_URL=redis://127.0.0.1:6379 cargo run -p relock-redis --example fenced_sql
//! ```

use std::time::Duration;

use rusqlite::{params, Connection};

/// The fenced update: applied only if no later holder has written (its token is the highest
/// the row has seen). Returns whether it was applied.
fn set_status(db: &Connection, id: i64, status: &str, token: u64) -> rusqlite::Result<bool> {
    let changed = db.execute(
        "UPDATE orders SET status = ?1, fence = ?2 WHERE id = ?3 AND fence <= ?2",
        params![status, token as i64, id],
    )?;
    Ok(changed == 1)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let db = Connection::open_in_memory()?;
    db.execute_batch(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT NOT NULL, fence BIGINT NOT NULL DEFAULT 0);
         INSERT INTO orders (id, status) VALUES (42, 'new');",
    )?;
    let (a, b) = (
        relock::Client::connect(url.clone()).await?,
        relock::Client::connect(url).await?,
    );
    let name = "example:orders:42";

    // A holds the lock with a short fixed lease, then is paused past it.
    let held_by_a = a
        .lock(name)
        .with_lease(Duration::from_millis(500))
        .lock()
        .await?;
    let token_a = held_by_a.fencing_token();
    println!("A holds `{name}` with token {token_a}, then pauses");

    // B waits for the lock (it frees when A's lease ends) and writes.
    let held_by_b = b.lock(name).lock().await?;
    let token_b = held_by_b.fencing_token();
    assert!(set_status(&db, 42, "shipped by B", token_b)?);
    println!("B holds it with token {token_b} and marks the order shipped");

    // A wakes up, unaware, and writes with its old token: refused by the WHERE clause.
    let applied = set_status(&db, 42, "cancelled by A", token_a)?;
    println!(
        "A's update with token {token_a}: {}",
        if applied {
            "APPLIED"
        } else {
            "refused (a later holder wrote)"
        }
    );
    let (status, fence): (String, i64) =
        db.query_row("SELECT status, fence FROM orders WHERE id = 42", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    println!("the order: {status} (fence {fence})");
    assert!(!applied, "a stale holder's update must be refused");
    assert_eq!((status.as_str(), fence as u64), ("shipped by B", token_b));
    // A learns it lost the lock, and stops.
    assert!(held_by_a.is_lost());
    drop(held_by_a);
    held_by_b.unlock().await?;
    a.shutdown().await;
    b.shutdown().await;
    Ok(())
}
