//! Re-entry: inside the hold's scope, the lock is taken 3 levels deep; another task is refused
//! at every level;
//! hold count, ownership and remaining lease are right at each level; the lock is free at 0.

use std::time::Duration;

use relock_tests::*;

#[tokio::test]
async fn reentrancy_goes_three_deep_and_excludes_other_tasks() {
    let server = server();
    let c = client(&server).await;
    let lock = c.lock("t11");
    let mut guards: Vec<relock::LockGuard> = Vec::new();
    for level in 1..=3u32 {
        let g = match guards.first() {
            None => lock.lock().await.unwrap(),
            Some(outer) => outer.scope(lock.lock()).await.unwrap(),
        };
        guards.push(g);
        assert_eq!(lock.hold_count().await.unwrap(), level);
        assert!(lock.is_held_by_current_task().await.unwrap());
        let lease = lock.remaining_lease().await.unwrap().expect("a lease");
        assert!(
            lease > Duration::from_secs(25) && lease <= Duration::from_secs(30),
            "{lease:?}"
        );
        let other = lock.clone();
        let (refused, other_count, other_holds) = tokio::spawn(async move {
            (
                other.try_lock().await.unwrap().is_none(),
                other.hold_count().await.unwrap(),
                other.is_held_by_current_task().await.unwrap(),
            )
        })
        .await
        .unwrap();
        assert!(refused, "another task got the lock at level {level}");
        assert_eq!((other_count, other_holds), (0, false));
    }
    let tokens: Vec<u64> = guards.iter().map(|g| g.fencing_token()).collect();
    assert!(
        tokens.iter().all(|t| *t == tokens[0]),
        "one token per hold: {tokens:?}"
    );
    // Inner holds can go in any order; the lock stays held until the last one.
    let last = guards.remove(0);
    for (i, g) in guards.into_iter().enumerate() {
        g.unlock().await.unwrap();
        assert_eq!(lock.hold_count().await.unwrap(), 2 - i as u32);
        assert!(lock.is_locked().await.unwrap());
    }
    last.unlock().await.unwrap();
    assert_eq!(lock.hold_count().await.unwrap(), 0);
    assert!(!lock.is_locked().await.unwrap());
    assert_eq!(lock.remaining_lease().await.unwrap(), None);
    let other = lock.clone();
    let g = tokio::spawn(async move { other.try_lock().await.unwrap().map(|g| g.fencing_token()) })
        .await
        .unwrap();
    assert!(g.expect("free after the last release") > tokens[0]);
    assert_nothing_left(&server).await;
}
