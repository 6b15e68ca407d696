//! Review finding: `guard.extend(lease)` on a quorum hold takes the hold's gate only while
//! its future is polled. Dropped during its put-back (a `timeout` around `extend`, as the docs
//! call it cancel safe), the gate goes with it while the put-back calls go on in their tasks; a
//! release then runs on a node before the put-back's EVAL lands there, and the put-back makes
//! a hold nobody owns, with the extension's lease. Same shape as q96 (shutdown), via extend.
//! Node 3 lost the hold, has the renewal and release scripts cached but not the put-back's,
//! and its replies are 300 ms late.

use std::time::Duration;

use relock_testkit::{Direction, Mode};
use relock_tests::*;

#[tokio::test]
async fn a_cancelled_extend_never_puts_a_hold_back_after_its_release() {
    let m = masters(3);
    let (proxy, urls) = urls_with_proxy(&m, 2);
    let client = quorum_builder(urls, Duration::from_millis(2000))
        .build()
        .await
        .unwrap();
    let guard = client
        .lock("q108")
        .with_lease(Duration::from_secs(5))
        .lock()
        .await
        .unwrap();
    wait_held_on_every_node(&m, "q108").await;
    // Node 3 loses it; it forgets the put-back script but keeps the renewal and release.
    m[2].cmd(&["DEL", "q108"]).unwrap();
    m[2].script_flush().unwrap();
    m[2].cmd(&["SCRIPT", "LOAD", relock::lua::QUORUM_RENEW])
        .unwrap();
    m[2].cmd(&["SCRIPT", "LOAD", relock::lua::QUORUM_RELEASE])
        .unwrap();
    let evals_before = m[2].command_calls("eval").unwrap();
    proxy.set(Direction::Down, Mode::Delay(Duration::from_millis(300)));
    // The round takes ~300 ms (node 3's reply), then the put-back meets NOSCRIPT (~300 ms
    // more): the caller gives up in between.
    let r = tokio::time::timeout(
        Duration::from_millis(450),
        guard.extend(Duration::from_secs(60)),
    )
    .await;
    assert!(r.is_err(), "the extend was expected to be cut off: {r:?}");
    guard.unlock().await.unwrap();
    // Until the put-back (an EVAL after its NOSCRIPT) has run on node 3, whatever it did.
    wait_until(Duration::from_secs(3), "the put-back on node 3", || async {
        m[2].command_calls("eval").unwrap() > evals_before
    })
    .await
    .unwrap();
    // And node 3's part of the release (unlock returns once a majority answered): with the bug,
    // a put-back after it leaves a 60 s hold, and this wait times out.
    let _ = wait_until(Duration::from_secs(3), "node 3 released", || async {
        m[2].cmd(&["PTTL", "q108"]).unwrap().as_int() == Some(-2)
    })
    .await;
    let left = m[2].cmd(&["HGETALL", "q108"]).unwrap();
    let pttl = m[2].cmd(&["PTTL", "q108"]).unwrap().as_int();
    let evals = m[2].command_calls("eval").unwrap() - evals_before;
    proxy.set(Direction::Down, Mode::Pass);
    assert!(evals >= 1, "no put-back ran on node 3");
    assert_eq!(
        pttl,
        Some(-2),
        "node 3 keeps a hold nobody owns after its release: {left:?}"
    );
    client.shutdown().await;
}
