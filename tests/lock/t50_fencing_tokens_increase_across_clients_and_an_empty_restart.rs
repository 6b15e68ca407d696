//! Fencing tokens strictly increase across two clients taking turns, and across an empty Redis
//! restart between two acquisitions (a plain INCR would start again at 1).

use std::time::Duration;

use relock_tests::*;

#[tokio::test]
async fn fencing_tokens_increase_across_clients_and_an_empty_restart() {
    let server = server();
    let clients = [client(&server).await, client(&server).await];
    let mut tokens = Vec::new();
    for i in 0..40 {
        let g = clients[i % 2].lock("t50").lock().await.unwrap();
        tokens.push(g.fencing_token());
        g.unlock().await.unwrap();
    }
    server.restart_empty().unwrap();
    assert_eq!(server.dbsize().unwrap(), 0);
    for i in 0..4 {
        let g = bounded(
            Duration::from_secs(5),
            "lock after restart",
            clients[i % 2].lock("t50").lock(),
        )
        .await
        .unwrap();
        tokens.push(g.fencing_token());
        g.unlock().await.unwrap();
    }
    for w in tokens.windows(2) {
        assert!(w[1] > w[0], "tokens went {} -> {}: {tokens:?}", w[0], w[1]);
    }
    // A Redisson RFencedLock INCRs the same counter: it keeps counting up from ours.
    let g = clients[0].lock("t50").lock().await.unwrap();
    let next = server
        .cmd(&["INCR", "redisson_lock_token:{t50}"])
        .unwrap()
        .as_int()
        .unwrap() as u64;
    assert_eq!(next, g.fencing_token() + 1);
    g.unlock().await.unwrap();
    assert_nothing_left(&server).await;
}
