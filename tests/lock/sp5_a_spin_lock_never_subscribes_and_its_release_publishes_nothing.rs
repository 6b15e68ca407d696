//! A spin lock uses no pub/sub at all: while one client holds it (past the hold watch's
//! settle time) and three tasks of another wait for it, no connection of either client is
//! subscribed to anything (`CLIENT LIST`: `sub=0`, `ssub=0`; `PUBSUB NUMSUB` of the lock's
//! channel is 0), and the releases that hand it from one to the next, a nested one included,
//! run no `PUBLISH` on the server.

use std::time::Duration;

use relock_tests::*;

/// Connections of the server subscribed to any channel.
fn subscribers(server: &RedisServer) -> Vec<String> {
    let list = server
        .cmd(&["CLIENT", "LIST"])
        .unwrap()
        .as_string()
        .unwrap();
    list.lines()
        .filter(|l| {
            l.split(' ').any(|f| {
                ["sub=", "psub=", "ssub="]
                    .iter()
                    .any(|p| f.strip_prefix(p).is_some_and(|n| n != "0"))
            })
        })
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spin_lock_never_subscribes_and_its_release_publishes_nothing() {
    let server = server();
    let a = client(&server).await;
    let b = client(&server).await;
    let lock = a.spin_lock("sp5");
    let outer = lock.lock().await.unwrap();
    let inner = outer.scope(lock.lock()).await.unwrap();
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let l = b.spin_lock("sp5");
            tokio::spawn(async move {
                let g = l.lock().await.unwrap();
                let t = g.fencing_token();
                g.unlock().await.unwrap();
                t
            })
        })
        .collect();
    // Parked between polls, and the holder past the hold watch's settle time (30 ms).
    wait_until(
        Duration::from_secs(2),
        "the spin waiters to park",
        || async { b.parked_waiters() >= 1 && server.command_calls("evalsha").unwrap() >= 10 },
    )
    .await
    .unwrap();
    assert!(
        subscribers(&server).is_empty(),
        "{:?}",
        subscribers(&server)
    );
    assert_eq!(
        server
            .pubsub_numsub("redisson_lock__channel:{sp5}")
            .unwrap(),
        0
    );
    assert!(server.pubsub_channels().unwrap().is_empty());
    for c in [&a, &b] {
        assert_eq!((c.subscribed_channels(), c.watched_holds()), (0, 0));
    }

    server.reset_stats().unwrap();
    let token = outer.fencing_token();
    inner.unlock().await.unwrap();
    outer.unlock().await.unwrap();
    let mut tokens = Vec::new();
    for w in waiters {
        tokens.push(
            bounded(Duration::from_secs(5), "each waiter in turn", w)
                .await
                .unwrap(),
        );
    }
    tokens.sort_unstable();
    tokens.dedup();
    assert_eq!(tokens.len(), 3);
    assert!(tokens[0] > token);
    // Five releases (the nested one, the outer one, the three waiters'), not one message.
    assert_eq!(server.command_calls("publish").unwrap(), 0);
    assert_eq!(server.command_calls("spublish").unwrap(), 0);
    assert!(subscribers(&server).is_empty());
    a.shutdown().await;
    b.shutdown().await;
    assert_nothing_left(&server).await;
}
