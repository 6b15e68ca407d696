//! `relock watch NAME` prints each acquisition and release of a lock as it happens, with the
//! holder's owner field and fencing token, from keyspace notifications (which
//! `--enable-notifications` turns on) and the release channel; it reads nothing while nothing
//! happens, and `--count` ends it.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use relock_testkit::{wait_until, RedisServer};
use serde_json::Value;

const RELOCK: &str = env!("CARGO_BIN_EXE_relock");

/// The next line the watch prints, as JSON, within 10 s.
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
async fn watch_shows_each_acquisition_and_release_as_it_happens() {
    let server = RedisServer::start().expect("start redis-server");
    let mut watch = Command::new(RELOCK)
        .args(["watch", "cli-watch", "--url", &server.url()])
        .args([
            "--enable-notifications",
            "--json",
            "--count",
            "4",
            "--for",
            "25s",
        ])
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
    assert_eq!(next(&lines)["event"], "free");
    let f = flags(&server);
    assert!(
        f.contains('K') && f.contains('h') && f.contains('g'),
        "notifications on: {f}"
    );

    let a = relock::Client::connect(server.url()).await.unwrap();
    let b = relock::Client::connect(server.url()).await.unwrap();
    let lock = |c: &relock::Client| c.lock("cli-watch").with_lease(Duration::from_secs(10));

    let g1 = lock(&a).lock().await.unwrap();
    let e = next(&lines);
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
    // read it meanwhile (a poller would). One read may still be on its way: the acquisition's
    // `expire` notification can arrive after the read that its `hset` prompted.
    let reads = server.command_calls("hgetall").unwrap();
    wait_until(Duration::from_secs(5), "the counter to expire", || async {
        server
            .cmd(&["EXISTS", "redisson_lock_token:{cli-watch}"])
            .is_ok_and(|v| v.as_int() == Some(0))
    })
    .await
    .unwrap();
    let idle_reads = server.command_calls("hgetall").unwrap() - reads;
    assert!(
        idle_reads <= 1,
        "{idle_reads} reads while idle: the watch polls"
    );

    let owner1 = g1.owner().to_string();
    g1.unlock().await.unwrap();
    let e = next(&lines);
    assert_eq!(
        (e["event"].as_str(), e["field"].as_str()),
        (Some("released"), Some(owner1.as_str())),
        "{e}"
    );

    let g2 = lock(&b).lock().await.unwrap();
    let e = next(&lines);
    assert_eq!(
        (e["event"].as_str(), e["field"].as_str()),
        (Some("acquired"), Some(g2.owner())),
        "{e}"
    );
    let owner2 = g2.owner().to_string();
    g2.unlock().await.unwrap();
    let e = next(&lines);
    assert_eq!(
        (e["event"].as_str(), e["field"].as_str()),
        (Some("released"), Some(owner2.as_str())),
        "{e}"
    );

    // Four changes: it exits by itself, with 0, and leaves no subscription behind.
    let status = watch.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(
        lines.recv_timeout(Duration::from_secs(1)).is_err(),
        "no line after the 4th"
    );
    let mut err = String::new();
    std::io::Read::read_to_string(&mut watch.stderr.take().unwrap(), &mut err).unwrap();
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
