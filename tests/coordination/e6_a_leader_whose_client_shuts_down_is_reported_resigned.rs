//! Review repro: `LeaderEvent::Resigned` is documented as "the leader of `term` resigned (or
//! was dropped, or its client shut down)", but `Leaderships::at_shutdown` does nothing: the
//! client's shutdown releases the lock without marking the record, so observers report the
//! term as `Expired`, and the record (owner, value) is left behind for the rest of the lock's
//! lease instead of the documented 60 s resignation mark.

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
async fn a_leader_whose_client_shuts_down_is_reported_resigned() {
    let server = server();
    let (a, d) = (client(&server).await, client(&server).await);
    let name = "e6";
    let la = a.election(name).campaign("a").await.unwrap();
    let t1 = la.term();
    let mut obs = d.election(name).observe();
    assert!(matches!(next(&mut obs).await, LeaderEvent::Elected(l) if l.term == t1));
    a.shutdown().await;
    let event = next(&mut obs).await;
    let record: Vec<String> = match server.cmd(&["HGETALL", "relock_election:{e6}"]).unwrap() {
        relock_testkit::Value::Array(Some(items)) => {
            items.iter().filter_map(|v| v.as_string()).collect()
        }
        _ => Vec::new(),
    };
    let ttl = server
        .cmd(&["PTTL", "relock_election:{e6}"])
        .unwrap()
        .as_int();
    assert_eq!(
        event,
        LeaderEvent::Resigned { term: t1 },
        "the record after the leader's client shut down: {record:?}, PTTL {ttl:?} ms"
    );
    drop(la);
    drop(obs);
    d.shutdown().await;
}
