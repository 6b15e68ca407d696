//! `relock watch NAME` prints each acquisition and release of a lock as it happens, with the
//! holder's owner field and fencing token, from keyspace notifications (which
//! `--enable-notifications` turns on) and the release channel; it reads nothing while nothing
//! happens, and `--count` ends it.

use std::time::Duration;

use relock_testkit::{wait_until, RedisServer};

use super::common;

// Multi-threaded: the test blocks its thread reading the watch's lines while the clients' tasks
// (a waiter, the pub/sub listener) must go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_shows_each_acquisition_and_release_as_it_happens() {
    let server = RedisServer::start().expect("start redis-server");
    let mut watch = common::Watch::start(
        &server.url(),
        "cli-watch",
        &["--enable-notifications", "--count", "4", "--for", "25s"],
    );
    assert_eq!(watch.next()["event"], "free");
    let f = common::flags(&server);
    assert!(
        f.contains('K') && f.contains('h') && f.contains('g'),
        "notifications on: {f}"
    );

    let a = relock::Client::connect(server.url()).await.unwrap();
    let b = relock::Client::connect(server.url()).await.unwrap();
    let lock = |c: &relock::Client| c.lock("cli-watch").with_lease(Duration::from_secs(10));

    let g1 = lock(&a).lock().await.unwrap();
    let e = watch.next();
    assert_eq!(
        (
            e["event"].as_str(),
            e["field"].as_str(),
            e["count"].as_i64()
        ),
        (Some("acquired"), Some(g1.owner()), Some(1)),
        "{e}"
    );
    assert_eq!(e["counter"].as_u64(), Some(g1.fencing_token()), "{e}");
    assert_eq!(e["layout"], "relock", "{e}");

    // Nothing happens to the lock while its fencing counter runs out (1 s): the watch must not
    // read it meanwhile (a poller would). The reads the acquisition's notifications prompted
    // (its `hset`, then its `expire`) can trail the printed event, more so with other tests
    // running beside this one: count from when they have landed (no new read for 200 ms), and
    // only while the counter still lives, so that the idle window is never empty.
    let mut last = (
        server.command_calls("hgetall").unwrap(),
        std::time::Instant::now(),
    );
    wait_until(
        Duration::from_secs(5),
        "the acquisition's reads to land",
        || {
            let now = server.command_calls("hgetall").unwrap();
            if now != last.0 {
                last = (now, std::time::Instant::now());
            }
            let settled = last.1.elapsed() >= Duration::from_millis(200);
            async move { settled }
        },
    )
    .await
    .unwrap();
    let reads = last.0;
    assert_eq!(
        server
            .cmd(&["EXISTS", "redisson_lock_token:{cli-watch}"])
            .ok()
            .and_then(|v| v.as_int()),
        Some(1),
        "the counter ran out before the idle window began: nothing was measured"
    );
    wait_until(Duration::from_secs(5), "the counter to expire", || async {
        server
            .cmd(&["EXISTS", "redisson_lock_token:{cli-watch}"])
            .is_ok_and(|v| v.as_int() == Some(0))
    })
    .await
    .unwrap();
    let idle_reads = server.command_calls("hgetall").unwrap() - reads;
    assert_eq!(
        idle_reads, 0,
        "{idle_reads} reads while idle: the watch polls"
    );

    let owner1 = g1.owner().to_string();
    g1.unlock().await.unwrap();
    let e = watch.next();
    assert_eq!(
        (e["event"].as_str(), e["field"].as_str()),
        (Some("released"), Some(owner1.as_str())),
        "{e}"
    );

    let g2 = lock(&b).lock().await.unwrap();
    let e = watch.next();
    assert_eq!(
        (e["event"].as_str(), e["field"].as_str()),
        (Some("acquired"), Some(g2.owner())),
        "{e}"
    );
    let owner2 = g2.owner().to_string();
    g2.unlock().await.unwrap();
    let e = watch.next();
    assert_eq!(
        (e["event"].as_str(), e["field"].as_str()),
        (Some("released"), Some(owner2.as_str())),
        "{e}"
    );

    // Four changes: it exits by itself, with 0, and leaves no subscription behind.
    let (code, err) = watch.wait();
    assert_eq!(code, Some(0));
    assert!(
        watch.quiet_for(Duration::from_secs(1)),
        "no line after the 4th"
    );
    assert!(err.contains("keyspace notifications turned on"), "{err}");
    wait_until(
        Duration::from_secs(5),
        "the watch's subscriptions to go",
        || async { server.pubsub_channels().unwrap().is_empty() },
    )
    .await
    .unwrap();
    a.shutdown().await;
    b.shutdown().await;
}
