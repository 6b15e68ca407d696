//! Without keyspace notifications, `relock watch` says what it cannot see, and still shows a
//! lease running out (it reads once when the lease it last saw should end) and a hold that
//! was taken and released between two reads (from the release channel).

use relock_testkit::RedisServer;

use super::common;

/// A Redisson owner field: `<uuid>:<thread id>`.
const REDISSON: &str = "2f1c7a0e-5b7d-4c1e-9a63-0c1d2e3f4a5b:57";

// Multi-threaded: the test blocks its thread reading the watch's lines while the clients' tasks
// (a waiter, the pub/sub listener) must go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_without_notifications_still_sees_releases_and_expiries() {
    let server = RedisServer::start().expect("start redis-server");
    // A Redisson holder that will never release: only its lease ends it.
    server.cmd(&["HSET", "cli-watch2", REDISSON, "1"]).unwrap();
    server.cmd(&["PEXPIRE", "cli-watch2", "1500"]).unwrap();

    let mut watch = common::Watch::start(
        &server.url(),
        "cli-watch2",
        &["--count", "2", "--for", "25s"],
    );
    let e = watch.next();
    assert_eq!(
        (
            e["event"].as_str(),
            e["field"].as_str(),
            e["layout"].as_str()
        ),
        (Some("held"), Some(REDISSON), Some("redisson")),
        "{e}"
    );
    let e = watch.next();
    assert_eq!(
        (e["event"].as_str(), e["field"].as_str()),
        (Some("expired"), Some(REDISSON)),
        "{e}"
    );

    // Taken and released while the watch cannot see acquisitions: the release still shows.
    let client = relock::Client::connect(server.url()).await.unwrap();
    let g = client.lock("cli-watch2").lock().await.unwrap();
    g.unlock().await.unwrap();
    let e = watch.next();
    assert_eq!(e["event"], "passed", "{e}");

    let (code, err) = watch.wait();
    assert_eq!(code, Some(0));
    assert!(err.contains("keyspace notifications are off"), "{err}");
    assert!(err.contains("--enable-notifications"), "{err}");
    assert_eq!(common::flags(&server), "", "left as it was");
    client.shutdown().await;
}
