//! Review repro: a standby that a resignation hands the leadership to holds the lock with the
//! fair handoff's first lease (at most its heartbeat deadline, 5 s by default), which
//! `renew_first_lease` renews early; `election_begin.lua` gives the record that short TTL, and
//! the record is renewed only in the watchdog's round (every lease/3 = 10 s). So the record
//! expires while the standby leads: `leader()` says nobody leads, observers report the live
//! leader's term as expired, and its `proclaim` fails with LockLost (election_renew.lua never
//! re-creates the record).

use std::time::Duration;

use relock::LeaderEvent;
use relock_tests::*;

async fn next(obs: &mut relock::Observation) -> LeaderEvent {
    bounded(Duration::from_secs(5), "an election event", obs.next())
        .await
        .expect("the observation goes on")
        .expect("no error")
}

#[tokio::test]
async fn a_standby_handed_the_leadership_keeps_its_record_past_the_handoffs_first_lease() {
    let server = server();
    // Default settings: watchdog lease 30 s, fair heartbeat deadline 5 s.
    let (a, b, d) = (
        client(&server).await,
        client(&server).await,
        client(&server).await,
    );
    let name = "e3";
    let record = "relock_election:{e3}";
    let la = a.election(name).campaign("a").await.unwrap();
    let mut obs = d.election(name).observe();
    assert!(matches!(next(&mut obs).await, LeaderEvent::Elected(l) if l.term == la.term()));
    let standby = {
        let e = b.election(name);
        tokio::spawn(async move { e.campaign("b").await })
    };
    wait_until(Duration::from_secs(2), "b in line", || async {
        fair_line(&server, name).len() == 1
    })
    .await
    .unwrap();
    let t1 = la.term();
    la.resign().await.unwrap();
    let lb = bounded(Duration::from_secs(2), "b to lead", standby)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(next(&mut obs).await, LeaderEvent::Resigned { term: t1 });
    assert!(matches!(next(&mut obs).await, LeaderEvent::Elected(l) if l.term == lb.term()));
    let record_ttl = server.cmd(&["PTTL", record]).unwrap().as_int();
    let lock_ttl = server.cmd(&["PTTL", name]).unwrap().as_int();

    // Past the handoff's first lease (the lock's TTL just after the handoff, which the record
    // had before the fix), well before b's watchdog's first round (10 s), on the server's own
    // clock: a probe key with that TTL has expired.
    let first_lease = lock_ttl.unwrap_or(0).max(0) + 500;
    server
        .cmd(&["SET", "e3:probe", "1", "PX", &first_lease.to_string()])
        .unwrap();
    wait_until(
        Duration::from_secs(8),
        "past the handoff's first lease",
        || async { server.cmd(&["EXISTS", "e3:probe"]).unwrap().as_int() == Some(0) },
    )
    .await
    .unwrap();
    assert!(!lb.is_lost(), "b still leads");
    let field = lb.lock_guard().owner().to_string();
    assert_eq!(
        server.cmd(&["HEXISTS", name, &field]).unwrap().as_int(),
        Some(1),
        "b's hold is on the server"
    );
    let now = d.election(name).leader().await.unwrap();
    assert_eq!(
        now.as_ref().map(|l| (l.term, l.value.as_str())),
        Some((lb.term(), "b")),
        "leader() while b leads; right after the handoff the record's PTTL was {record_ttl:?} ms \
         (the lock's {lock_ttl:?} ms); now the record exists: {:?}, the lock's PTTL {:?}",
        server.cmd(&["EXISTS", record]).unwrap().as_int(),
        server.cmd(&["PTTL", name]).unwrap().as_int(),
    );
    lb.proclaim("b2").await.unwrap();
    drop(obs);
    drop(lb);
    for c in [&a, &b, &d] {
        c.shutdown().await;
    }
}
