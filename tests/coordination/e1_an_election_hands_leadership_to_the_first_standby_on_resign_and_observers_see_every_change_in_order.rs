//! Leader election: a campaign leads at once when nobody does; standbys wait in line and the
//! first of them leads within one handoff when the leader resigns (or its leadership is
//! dropped); terms strictly increase; `leader()` reads the leader, its term and value;
//! `proclaim` changes the value within the term; a force-unlock deposes the leader (`lost()`
//! fires); an observer sees, in order: the current leader, the value change, each resignation
//! and election, and the expiry.

use std::time::Duration;

use relock::{LeaderEvent, Leadership};
use relock_tests::*;

async fn next(obs: &mut relock::Observation) -> LeaderEvent {
    bounded(Duration::from_secs(5), "an election event", obs.next())
        .await
        .expect("the observation goes on")
        .expect("no error")
}

#[tokio::test]
async fn an_election_hands_leadership_to_the_first_standby_on_resign_and_observers_see_every_change_in_order(
) {
    let server = server();
    let (a, b, c, d) = (
        client(&server).await,
        client(&server).await,
        client(&server).await,
        client(&server).await,
    );
    let name = "e1";
    let la = a.election(name).campaign("a").await.unwrap();
    let t1 = la.term();
    let now = d.election(name).leader().await.unwrap().expect("a leads");
    assert_eq!(
        (now.term, now.value.as_str(), now.owner.as_str()),
        (t1, "a", la.lock_guard().owner())
    );
    assert!(now.lease_left.is_some_and(|l| l > Duration::from_secs(20)));

    let mut obs = d.election(name).observe();
    match next(&mut obs).await {
        LeaderEvent::Elected(l) => assert_eq!((l.term, l.value.as_str()), (t1, "a")),
        e => panic!("expected the current leader first, got {e:?}"),
    }

    // Standbys queue in order: b, then c.
    let campaign = |cl: &relock::Client, v: &'static str| {
        let e = cl.election(name);
        tokio::spawn(async move { e.campaign(v).await })
    };
    let wb = campaign(&b, "b");
    wait_until(Duration::from_secs(2), "b in line", || async {
        fair_line(&server, name).len() == 1
    })
    .await
    .unwrap();
    let wc = campaign(&c, "c");
    wait_until(Duration::from_secs(2), "c in line", || async {
        fair_line(&server, name).len() == 2
    })
    .await
    .unwrap();
    assert!(b.election(name).try_campaign("x").await.unwrap().is_none());

    la.proclaim("a2").await.unwrap();
    assert_eq!(la.value(), "a2");
    match next(&mut obs).await {
        LeaderEvent::ValueChanged(l) => assert_eq!((l.term, l.value.as_str()), (t1, "a2")),
        e => panic!("expected the value change, got {e:?}"),
    }

    la.resign().await.unwrap();
    let lb: Leadership = bounded(Duration::from_secs(2), "b to lead", wb)
        .await
        .unwrap()
        .unwrap();
    let t2 = lb.term();
    assert!(t2 > t1);
    assert_eq!(next(&mut obs).await, LeaderEvent::Resigned { term: t1 });
    match next(&mut obs).await {
        LeaderEvent::Elected(l) => assert_eq!((l.term, l.value.as_str()), (t2, "b")),
        e => panic!("expected b elected, got {e:?}"),
    }

    // A dropped leadership resigns too.
    drop(lb);
    let lc = bounded(Duration::from_secs(2), "c to lead", wc)
        .await
        .unwrap()
        .unwrap();
    let t3 = lc.term();
    assert!(t3 > t2);
    assert_eq!(next(&mut obs).await, LeaderEvent::Resigned { term: t2 });
    match next(&mut obs).await {
        LeaderEvent::Elected(l) => assert_eq!((l.term, l.value.as_str()), (t3, "c")),
        e => panic!("expected c elected, got {e:?}"),
    }

    // Deposed by a force-unlock: lost() fires, observers see the term expire.
    assert!(d.fair_lock(name).force_unlock().await.unwrap());
    bounded(Duration::from_secs(2), "c's loss", lc.lost()).await;
    assert!(matches!(
        lc.proclaim("late").await,
        Err(relock::Error::LockLost { .. })
    ));
    assert_eq!(next(&mut obs).await, LeaderEvent::Expired { term: t3 });
    assert!(d.election(name).leader().await.unwrap().is_none());
    drop(lc);
    drop(obs);
    // Bad input: an empty name is refused, typed, before anything is sent.
    match d.election("").campaign("x").await {
        Err(relock::Error::InvalidArgument { name, .. }) => assert_eq!(name, "name"),
        other => panic!(
            "expected InvalidArgument, got {:?}",
            other.map(|l| l.term())
        ),
    }
    for cl in [&a, &b, &c, &d] {
        cl.shutdown().await;
    }
    assert_eq!(server.cmd(&["EXISTS", name]).unwrap().as_int(), Some(0));
    assert_eq!(
        server
            .pubsub_numsub("relock_election_channel:{e1}")
            .unwrap(),
        0
    );
}
