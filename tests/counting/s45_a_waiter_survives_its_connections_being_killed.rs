//! A parked semaphore waiter and a latch waiter whose command and pub/sub connections are all
//! killed (CLIENT KILL) keep waiting instead of failing (their calls' connection errors are
//! retried), and still get what is added behind their back afterwards.

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_survives_its_connections_being_killed() {
    let server = server();
    let a = client(&server).await;
    let sem = a.semaphore("s45");
    let latch = a.count_down_latch("s45:latch");
    assert!(latch.try_set_count(1).await.unwrap());
    let sem_waiter = {
        let sem = sem.clone();
        tokio::spawn(async move { sem.acquire(1).await.map(kept) })
    };
    let latch_waiter = {
        let latch = latch.clone();
        tokio::spawn(async move { latch.wait().await })
    };
    wait_until(Duration::from_secs(3), "both waiters to park", || async {
        a.parked_waiters() == 2
    })
    .await
    .unwrap();
    for _ in 0..3 {
        server.client_kill_type("pubsub").unwrap();
        server.client_kill_type("normal").unwrap();
        assert!(!sem_waiter.is_finished() && !latch_waiter.is_finished());
    }
    let _ = server.cmd(&["INCRBY", "s45", "1"]).unwrap();
    let _ = server.cmd(&["DEL", "s45:latch"]).unwrap();
    bounded(Duration::from_secs(5), "the semaphore waiter", sem_waiter)
        .await
        .unwrap()
        .unwrap();
    bounded(Duration::from_secs(5), "the latch waiter", latch_waiter)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(crate::get(&server, "s45").as_deref(), Some("0"));
    crate::no_subscriptions(&[&a]).await;
    let _ = server.cmd(&["DEL", "s45"]).unwrap();
    // An attempt cut off with its connection may have run: its request key stays until it
    // expires (so that the attempt, if it lands late, takes nothing), and nothing else does.
    crate::only_expiring_request_keys_left(&server, "s45").await;
}
