//! Without keyspace notifications, `relock watch` still shows a read-write lock's holds that
//! were taken and released between two reads: it hears the read-write lock's own release
//! channel too, as it hears the lock's.

use relock_testkit::RedisServer;

use super::common;

// Multi-threaded: the test blocks its thread reading the watch's lines while the client's
// tasks must go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_without_notifications_sees_a_read_write_locks_releases() {
    let server = RedisServer::start().expect("start redis-server");
    let mut watch = common::Watch::start(
        &server.url(),
        "cli-watch-rw",
        &["--count", "2", "--for", "25s"],
    );
    let e = watch.next();
    assert_eq!(e["event"], "free", "{e}");

    let client = relock::Client::connect(server.url()).await.unwrap();
    let rw = client.read_write_lock("cli-watch-rw");
    let w = rw.write_lock().lock().await.unwrap();
    w.unlock().await.unwrap();
    let e = watch.next();
    assert_eq!(e["event"], "passed", "{e}");
    let r = rw.read_lock().lock().await.unwrap();
    r.unlock().await.unwrap();
    let e = watch.next();
    assert_eq!(e["event"], "passed", "{e}");

    let (code, err) = watch.wait();
    assert_eq!(code, Some(0), "{err}");
    client.shutdown().await;
}
