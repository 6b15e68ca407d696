//! node-redisson names its holders `<uuid>:<uuid>` (Java's Redisson: `<uuid>:<thread id>`).
//! relock takes such a hash for what it is, a held lock: `try_lock` says "held", a waiter
//! parks, and node-redisson's release (the key gone, `0` on the channel) wakes it at once,
//! long before the lease would end. Its write hold (`…:write`, `mode` = `write`) excludes
//! relock's read-write lock too. A hash that lacks what every lock hash has (positive hold
//! counts, an owner field of one of those libraries' forms) is still refused as data, and left
//! as it was.

use std::time::Duration;

use relock::{Error, OwnerLayout};
use relock_tests::*;

const NODE_OWNER: &str =
    "42fcba8c-7d8f-4a6e-9d5c-2b0e8f7a1c33:1364bb0b-5f2e-4c1a-8b7d-9e6f0a3d2c11";

#[tokio::test]
async fn a_node_redisson_hold_excludes_relock_and_its_release_wakes_relocks_waiter() {
    let server = server();
    let c = client(&server).await;

    // node-redisson holds `orders:7` (its lock script: HINCRBY, PEXPIRE 30 s).
    server.cmd(&["HSET", "orders:7", NODE_OWNER, "1"]).unwrap();
    server.cmd(&["PEXPIRE", "orders:7", "30000"]).unwrap();
    let lock = c.lock("orders:7");
    assert!(lock.try_lock().await.unwrap().is_none());
    assert!(c.fair_lock("orders:7").try_lock().await.unwrap().is_none());
    assert!(lock.is_locked().await.unwrap());
    let status = lock.status().await.unwrap();
    assert_eq!(status.holders.len(), 1);
    assert_eq!(status.holders[0].field, NODE_OWNER);
    assert_eq!(status.holders[0].layout, OwnerLayout::NodeRedisson);

    // A waiter parks; node-redisson's unlock deletes the key and publishes `0`.
    let waiter = spawn_parked_waiter(&server, &c, lock.clone()).await;
    let released = std::time::Instant::now();
    server.cmd(&["DEL", "orders:7"]).unwrap();
    server
        .cmd(&["PUBLISH", "redisson_lock__channel:{orders:7}", "0"])
        .unwrap();
    let (got, guard) = bounded(Duration::from_secs(5), "the waiter", waiter)
        .await
        .unwrap()
        .unwrap();
    // Woken by the message, not by the 30 s lease.
    assert!(
        got - released < Duration::from_secs(2),
        "{:?}",
        got - released
    );
    guard.unlock().await.unwrap();

    // node-redisson's write hold of a read-write lock.
    let write_owner = format!("{NODE_OWNER}:write");
    server
        .cmd(&["HSET", "stock:3", "mode", "write", &write_owner, "1"])
        .unwrap();
    server.cmd(&["PEXPIRE", "stock:3", "30000"]).unwrap();
    let rw = c.read_write_lock("stock:3");
    assert!(rw.write_lock().try_lock().await.unwrap().is_none());
    assert!(rw.read_lock().try_lock().await.unwrap().is_none());
    server.cmd(&["DEL", "stock:3"]).unwrap();

    // Counts under fields that merely contain a colon, with a TTL, are data: a cart, a
    // page-hit counter. Never waited on, never deleted.
    for (key, field) in [
        ("cart:42", "sku:AB-7"),
        ("hits:today", "https://example.com/"),
    ] {
        server.cmd(&["HSET", key, field, "2"]).unwrap();
        server.cmd(&["EXPIRE", key, "600"]).unwrap();
        let data = c.lock(key);
        assert!(
            matches!(data.try_lock().await, Err(Error::NotALock { .. })),
            "{key}"
        );
        assert!(matches!(
            data.force_unlock().await,
            Err(Error::NotALock { .. })
        ));
        assert_eq!(
            server
                .cmd(&["HGET", key, field])
                .unwrap()
                .as_string()
                .as_deref(),
            Some("2")
        );
        server.cmd(&["DEL", key]).unwrap();
    }

    // Owner-shaped fields whose values are not positive hold counts are data.
    for (value, found) in [("ann", "positive hold count"), ("0", "positive hold count")] {
        server.cmd(&["HSET", "user:9", "a1b2:7", value]).unwrap();
        server.cmd(&["EXPIRE", "user:9", "600"]).unwrap();
        let data = c.lock("user:9");
        match data.try_lock().await {
            Err(Error::NotALock { key, found: f }) if key == "user:9" && f.contains(found) => {}
            other => panic!("{value}: expected NotALock, got {other:?}"),
        }
        assert!(matches!(
            data.force_unlock().await,
            Err(Error::NotALock { .. })
        ));
        let v = server.cmd(&["HGET", "user:9", "a1b2:7"]).unwrap();
        assert_eq!(v.as_string().as_deref(), Some(value));
        assert!(server.cmd(&["TTL", "user:9"]).unwrap().as_int().unwrap() > 500);
        server.cmd(&["DEL", "user:9"]).unwrap();
    }
    c.shutdown().await;
    assert_nothing_left(&server).await;
}
