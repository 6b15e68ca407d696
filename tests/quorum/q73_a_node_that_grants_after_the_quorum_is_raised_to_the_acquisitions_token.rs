//! When the granting majority minted one token alike, no write-back round is sent: their
//! counters already hold it. A node whose vote comes after the quorum was reached may have
//! minted less (restarted empty, its counter seeded from its clock, here behind the others'
//! counters, which came from a clock 0.5 s ahead). That node must still end up with the
//! acquisition's token, or a later majority made of it and nodes restarted empty mints from
//! clocks alone, below the token (how `q70`'s restart loop once saw a token go down).

use std::time::Duration;

use relock_testkit::{Direction, Mode};
use relock_tests::*;

const COUNTER: &str = "redisson_lock_token:{q73}";

fn counter_on(s: &RedisServer) -> Option<u64> {
    s.cmd(&["GET", COUNTER]).unwrap().as_int().map(|c| c as u64)
}

#[tokio::test]
async fn a_node_that_grants_after_the_quorum_is_raised_to_the_acquisitions_token() {
    let m = masters(5);
    let (slow, urls) = urls_with_proxy(&m, 4);
    let client = warm_quorum_client(urls, Duration::from_millis(500), "q73:warm-up").await;
    // Nodes 1–4 share a counter that a clock 0.5 s ahead seeded; node 5 has none.
    let ahead = (server_ms(&m[0]) * 1000 + 500_000).to_string();
    for s in &m.servers()[..4] {
        s.cmd(&["SET", COUNTER, &ahead, "PX", "60000"]).unwrap();
    }
    // Node 5 answers 100 ms after the others: its vote comes after the quorum.
    slow.set(Direction::Up, Mode::Delay(Duration::from_millis(100)));
    let lock = client.lock("q73").with_lease(Duration::from_secs(10));
    let a = lock
        .try_lock()
        .await
        .unwrap()
        .expect("granted by nodes 1–4");
    let ta = a.fencing_token();
    assert_eq!(ta, ahead.parse::<u64>().unwrap() + 1, "minted alike by 1–4");
    let raised = wait_until(
        Duration::from_secs(3),
        "node 5's counter at A's token",
        || async { counter_on(&m[4]).is_some_and(|c| c >= ta) },
    )
    .await;
    let on_node_5 = counter_on(&m[4]);
    a.unlock().await.unwrap();
    slow.heal();
    wait_until(Duration::from_secs(3), "A's release on node 5", || async {
        m[4].cmd(&["EXISTS", "q73"]).unwrap().as_int() == Some(0)
    })
    .await
    .unwrap();
    assert!(
        raised.is_ok(),
        "node 5 granted A after the quorum, minting from its clock; its counter stayed at \
         {on_node_5:?} 3 s later (None: its own seed expired), never A's token {ta}"
    );

    // What it protects: nodes 1 and 2 restart empty, 3 and 4 stop answering, and B's majority
    // is {1, 2, 5}. (Within 0.5 s of the seed, 1 and 2 mint below A's token from their clocks;
    // node 5's counter is what keeps B's token above A's.)
    m[0].restart_empty().unwrap();
    m[1].restart_empty().unwrap();
    m[2].pause().unwrap();
    m[3].pause().unwrap();
    // Until nodes 1 and 2 are reconnected: meanwhile four nodes of five cannot vote, and an
    // attempt says so at once (`QuorumNotReached`) rather than wait.
    let b = eventually(Duration::from_secs(10), "B granted by {1, 2, 5}", || {
        let l = lock.clone();
        async move { l.try_lock_for(Duration::from_secs(2)).await.ok().flatten() }
    })
    .await;
    let tb = b.fencing_token();
    b.unlock().await.unwrap();
    m[2].resume().unwrap();
    m[3].resume().unwrap();
    assert!(tb > ta, "B's token {tb} must exceed A's {ta}");
    client.shutdown().await;
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
}
