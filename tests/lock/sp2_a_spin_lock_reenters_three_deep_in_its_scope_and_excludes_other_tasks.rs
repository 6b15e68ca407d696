//! Re-entry of the spin lock, as the plain lock's: inside the hold's scope it is taken 3 levels
//! deep under one fencing token; another task is refused at every level; the lock is free at
//! 0. `with` runs its body under a fresh hold and releases it.

use relock_tests::*;

#[tokio::test]
async fn a_spin_lock_reenters_three_deep_in_its_scope_and_excludes_other_tasks() {
    let server = server();
    let c = client(&server).await;
    let lock = c.spin_lock("sp2");
    let mut guards: Vec<relock::LockGuard> = Vec::new();
    for level in 1..=3u32 {
        let g = match guards.first() {
            None => lock.lock().await.unwrap(),
            Some(outer) => outer.scope(lock.lock()).await.unwrap(),
        };
        guards.push(g);
        assert_eq!(lock.hold_count().await.unwrap(), level);
        assert!(lock.is_held_by_current_task().await.unwrap());
        let other = lock.clone();
        let refused = tokio::spawn(async move { other.try_lock().await.unwrap().is_none() })
            .await
            .unwrap();
        assert!(refused, "another task got the lock at level {level}");
        // The server holds one field, counted `level` times (Redisson's layout).
        let fields = server.cmd(&["HGETALL", "sp2"]).unwrap();
        let relock_testkit::Value::Array(Some(items)) = fields else {
            panic!("{fields:?}")
        };
        assert_eq!(items.len(), 2);
        assert_eq!(items[1].as_string(), Some(level.to_string()));
    }
    let tokens: Vec<u64> = guards.iter().map(|g| g.fencing_token()).collect();
    assert!(tokens.iter().all(|t| *t == tokens[0]), "{tokens:?}");
    let last = guards.remove(0);
    for g in guards {
        g.unlock().await.unwrap();
        assert!(lock.is_locked().await.unwrap());
    }
    last.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());

    let token = lock
        .with(async |g| {
            assert_eq!(lock.hold_count().await.unwrap(), 1);
            g.fencing_token()
        })
        .await
        .unwrap();
    assert!(token > tokens[0]);
    assert!(!lock.is_locked().await.unwrap());
    c.shutdown().await;
    assert_nothing_left(&server).await;
}
