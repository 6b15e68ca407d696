//! Direct handoff: a parked fair waiter in another client is handed the lock by the holder's
//! release script itself, and its `lock()` returns without an acquire call of its own (one
//! script call in all between the release and the waiter's return: the release). Its hold is
//! exactly a normal one: its own field with count 1, the token the server minted for it (and
//! recorded for it), a lease counted from before the grant, re-entry in its scope, and nothing
//! left once released.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn a_release_hands_the_lock_to_the_first_waiter_whose_lock_returns_without_an_acquire_call() {
    let server = server();
    // A long heartbeat deadline: no heartbeat call, and no renewal, falls inside the count.
    let heartbeat = Duration::from_secs(60);
    let (a, b) = (
        fair_client(&server, heartbeat).await,
        fair_client(&server, heartbeat).await,
    );
    // Warm-up, so that no NOSCRIPT fallback is counted.
    let warm = a.fair_lock("f91").lock().await.unwrap();
    warm.unlock().await.unwrap();
    let holder = a.fair_lock("f91").lock().await.unwrap();
    let held_token = holder.fencing_token();
    let lock = b.fair_lock("f91");
    let waiter = spawn_in_line(&server, "f91", 1, async move {
        let g = lock.lock().await.unwrap();
        (Instant::now(), g)
    })
    .await;
    wait_until(Duration::from_secs(3), "the waiter parked", || async {
        b.parked_waiters() == 1
    })
    .await
    .unwrap();
    let field = fair_line(&server, "f91")[0].clone();

    server.reset_stats().unwrap();
    holder.unlock().await.unwrap();
    let (_, g) = bounded(Duration::from_secs(5), "the waiter", waiter)
        .await
        .unwrap();
    let scripts = server.command_calls("evalsha").unwrap() + server.command_calls("eval").unwrap();
    assert_eq!(scripts, 1, "the release only: the waiter sent no acquire");

    // Its hold is the one the release wrote, with the token minted for it.
    assert_eq!(g.owner(), field);
    assert!(g.fencing_token() > held_token);
    assert_eq!(
        fair_grant(&server, "f91"),
        Some((field.clone(), g.fencing_token().to_string()))
    );
    assert_eq!(hget(&server, &field), Some("1".to_string()));
    assert!(fair_line(&server, "f91").is_empty());
    // Its first lease is the heartbeat deadline, counted from its last attempt (before the
    // grant): no more than that is left, and the server's lease is no shorter.
    assert!(!g.is_lost());
    let left = g.remaining();
    assert!(
        left <= heartbeat && left > heartbeat - Duration::from_secs(5),
        "{left:?}"
    );
    let pttl = server.cmd(&["PTTL", "f91"]).unwrap().as_int().unwrap();
    assert!(
        pttl as u128 >= g.remaining().as_millis() && pttl <= 60_000,
        "{pttl}"
    );

    // Re-entry in its scope counts on the same hold.
    let again = g.scope(b.fair_lock("f91").lock()).await.unwrap();
    assert_eq!(again.fencing_token(), g.fencing_token());
    assert_eq!(hget(&server, &field), Some("2".to_string()));
    again.unlock().await.unwrap();
    g.unlock().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
    assert_nothing_left(&server).await;
}

/// The count of `field` in the f91 lock hash.
fn hget(server: &RedisServer, field: &str) -> Option<String> {
    server.cmd(&["HGET", "f91", field]).unwrap().as_string()
}
