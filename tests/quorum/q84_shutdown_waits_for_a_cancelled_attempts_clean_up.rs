//! A `lock()` is cancelled (its task aborted) while its votes are still on the wire, and
//! `shutdown()` is called right after. Shutdown must wait for that attempt to end and release
//! whatever it took, so that once it returns no key of the lock is left on any node (with a
//! 30 s lease a leftover would be plain to see).

use std::time::{Duration, Instant};

use relock_testkit::{Direction, FaultProxy, Mode};
use relock_tests::*;

const DELAY: Duration = Duration::from_millis(400);

#[tokio::test]
async fn shutdown_waits_for_a_cancelled_attempts_clean_up() {
    let m = masters(5);
    let proxies: Vec<FaultProxy> = m
        .servers()
        .iter()
        .map(|s| FaultProxy::start(&s.addr()).unwrap())
        .collect();
    let client = relock::QuorumClient::builder()
        .urls(proxies.iter().map(FaultProxy::url))
        .node_timeout(Duration::from_secs(1))
        .watchdog_lease(Duration::from_secs(30))
        .restart_quarantine(Duration::ZERO)
        .connect_timeout(Duration::from_secs(5))
        .build()
        .await
        .unwrap();
    let name = "q84";
    // Load the scripts on every node first, so the vote below is one EVALSHA (no NOSCRIPT).
    warm_up(&client, "q84:warm-up").await;
    for p in &proxies {
        p.set(Direction::Up, Mode::Delay(DELAY));
    }
    let task = {
        let lock = client.lock(name);
        tokio::spawn(async move { lock.lock().await })
    };
    // Every proxy holds a vote (an EVALSHA of ~200 bytes; the uptime checks' INFOs are ~30).
    wait_until(
        Duration::from_secs(2),
        "the votes to be on the wire",
        || async { proxies.iter().all(|p| p.held(Direction::Up) >= 120) },
    )
    .await
    .unwrap();
    for (i, s) in m.servers().iter().enumerate() {
        assert_eq!(
            s.cmd(&["EXISTS", name]).unwrap().as_int(),
            Some(0),
            "node {i}: the vote already landed; the attempt was not in flight"
        );
    }
    task.abort();
    let started = Instant::now();
    bounded(Duration::from_secs(12), "shutdown", client.shutdown()).await;
    let returned = Instant::now();
    // Let anything still in flight land, then look.
    tokio::time::sleep(Duration::from_secs(1)).await;
    for (i, p) in proxies.iter().enumerate() {
        assert_eq!(p.held(Direction::Up), 0, "proxy {i} still holds commands");
    }
    let left: Vec<String> = m
        .servers()
        .iter()
        .enumerate()
        .filter(|(_, s)| s.cmd(&["EXISTS", name]).unwrap().as_int() != Some(0))
        .map(|(i, s)| {
            format!(
                "node {i} (pttl {:?})",
                s.cmd(&["PTTL", name]).unwrap().as_int()
            )
        })
        .collect();
    assert!(
        left.is_empty(),
        "1 s after shutdown returned (it took {:?}) the lock is still on {left:?}",
        returned - started
    );
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
}
