//! `relock watch` on a fair lock shows a waiter joining its line, then the release, the
//! waiter taking the lock, and the line emptying, in that order.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use relock_testkit::RedisServer;
use serde_json::Value;

const RELOCK: &str = env!("CARGO_BIN_EXE_relock");

fn next(lines: &mpsc::Receiver<String>) -> Value {
    let line = lines
        .recv_timeout(Duration::from_secs(10))
        .expect("a line from relock watch within 10 s");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

// Multi-threaded: the test blocks its thread reading the watch's lines while the clients' tasks
// (a waiter, the pub/sub listener) must go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_shows_the_fair_line_and_the_handoff_to_its_head() {
    let server = RedisServer::start().expect("start redis-server");
    let mut watch = Command::new(RELOCK)
        .args(["watch", "cli-fair", "--url", &server.url()])
        .args([
            "--enable-notifications",
            "--json",
            "--count",
            "5",
            "--for",
            "25s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, lines) = mpsc::channel();
    let stdout = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    assert_eq!(next(&lines)["event"], "free");

    let a = relock::Client::connect(server.url()).await.unwrap();
    let b = relock::Client::connect(server.url()).await.unwrap();
    let held = a.fair_lock("cli-fair").lock().await.unwrap();
    let holder = held.owner().to_string();
    let e = next(&lines);
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
    let e = next(&lines);
    assert_eq!(e["event"], "line", "{e}");
    let line = e["line"].as_array().unwrap().clone();
    assert_eq!(line.len(), 1, "{e}");

    held.unlock().await.unwrap();
    let e = next(&lines);
    assert_eq!(
        (e["event"].as_str(), e["field"].as_str()),
        (Some("released"), Some(holder.as_str())),
        "{e}"
    );
    let e = next(&lines);
    assert_eq!(e["event"], "acquired", "{e}");
    assert_eq!(e["field"], line[0], "the head of the line took it: {e}");
    let e = next(&lines);
    assert_eq!(
        (e["event"].as_str(), e["line"].as_array().map(Vec::len)),
        (Some("line"), Some(0)),
        "{e}"
    );

    done.send(()).unwrap();
    let owner = waiter.await.unwrap();
    assert_eq!(Some(owner.as_str()), line[0].as_str());
    assert_eq!(watch.wait().unwrap().code(), Some(0));
    a.shutdown().await;
}
