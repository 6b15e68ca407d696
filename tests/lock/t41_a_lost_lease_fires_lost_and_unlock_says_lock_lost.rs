//! A hold is lost when Redis restarts empty or the key is deleted from outside: `lost()`
//! resolves within about one renewal period, and `unlock()` returns `LockLost`.

use std::time::Duration;

use relock_tests::*;

#[tokio::test]
async fn a_lost_lease_fires_lost_and_unlock_says_lock_lost() {
    let server = server();
    let c = client_with_lease(&server, Duration::from_millis(900)).await;

    // External DEL.
    let g = c.lock("t41:del").lock().await.unwrap();
    server.cmd(&["DEL", "t41:del"]).unwrap();
    bounded(Duration::from_secs(2), "lost() after DEL", g.lost()).await;
    assert!(g.is_lost());
    assert!(
        matches!(g.unlock().await, Err(relock::Error::LockLost { ref name }) if name == "t41:del")
    );

    // Empty restart while held.
    let g = c.lock("t41:restart").lock().await.unwrap();
    server.restart_empty().unwrap();
    bounded(
        Duration::from_secs(5),
        "lost() after an empty restart",
        g.lost(),
    )
    .await;
    assert!(matches!(
        g.unlock().await,
        Err(relock::Error::LockLost { .. })
    ));

    // The client recovers: locks work again on the restarted server.
    let g = bounded(
        Duration::from_secs(5),
        "lock after restart",
        c.lock("t41:after").lock(),
    )
    .await
    .unwrap();
    g.unlock().await.unwrap();
    assert_nothing_left(&server).await;
}
