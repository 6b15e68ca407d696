//! A campaign whose lock was granted, and whose record (`election_begin.lua`) has been written
//! on the server but not yet answered, when its client's shutdown begins: shutdown releases
//! the election's lock, and the record must be resigned as a settled leader's is (observers
//! see `Resigned`), not left to expire under a free lock (observers see `Expired`), and the
//! campaign must not hand out a leadership of a client that has shut down.

use std::time::Duration;

use relock::LeaderEvent;
use relock_testkit::{wait_until, Direction, Mode};
use relock_tests::*;

async fn next(obs: &mut relock::Observation) -> LeaderEvent {
    bounded(Duration::from_secs(5), "an election event", obs.next())
        .await
        .expect("the observation goes on")
        .expect("no error")
}

#[tokio::test]
async fn a_leadership_recorded_while_its_client_shuts_down_is_reported_resigned() {
    let server = server();
    let (proxy, a) = client_behind_proxy(&server, Duration::from_secs(3)).await;
    let d = client(&server).await;
    let name = "e10";
    let mut obs = d.election(name).observe();
    // Every reply to `a` comes 800 ms late: the record is on the server well before its
    // campaign hears that it was written.
    proxy.set(Direction::Down, Mode::Delay(Duration::from_millis(800)));
    let campaign = {
        let a = a.clone();
        tokio::spawn(async move { a.election(name).campaign("a").await.map(|l| l.term()) })
    };
    wait_until(Duration::from_secs(5), "the record written", || async {
        server
            .cmd(&["HLEN", "relock_election:{e10}"])
            .ok()
            .and_then(|v| v.as_int())
            .is_some_and(|n| n > 0)
    })
    .await
    .unwrap();
    let elected = next(&mut obs).await;
    let LeaderEvent::Elected(l) = &elected else {
        panic!("first event: {elected:?}");
    };
    let term = l.term;
    bounded(Duration::from_secs(10), "shutdown", a.shutdown()).await;
    let campaigned = bounded(Duration::from_secs(10), "the campaign", campaign)
        .await
        .unwrap();
    let event = next(&mut obs).await;
    let record: Vec<String> = match server.cmd(&["HGETALL", "relock_election:{e10}"]).unwrap() {
        relock_testkit::Value::Array(Some(items)) => {
            items.iter().filter_map(|v| v.as_string()).collect()
        }
        _ => Vec::new(),
    };
    let ttl = server
        .cmd(&["PTTL", "relock_election:{e10}"])
        .unwrap()
        .as_int();
    assert_eq!(
        event,
        LeaderEvent::Resigned { term },
        "the campaign returned {campaigned:?}; the record after its client shut down: {record:?}, PTTL {ttl:?} ms"
    );
    drop(obs);
    d.shutdown().await;
}
