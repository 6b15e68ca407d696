//! Application data that shares a lock's name (`HSET orders:99 status paid amount 10`, the
//! README's first example locks `orders:42`) is never taken for a held lock: every kind's
//! acquire, wait, status and force-unlock fails at once with `NotALock`, naming the key and
//! what was found, and the data is left exactly as it was. (Issue 22: `try_lock` said "held",
//! `lock()` waited for ever, and `force_unlock()` returned `Ok(true)` and deleted the order.)

use std::time::Duration;

use relock::Error;
use relock_tests::kinds::KINDS;
use relock_tests::*;

fn not_a_lock<T: std::fmt::Debug>(r: &Result<T, Error>, key: &str, found: &str) {
    match r {
        Err(Error::NotALock { key: k, found: f }) if k == key && f.contains(found) => {}
        other => panic!("expected NotALock({key}, …{found}…), got {other:?}"),
    }
}

fn order(server: &RedisServer, key: &str) -> Vec<String> {
    let relock_testkit::Value::Array(Some(items)) = server.cmd(&["HGETALL", key]).unwrap() else {
        panic!("HGETALL {key}: not an array");
    };
    let mut v: Vec<String> = items.iter().map(|x| x.as_string().unwrap()).collect();
    v.sort();
    v
}

#[tokio::test]
async fn data_under_a_locks_name_is_never_deleted_renewed_or_waited_on_by_any_kind() {
    let server = server();
    let c = client(&server).await;
    let expected = vec!["10", "amount", "paid", "status"];

    // A hash without a TTL, then one with a TTL (a cache entry) whose fields are not owners.
    for (key, found) in [
        ("orders:99", "without a time to live"),
        ("cache:7", "not a lock owner's"),
    ] {
        server
            .cmd(&["HSET", key, "status", "paid", "amount", "10"])
            .unwrap();
        if key == "cache:7" {
            server.cmd(&["EXPIRE", key, "600"]).unwrap();
        }
        // Every lock kind's acquire, wait, status and force-unlock.
        for kind in KINDS {
            let handle = (kind.make)(&c, key);
            let Some(lock) = handle.as_lock() else {
                continue;
            };
            println!("{key}: {}", kind.name);
            not_a_lock(&lock.try_lock().await, key, found);
            // lock() fails at once instead of waiting for a release that never comes.
            let r = bounded(Duration::from_secs(5), "lock() on data", lock.lock()).await;
            not_a_lock(&r, key, found);
            not_a_lock(&lock.is_locked().await, key, found);
            if let Some(status) = handle.status().await {
                not_a_lock(&status, key, found);
            }
            not_a_lock(&lock.force_unlock().await, key, found);
        }
        // The plain lock's own queries.
        let lock = c.lock(key);
        not_a_lock(&lock.hold_count().await, key, found);
        not_a_lock(&lock.remaining_lease().await, key, found);
        // Left exactly as it was, TTL included, and nothing else written.
        assert_eq!(order(&server, key), expected, "{key}");
        let ttl = server.cmd(&["TTL", key]).unwrap().as_int().unwrap();
        if key == "orders:99" {
            assert_eq!(ttl, -1, "{key}");
        } else {
            assert!(ttl > 500, "{key}: {ttl}");
        }
    }
    // A `mode` field that is not a read-write lock's, with a TTL: read acquires do not join it.
    server
        .cmd(&["HSET", "settings", "mode", "read", "theme", "dark"])
        .unwrap();
    server.cmd(&["EXPIRE", "settings", "600"]).unwrap();
    not_a_lock(
        &c.read_write_lock("settings").read_lock().try_lock().await,
        "settings",
        "`theme`",
    );
    assert_eq!(server.cmd(&["HLEN", "settings"]).unwrap().as_int(), Some(2));
    // `mode` alone, with a TTL, is data too (a lock's hash goes with its last holder).
    server.cmd(&["HSET", "cfg", "mode", "write"]).unwrap();
    server.cmd(&["EXPIRE", "cfg", "600"]).unwrap();
    not_a_lock(
        &c.lock("cfg").try_lock().await,
        "cfg",
        "no lock owner field",
    );
    not_a_lock(
        &c.read_write_lock("cfg").write_lock().force_unlock().await,
        "cfg",
        "no lock owner field",
    );
    // A large hash is refused, not sampled: 2,000 owner-shaped fields and one that is not.
    let mut args = vec!["HSET".to_string(), "inv".to_string()];
    for i in 0..2000 {
        args.extend([format!("item:{i}"), i.to_string()]);
    }
    args.extend(["status".to_string(), "paid".to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    server.cmd(&args).unwrap();
    server.cmd(&["EXPIRE", "inv", "600"]).unwrap();
    not_a_lock(&c.lock("inv").force_unlock().await, "inv", "2001 fields");
    not_a_lock(&c.lock("inv").is_locked().await, "inv", "2001 fields");
    // At the limit: 1,000 fields are read in full (the one that is not an owner's is found
    // wherever it is), and one field more is refused as too large.
    let mut args = vec!["HSET".to_string(), "edge".to_string()];
    for i in 1..1000 {
        args.extend([format!("item:{i}"), i.to_string()]);
    }
    args.extend(["status".to_string(), "paid".to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    server.cmd(&args).unwrap();
    server.cmd(&["EXPIRE", "edge", "600"]).unwrap();
    for _ in 0..5 {
        not_a_lock(&c.lock("edge").try_lock().await, "edge", "field `status`");
    }
    server.cmd(&["HSET", "edge", "item:1000", "1000"]).unwrap();
    not_a_lock(&c.lock("edge").try_lock().await, "edge", "1001 fields");
    assert_eq!(
        server.cmd(&["HLEN", "edge"]).unwrap(),
        relock_testkit::Value::Int(1001)
    );
    server.cmd(&["DEL", "edge"]).unwrap();
    // A read-write lock with many readers is a lock, read whole (more fields than one first
    // read asks for): a writer waits for it, and nothing of it changes.
    let mut args = vec!["HSET".to_string(), "many".to_string()];
    args.extend(["mode".to_string(), "read".to_string()]);
    for i in 1..=40 {
        args.extend([format!("reader-{i}:{i}"), "1".to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    server.cmd(&args).unwrap();
    server.cmd(&["PEXPIRE", "many", "600000"]).unwrap();
    let write = c.read_write_lock("many").write_lock();
    assert!(write.try_lock().await.unwrap().is_none());
    assert!(c.lock("many").is_locked().await.unwrap());
    assert_eq!(server.cmd(&["HLEN", "many"]).unwrap().as_int(), Some(41));
    server.cmd(&["DEL", "many"]).unwrap();
    // A field is shown escaped and cut (never its value), and the message is only that.
    let long = "é".repeat(30);
    server
        .cmd(&["HSET", "u8", long.as_str(), "secret-value"])
        .unwrap();
    server.cmd(&["EXPIRE", "u8", "600"]).unwrap();
    let r = c.lock("u8").try_lock().await;
    let Err(Error::NotALock { found, .. }) = &r else {
        panic!("{r:?}")
    };
    assert!(
        !found.contains("secret-value")
            && !found.contains("script")
            && found.ends_with("(<id>:<n> or <uuid>:<uuid>)"),
        "{found}"
    );
    assert!(found.contains("???...`"), "{found}");
    server.cmd(&["DEL", "cfg", "inv", "u8"]).unwrap();

    // The error names the key and what was found, and says what to do.
    let msg = c
        .lock("orders:99")
        .try_lock()
        .await
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("orders:99")
            && msg.contains("without a time to live")
            && msg.contains("key_prefix"),
        "{msg}"
    );
    assert!(!c
        .lock("orders:99")
        .try_lock()
        .await
        .unwrap_err()
        .is_transient());
    // No fencing counter was minted for any of them.
    assert_eq!(
        server.keys().unwrap().len(),
        3,
        "{:?}",
        server.keys().unwrap()
    );

    // A real lock still works beside the data, and a Redisson-shaped one is still a lock.
    let g = c.lock("orders:100").lock().await.unwrap();
    assert!(c.lock("orders:100").is_locked().await.unwrap());
    assert!(c.lock("orders:100").try_lock().await.unwrap().is_none());
    g.unlock().await.unwrap();
    server
        .cmd(&[
            "HSET",
            "java",
            "8d1e2c3a-1111-2222-3333-444455556666:77",
            "1",
        ])
        .unwrap();
    server.cmd(&["PEXPIRE", "java", "30000"]).unwrap();
    assert!(c.lock("java").try_lock().await.unwrap().is_none());
    assert!(c.lock("java").force_unlock().await.unwrap());
    c.shutdown().await;
}
