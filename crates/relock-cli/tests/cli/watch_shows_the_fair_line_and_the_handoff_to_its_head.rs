//! `relock watch` on a fair lock shows a waiter joining its line, then the release, the
//! waiter taking the lock, and the line emptying, in that order.

use relock_testkit::RedisServer;

use super::common;

// Multi-threaded: the test blocks its thread reading the watch's lines while the clients' tasks
// (a waiter, the pub/sub listener) must go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_shows_the_fair_line_and_the_handoff_to_its_head() {
    let server = RedisServer::start().expect("start redis-server");
    let mut watch = common::Watch::start(
        &server.url(),
        "cli-fair",
        &["--enable-notifications", "--count", "5", "--for", "25s"],
    );
    assert_eq!(watch.next()["event"], "free");

    let a = relock::Client::connect(server.url()).await.unwrap();
    let b = relock::Client::connect(server.url()).await.unwrap();
    let held = a.fair_lock("cli-fair").lock().await.unwrap();
    let holder = held.owner().to_string();
    let e = watch.next();
    assert_eq!(
        (e["event"].as_str(), e["field"].as_str()),
        (Some("acquired"), Some(holder.as_str())),
        "{e}"
    );

    // The waiter keeps the lock until the test has seen it take it.
    let (done, release) = tokio::sync::oneshot::channel::<()>();
    let waiter = tokio::spawn(async move {
        let g = b.fair_lock("cli-fair").lock().await.unwrap();
        let owner = g.owner().to_string();
        let _ = release.await;
        g.unlock().await.unwrap();
        b.shutdown().await;
        owner
    });
    let e = watch.next();
    assert_eq!(e["event"], "line", "{e}");
    let line = e["line"].as_array().unwrap().clone();
    assert_eq!(line.len(), 1, "{e}");

    held.unlock().await.unwrap();
    let e = watch.next();
    assert_eq!(
        (e["event"].as_str(), e["field"].as_str()),
        (Some("released"), Some(holder.as_str())),
        "{e}"
    );
    let e = watch.next();
    assert_eq!(e["event"], "acquired", "{e}");
    assert_eq!(e["field"], line[0], "the head of the line took it: {e}");
    let e = watch.next();
    assert_eq!(
        (e["event"].as_str(), e["line"].as_array().map(Vec::len)),
        (Some("line"), Some(0)),
        "{e}"
    );

    done.send(()).unwrap();
    let owner = waiter.await.unwrap();
    assert_eq!(Some(owner.as_str()), line[0].as_str());
    assert_eq!(watch.wait().0, Some(0));
    a.shutdown().await;
}
