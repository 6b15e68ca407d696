//! A leader whose election record goes while it holds the lock (a `DEL`, an eviction) is no
//! longer seen leading by anyone: its next watchdog round tells it (`lost()` fires), a
//! proclaim says `LockLost` consistently with `is_lost()`, and once it lets the leadership go
//! the standby leads.

use std::time::Duration;

use relock::Error;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_whose_record_is_deleted_is_told_its_leadership_is_lost() {
    let server = server();
    let a = client_with_lease(&server, Duration::from_millis(900)).await;
    let b = client(&server).await;
    let leading = a.election("e12").campaign("a").await.unwrap();
    let standby = {
        let election = b.election("e12");
        tokio::spawn(async move { election.campaign("b").await })
    };
    wait_until(Duration::from_secs(3), "the standby in line", || async {
        b.parked_waiters() == 1
    })
    .await
    .unwrap();
    assert!(!leading.is_lost());

    server.cmd(&["DEL", "relock_election:{e12}"]).unwrap();
    bounded(
        Duration::from_secs(3),
        "lost() after the record went",
        leading.lost(),
    )
    .await;
    assert!(leading.is_lost());
    assert!(matches!(
        leading.proclaim("a2").await,
        Err(Error::LockLost { .. })
    ));

    drop(leading);
    let next = bounded(Duration::from_secs(5), "the standby's campaign", standby)
        .await
        .unwrap()
        .unwrap();
    let now = b.election("e12").leader().await.unwrap().unwrap();
    let next_term = next.term();
    assert_eq!((now.term, now.value.as_str()), (next_term, "b"));
    next.resign().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
    // The record keeps the resignation's mark for a lease, for observers that read later.
    let ended = server
        .cmd(&["HGET", "relock_election:{e12}", "ended_term"])
        .unwrap();
    assert_eq!(ended.as_string(), Some(next_term.to_string()));
    server.cmd(&["DEL", "relock_election:{e12}"]).unwrap();
    assert_nothing_left(&server).await;
}
