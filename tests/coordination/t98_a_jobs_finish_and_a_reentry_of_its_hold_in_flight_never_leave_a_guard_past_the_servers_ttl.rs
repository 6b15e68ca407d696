//! Review finding, reproduced and fixed: a job's finish raced a re-entry of the run's hold
//! from work the run spawned in its scope (`run.scope(..)`), in flight on another of the
//! client's connections. Before the fix the finish decided "last guard" locally, sent the
//! keep, then let the hold go: a re-entry answered in between got a guard valid for
//! at_most_for while the keep cut the key to at_least_for (two holders), and a re-entry
//! landing after the keep lengthened the kept key back to at_most_for.
//!
//! Now the finish closes the hold to joins before it sends the keep, the keep keeps only a
//! hold with one count (else the finish releases the whole hold), and a kept hold moves to a
//! fresh field that no re-entry can find. Whatever order the server runs the two in, the
//! re-entry gets no guard and the lock is free again within at_least_for.

use std::time::Duration;

use relock_testkit::{Direction, FaultProxy, Mode};
use relock_tests::*;

const AT_MOST: Duration = Duration::from_secs(10);
const AT_LEAST: Duration = Duration::from_secs(2);

/// A client behind a proxy, without hold watches (so that its only traffic is the two calls).
async fn proxied(server: &relock_testkit::RedisServer) -> (FaultProxy, relock::Client) {
    let proxy = FaultProxy::start(&server.addr()).unwrap();
    let client = relock::Client::builder()
        .url(proxy.url())
        .watch_holds(false)
        .command_timeout(Duration::from_secs(5))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    (proxy, client)
}

/// A run of job `name` on `a` (behind `proxy`) whose re-entry is in flight (held by the
/// proxy) when the run finishes; `reentry_first` picks which of the two the server runs first.
/// Returns the re-entry's outcome.
async fn finish_racing_a_reentry(
    server: &relock_testkit::RedisServer,
    proxy: &FaultProxy,
    a: &relock::Client,
    name: &str,
    reentry_first: bool,
) -> relock::Result<relock::LockGuard> {
    let job = a.job(name, AT_MOST).at_least_for(AT_LEAST);
    let run = job.try_start().await.unwrap().expect("free");
    let lock = job.lock().clone();
    let frozen = proxy.freeze_existing(Direction::Up);
    assert!(frozen.len() >= 2, "{frozen:?}");
    let reentry = tokio::spawn(run.scope(async move { lock.lock().await }));
    let reentry_conn = eventually(
        Duration::from_secs(2),
        "the re-entry on its way",
        || async {
            let h = proxy.conns_holding(Direction::Up);
            (h.len() == 1).then(|| h[0])
        },
    )
    .await;
    let finish = tokio::spawn(run.finish());
    let keep_conn = eventually(
        Duration::from_secs(2),
        "the keep on its way, on another connection",
        || async {
            proxy
                .conns_holding(Direction::Up)
                .into_iter()
                .find(|c| *c != reentry_conn)
        },
    )
    .await;
    let (first, second) = if reentry_first {
        (reentry_conn, keep_conn)
    } else {
        (keep_conn, reentry_conn)
    };
    proxy.set_conn(first, Direction::Up, Some(Mode::Pass));
    // Run by the server, not only passed on: the two connections are read by the server in
    // no promised order.
    wait_until(Duration::from_secs(2), "the first call to run", || async {
        if reentry_first {
            // The re-entry's count on the hold.
            match server.cmd(&["HVALS", name]).unwrap() {
                relock_testkit::Value::Array(Some(v)) => {
                    v.len() == 1 && v[0].as_string().as_deref() == Some("2")
                }
                _ => false,
            }
        } else {
            // The keep's shorter lease.
            let pttl = server.cmd(&["PTTL", name]).unwrap().as_int().unwrap_or(-2);
            pttl > 0 && pttl <= AT_LEAST.as_millis() as i64
        }
    })
    .await
    .unwrap();
    proxy.set_conn(second, Direction::Up, Some(Mode::Pass));
    // Whatever follows (a release of the whole hold) may go on any connection.
    proxy.clear_overrides();
    let out = bounded(Duration::from_secs(2), "re-entry", reentry)
        .await
        .unwrap();
    bounded(Duration::from_secs(2), "finish", finish)
        .await
        .unwrap()
        .unwrap();
    out
}

async fn free_within_at_least(server: &relock_testkit::RedisServer, name: &str) {
    let b = client(server).await;
    wait_until(
        AT_LEAST + Duration::from_secs(2),
        "the lock to be free",
        || async { b.lock(name).try_lock().await.unwrap().is_some() },
    )
    .await
    .unwrap();
    b.shutdown().await;
}

#[tokio::test]
async fn a_reentry_that_reaches_the_server_before_the_keep_gets_no_guard() {
    let server = server();
    let (proxy, a) = proxied(&server).await;
    let r = finish_racing_a_reentry(&server, &proxy, &a, "t98:a", true).await;
    assert!(
        matches!(r, Err(relock::Error::LockLost { .. })),
        "the re-entry must get no guard: {:?}",
        r.as_ref().map(|g| g.remaining())
    );
    // The keep found two counts and released the whole hold instead: free at once.
    assert_eq!(server.cmd(&["EXISTS", "t98:a"]).unwrap().as_int(), Some(0));
    free_within_at_least(&server, "t98:a").await;
    a.shutdown().await;
}

#[tokio::test]
async fn a_reentry_that_reaches_the_server_after_the_keep_finds_nothing_to_lengthen() {
    let server = server();
    let (proxy, a) = proxied(&server).await;
    let r = finish_racing_a_reentry(&server, &proxy, &a, "t98:b", false).await;
    assert!(
        matches!(r, Err(relock::Error::LockLost { .. })),
        "{:?}",
        r.map(|g| g.remaining())
    );
    let pttl = server.cmd(&["PTTL", "t98:b"]).unwrap().as_int().unwrap();
    assert!(pttl > 0 && pttl <= AT_LEAST.as_millis() as i64, "{pttl}");
    assert_eq!(server.cmd(&["HLEN", "t98:b"]).unwrap().as_int(), Some(1));
    free_within_at_least(&server, "t98:b").await;
    a.shutdown().await;
}
