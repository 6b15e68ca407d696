//! Without keyspace notifications, `relock watch` shows the release of a read-write lock it
//! saw held at once: it hears the read-write lock's own channel (as a cue to read), instead
//! of noticing only when the lease it read would have run out.

use relock_testkit::RedisServer;

use super::common;

// Multi-threaded: the test blocks its thread reading the watch's lines while the client's
// tasks must go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_without_notifications_shows_a_read_write_locks_release_at_once() {
    let server = RedisServer::start().expect("start redis-server");
    let client = relock::Client::connect(server.url()).await.unwrap();
    let rw = client.read_write_lock("cli-watch-rw");
    // The default lease, 30 s: the watch's own timer would show the release far past the
    // 10 s each line is waited for.
    let w = rw.write_lock().lock().await.unwrap();
    let mut watch = common::Watch::start(
        &server.url(),
        "cli-watch-rw",
        &["--count", "1", "--for", "25s"],
    );
    let e = watch.next();
    assert_eq!(e["event"], "held", "{e}");
    w.unlock().await.unwrap();
    let e = watch.next();
    assert_eq!(e["event"], "released", "{e}");

    let (code, err) = watch.wait();
    assert_eq!(code, Some(0), "{err}");
    client.shutdown().await;
}
