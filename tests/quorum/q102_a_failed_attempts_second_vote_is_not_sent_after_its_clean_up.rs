//! as in q74 node 4's vote overtakes this client's release (NOSCRIPT) and is answered
//! "held", but the attempt fails at once (nodes 1, 2, 3 held by another owner): its clean-up
//! releases its field, so node 4's second vote must not be sent (or must be undone).

use std::time::Duration;

use relock_testkit::Mode;
use relock_tests::*;

#[tokio::test]
async fn a_failed_attempts_second_vote_is_not_sent_after_its_clean_up() {
    let m = masters(5);
    let (d4, urls) = urls_with_proxy(&m, 3);
    let client = warm_quorum_client(urls, Duration::from_millis(400), "q102:warm-up").await;
    let lock = client.lock("q102").with_lease(Duration::from_secs(10));
    let g = lock.try_lock().await.unwrap().expect("a free lock");
    wait_held_on_every_node(&m, "q102").await;
    m[3].script_flush().unwrap();
    m[3].cmd(&["SCRIPT", "LOAD", relock::lua::ACQUIRE]).unwrap();
    d4.set_both(Mode::Delay(Duration::from_millis(20)));
    g.unlock().await.unwrap();
    for i in 0..3 {
        m[i].cmd(&["HSET", "q102", "someone-else:1", "1"]).unwrap();
        m[i].cmd(&["PEXPIRE", "q102", "10000"]).unwrap();
    }
    let again = lock.try_lock().await.unwrap();
    assert!(again.is_none());
    d4.heal();
    // Shutdown first waits for the client's work in flight (the votes, the clean-up): a second
    // vote granted after the clean-up would be left on node 4 for its 10 s lease.
    client.shutdown().await;
    for i in 0..3 {
        m[i].cmd(&["DEL", "q102"]).unwrap();
    }
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
}
