//! Work spawned onto another task inside `Owner::scope` acts as the same owner: it re-enters the
//! lock instead of waiting, and the code can be generic over `DistributedLock`.

use std::time::Duration;

use relock::{DistributedLock, Owner};
use relock_tests::*;

async fn token_of<L: DistributedLock>(lock: &L) -> relock::Result<Option<u64>> {
    Ok(lock.try_lock().await?.map(|g| g.fencing_token()))
}

#[tokio::test]
async fn an_owner_scope_lets_spawned_work_reenter() {
    let server = server();
    let c = client(&server).await;
    let owner = Owner::new();
    let lock = c.lock("t12");
    let outer = owner.clone().scope(lock.lock()).await.unwrap();
    let (inner_token, count) = tokio::spawn(owner.clone().scope({
        let lock = lock.clone();
        async move {
            let g = bounded(Duration::from_secs(1), "re-entry", lock.lock())
                .await
                .unwrap();
            let count = lock.hold_count().await.unwrap();
            let token = g.fencing_token();
            g.unlock().await.unwrap();
            (token, count)
        }
    }))
    .await
    .unwrap();
    assert_eq!(inner_token, outer.fencing_token());
    assert_eq!(count, 2);
    // A different task without the scope is another owner and is refused.
    let other = tokio::spawn({
        let lock = lock.clone();
        async move { token_of(&lock).await.unwrap() }
    });
    assert_eq!(other.await.unwrap(), None);
    assert_eq!(owner.clone().scope(lock.hold_count()).await.unwrap(), 1);
    outer.unlock().await.unwrap();
    assert!(token_of(&lock).await.unwrap().unwrap() > inner_token);
    assert_nothing_left(&server).await;
}
