//! Coalescing: with one connection and 32 tasks, plain acquires and releases that wait for the
//! connection go together in one script call. Every pair still succeeds with its own rising
//! token, far fewer script calls than operations reach the server, and an operation on a key
//! that is not a lock fails alone with `WrongType` while the others in its call succeed.
//! Turned off, every operation is its own call.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use relock::Error;
use relock_tests::*;

const TASKS: u64 = 32;
const PAIRS: u64 = 20;

async fn run(server: &RedisServer, coalesce: bool) -> (u64, u64) {
    let c = relock::Client::builder()
        .url(server.url())
        .connections(1)
        .coalesce(coalesce)
        .command_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    // Warm the script cache so NOSCRIPT fallbacks do not count.
    lock_and_unlock(&c.lock("t74:warm")).await;
    server.reset_stats().unwrap();
    let wrong_type = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let lock = c.lock(format!("t74:{t}"));
        let wrong = c.lock("t74:not-a-lock");
        let wrong_type = wrong_type.clone();
        tasks.push(tokio::spawn(async move {
            let mut last = 0;
            for _ in 0..PAIRS {
                let g = lock.lock().await.unwrap();
                assert!(g.fencing_token() > last);
                last = g.fencing_token();
                match wrong.try_lock().await {
                    Err(Error::WrongType { .. }) => {
                        wrong_type.fetch_add(1, Ordering::SeqCst);
                    }
                    other => panic!("a string key: {other:?}"),
                }
                g.unlock().await.unwrap();
            }
        }));
    }
    for t in tasks {
        bounded(Duration::from_secs(20), "the tasks", t)
            .await
            .unwrap();
    }
    assert_eq!(wrong_type.load(Ordering::SeqCst), TASKS * PAIRS);
    let calls = server.command_calls("evalsha").unwrap();
    c.shutdown().await;
    // Operations: an acquire and a release per pair, and the refused attempt.
    (calls, TASKS * PAIRS * 3)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_operations_of_one_client_share_script_calls_and_keep_their_own_errors() {
    let server = server();
    server.cmd(&["SET", "t74:not-a-lock", "x"]).unwrap();

    let (calls, ops) = run(&server, true).await;
    assert!(
        calls * 2 < ops,
        "coalesced: {calls} script calls for {ops} operations"
    );

    let (calls, ops) = run(&server, false).await;
    assert_eq!(calls, ops, "one script call per operation when turned off");

    server.cmd(&["DEL", "t74:not-a-lock"]).unwrap();
    assert_nothing_left(&server).await;
}
