//! A client holds 1 000 locks (10 renewal batches of 100) on a server whose script cache is
//! then flushed (as after a restart or a failover to a replica that never ran the script). The
//! next watchdog round meets NOSCRIPT once: its first batch goes alone and caches the script,
//! and the other 9 follow with EVALSHA. Before, all 10 went at once and every call in flight
//! met NOSCRIPT and was sent twice (`bench-watchdog` counted 1.02 calls per 100 locks per
//! period, against a target of 1).

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watchdog_round_on_a_server_without_its_script_sends_the_script_once() {
    let s = server();
    let lease = Duration::from_secs(6);
    let c = client_with_lease(&s, lease).await;
    let mut guards = Vec::with_capacity(1000);
    for i in 0..1000 {
        guards.push(c.lock(format!("t77:{i}")).lock().await.unwrap());
    }
    // Well before the first round (every lease / 3 = 2 s from the client's start).
    s.cmd(&["SCRIPT", "FLUSH"]).unwrap();
    s.reset_stats().unwrap();
    let before = guards.iter().map(|g| g.valid_until()).max().unwrap();
    // One round has run once every hold's lease was counted again from it.
    wait_until(Duration::from_secs(5), "one renewal round", || async {
        guards.iter().all(|g| g.valid_until() > before)
    })
    .await
    .unwrap();
    let (evalsha, eval) = (
        s.command_calls("evalsha").unwrap(),
        s.command_calls("eval").unwrap(),
    );
    assert_eq!(
        (evalsha, eval),
        (10, 1),
        "one round of 10 batches: 10 EVALSHA (the first answered NOSCRIPT) and one EVAL"
    );
    assert!(guards.iter().all(|g| !g.is_lost()));
    drop(guards);
    c.shutdown().await;
    assert_nothing_left(&s).await;
}
