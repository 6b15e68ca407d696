//! Every node grants its vote, but the replies come back after the lease's validity (the
//! lease less the clock-drift allowance): the attempt is released again, and the error says
//! what happened and what to change (a longer lease), naming how long the votes took and the
//! lease, not only "3 of the 2 votes needed".

use std::time::Duration;

use relock::Error;
use relock_testkit::{Direction, FaultProxy, Mode};
use relock_tests::*;

#[tokio::test]
async fn votes_granted_after_the_leases_validity_say_so_and_leave_no_hold() {
    let m = masters(3);
    let proxies: Vec<FaultProxy> = (0..3)
        .map(|i| FaultProxy::start(&m[i].addr()).expect("start a proxy"))
        .collect();
    let urls = proxies.iter().map(|p| p.url()).collect();
    let client = warm_quorum_client(urls, Duration::from_secs(2), "q110:warm").await;
    let lease = Duration::from_millis(100);
    let lock = client.lock("q110").with_lease(lease);
    for p in &proxies {
        p.set(Direction::Down, Mode::Delay(Duration::from_millis(150)));
    }
    let err = lock
        .try_lock()
        .await
        .expect_err("the votes outlast the lease");
    for p in &proxies {
        p.heal();
    }
    match &err {
        Error::QuorumNotReached {
            needed,
            granted,
            hint: Some(hint),
            ..
        } => {
            // The attempt stops counting once a quorum answered: the third vote may be late.
            assert_eq!(*needed, 2);
            assert!(*granted >= 2, "granted {granted}");
            assert!(hint.contains("were granted but took"), "{hint}");
            assert!(hint.contains("100ms") || hint.contains("100 ms"), "{hint}");
            assert!(hint.contains("longer lease"), "{hint}");
        }
        other => panic!("expected QuorumNotReached with a hint, got {other:?}"),
    }
    println!("{err}");
    assert!(err.to_string().contains("longer lease"), "{err}");
    client.shutdown().await;
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
}
