//! Without keyspace notifications, `relock watch` says what it cannot see, and still shows a
//! lease running out (it reads once when the lease it last saw should end) and a hold that
//! was taken and released between two reads (from the release channel).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use relock_testkit::RedisServer;
use serde_json::Value;

const RELOCK: &str = env!("CARGO_BIN_EXE_relock");
/// A Redisson owner field: `<uuid>:<thread id>`.
const REDISSON: &str = "2f1c7a0e-5b7d-4c1e-9a63-0c1d2e3f4a5b:57";

fn next(lines: &mpsc::Receiver<String>) -> Value {
    let line = lines
        .recv_timeout(Duration::from_secs(10))
        .expect("a line from relock watch within 10 s");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// The server's notify-keyspace-events flags.
fn flags(server: &RedisServer) -> String {
    match server
        .cmd(&["CONFIG", "GET", "notify-keyspace-events"])
        .unwrap()
    {
        relock_testkit::Value::Array(Some(v)) => match v.get(1) {
            Some(relock_testkit::Value::Bulk(Some(b))) => String::from_utf8_lossy(b).into(),
            other => panic!("unexpected reply {other:?}"),
        },
        other => panic!("unexpected reply {other:?}"),
    }
}

// Multi-threaded: the test blocks its thread reading the watch's lines while the clients' tasks
// (a waiter, the pub/sub listener) must go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_without_notifications_still_sees_releases_and_expiries() {
    let server = RedisServer::start().expect("start redis-server");
    // A Redisson holder that will never release: only its lease ends it.
    server.cmd(&["HSET", "cli-watch2", REDISSON, "1"]).unwrap();
    server.cmd(&["PEXPIRE", "cli-watch2", "1500"]).unwrap();

    let mut watch = Command::new(RELOCK)
        .args(["watch", "cli-watch2", "--url", &server.url()])
        .args(["--json", "--count", "2", "--for", "25s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, lines) = mpsc::channel();
    let stdout = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let e = next(&lines);
    assert_eq!(
        (
            e["event"].as_str(),
            e["field"].as_str(),
            e["layout"].as_str()
        ),
        (Some("held"), Some(REDISSON), Some("redisson")),
        "{e}"
    );
    let e = next(&lines);
    assert_eq!(
        (e["event"].as_str(), e["field"].as_str()),
        (Some("expired"), Some(REDISSON)),
        "{e}"
    );

    // Taken and released while the watch cannot see acquisitions: the release still shows.
    let client = relock::Client::connect(server.url()).await.unwrap();
    let g = client.lock("cli-watch2").lock().await.unwrap();
    g.unlock().await.unwrap();
    let e = next(&lines);
    assert_eq!(e["event"], "passed", "{e}");

    assert_eq!(watch.wait().unwrap().code(), Some(0));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut watch.stderr.take().unwrap(), &mut err).unwrap();
    assert!(err.contains("keyspace notifications are off"), "{err}");
    assert!(err.contains("--enable-notifications"), "{err}");
    assert_eq!(flags(&server), "", "left as it was");
    client.shutdown().await;
}
