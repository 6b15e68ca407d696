//! A watchdog renewal puts a hold back on a node that lost it (`quorum_putback.lua`). A
//! release waits for that round (the hold's gate), and so must shutdown's release of the
//! locks still held. Here node 3 lost the hold, has the renewal and release scripts cached but
//! not the put-back, and its replies are 300 ms late; shutdown starts while the renewal is on
//! its way. Without the gate, the put-back's EVALSHA met NOSCRIPT, shutdown's release ran on
//! node 3 meanwhile (finding nothing), and the put-back's EVAL then made a hold nobody owned
//! for a whole lease (found by review).

use std::time::Duration;

use relock_testkit::{Direction, Mode};
use relock_tests::*;

#[tokio::test]
async fn shutdown_releases_a_hold_only_after_a_put_back_on_its_way() {
    let m = masters(3);
    let (proxy, urls) = urls_with_proxy(&m, 2);
    let client = quorum_builder(urls, Duration::from_millis(1000))
        .watchdog_lease(Duration::from_secs(3))
        .build()
        .await
        .unwrap();
    // A watchdog hold (renewed every second).
    let guard = client.lock("q96").lock().await.unwrap();
    // Node 3 loses it; it forgets the put-back script but keeps the renewal and release.
    m[2].cmd(&["DEL", "q96"]).unwrap();
    m[2].script_flush().unwrap();
    m[2].cmd(&["SCRIPT", "LOAD", relock::lua::QUORUM_RENEW])
        .unwrap();
    m[2].cmd(&["SCRIPT", "LOAD", relock::lua::QUORUM_RELEASE])
        .unwrap();
    let base = m[2].command_calls("evalsha").unwrap();
    let evals_before = m[2].command_calls("eval").unwrap();
    proxy.set(Direction::Down, Mode::Delay(Duration::from_millis(300)));
    // The next renewal reaches node 3 (its reply is on its way back): shut down now.
    wait_until(Duration::from_secs(3), "the renewal on node 3", || async {
        m[2].command_calls("evalsha").unwrap() > base
    })
    .await
    .unwrap();
    client.shutdown().await;
    drop(guard);
    let left = m[2].cmd(&["HGETALL", "q96"]).unwrap();
    let pttl = m[2].cmd(&["PTTL", "q96"]).unwrap().as_int();
    let evals = m[2].command_calls("eval").unwrap() - evals_before;
    proxy.set(Direction::Down, Mode::Pass);
    // The put-back did run (after NOSCRIPT, as an EVAL): this is the case being tested.
    assert!(evals >= 1, "no put-back ran on node 3 during shutdown");
    assert_eq!(
        pttl,
        Some(-2),
        "node 3 keeps a hold nobody owns after shutdown: {left:?}"
    );
    assert_nothing_left_on(&[&m[0], &m[1]]).await;
}
