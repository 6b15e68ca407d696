//! `relock watch --election NAME` shows an election's changes as they happen: no leader at
//! first, then each election with its term and value, a new value, the resignation, the next
//! leader, and a deposed leader's term expiring, in order. The state at start is shown and not
//! counted (found by review): with a leader in place, `--count 1` waits for the next change,
//! and `--count 0` shows the state and exits.

use std::time::Duration;

use relock_testkit::RedisServer;

use crate::common::Watch;

#[tokio::test]
async fn watch_election_shows_each_leader_its_term_and_value_in_order() {
    let server = RedisServer::start().expect("start redis-server");
    let mut watch = Watch::start(
        &server.url(),
        "cli-watch-elect",
        &["--election", "--count", "5", "--for", "20s"],
    );
    assert_eq!(watch.next()["event"], "no leader");
    let a = relock::Client::connect(server.url()).await.unwrap();
    let b = relock::Client::connect(server.url()).await.unwrap();
    let la = a.election("cli-watch-elect").campaign("a").await.unwrap();
    let e = watch.next();
    assert_eq!(
        (e["event"].as_str(), e["value"].as_str()),
        (Some("elected"), Some("a")),
        "{e}"
    );
    assert_eq!(e["term"].as_u64(), Some(la.term()), "{e}");
    assert_eq!(e["owner"].as_str(), Some(la.lock_guard().owner()), "{e}");
    la.proclaim("a2").await.unwrap();
    let e = watch.next();
    assert_eq!(
        (e["event"].as_str(), e["value"].as_str()),
        (Some("value"), Some("a2")),
        "{e}"
    );
    let t1 = la.term();
    la.resign().await.unwrap();
    let e = watch.next();
    assert_eq!(
        (e["event"].as_str(), e["term"].as_u64()),
        (Some("resigned"), Some(t1)),
        "{e}"
    );
    let lb = b.election("cli-watch-elect").campaign("b").await.unwrap();
    let e = watch.next();
    assert_eq!(
        (e["event"].as_str(), e["value"].as_str()),
        (Some("elected"), Some("b")),
        "{e}"
    );
    assert!(lb.term() > t1);
    // Deposed by a force-unlock: the term expires.
    assert!(a.fair_lock("cli-watch-elect").force_unlock().await.unwrap());
    let e = watch.next();
    assert_eq!(
        (e["event"].as_str(), e["term"].as_u64()),
        (Some("expired"), Some(lb.term())),
        "{e}"
    );
    let (code, stderr) = watch.wait();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(watch.quiet_for(Duration::from_millis(10)));
    drop(lb);

    // A leader in place: shown as the state at start, not counted.
    let lc = a.election("cli-watch-elect").campaign("c").await.unwrap();
    let mut one = Watch::start(
        &server.url(),
        "cli-watch-elect",
        &["--election", "--count", "1"],
    );
    let e = one.next();
    assert_eq!(
        (e["event"].as_str(), e["term"].as_u64()),
        (Some("leader"), Some(lc.term())),
        "{e}"
    );
    lc.proclaim("c2").await.unwrap();
    let e = one.next();
    assert_eq!(
        (e["event"].as_str(), e["value"].as_str()),
        (Some("value"), Some("c2")),
        "{e}"
    );
    let (code, stderr) = one.wait();
    assert_eq!(code, Some(0), "{stderr}");
    let mut zero = Watch::start(
        &server.url(),
        "cli-watch-elect",
        &["--election", "--count", "0"],
    );
    assert_eq!(zero.next()["event"], "leader");
    let (code, stderr) = zero.wait();
    assert_eq!(code, Some(0), "{stderr}");
    drop(lc);
    a.shutdown().await;
    b.shutdown().await;
}
