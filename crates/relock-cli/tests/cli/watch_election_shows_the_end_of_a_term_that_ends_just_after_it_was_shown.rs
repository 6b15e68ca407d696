//! `relock watch --election` on a slow link: a term that ends right after the watch showed
//! it as the leader at start (before the observation's own first read) is still shown ending.
//! The start state and the changes after it come from one read, so no change falls between.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use relock_testkit::{FaultProxy, Mode, RedisServer};

use crate::common::RELOCK;

#[tokio::test]
async fn watch_election_shows_the_end_of_a_term_that_ends_just_after_it_was_shown() {
    let server = RedisServer::start().expect("start redis-server");
    let a = relock::Client::connect(server.url()).await.unwrap();
    let leading = a.election("cli-watch-end").campaign("a").await.unwrap();
    let term = leading.term();
    // The watch's connections are slow (an operator's terminal far away): 300 ms each way.
    let proxy = FaultProxy::start(&server.addr()).unwrap();
    proxy.set_both(Mode::Delay(Duration::from_millis(300)));
    let mut child = Command::new(RELOCK)
        .args([
            "watch",
            "cli-watch-end",
            "--url",
            &proxy.url(),
            "--json",
            "--election",
        ])
        .args(["--count", "1", "--for", "20s"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let first = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(
        first.contains("\"leader\"") && first.contains(&format!("\"term\":{term}")),
        "{first}"
    );
    // The leader resigns right after the watch showed it.
    leading.resign().await.unwrap();
    let next = rx.recv_timeout(Duration::from_secs(10));
    let status = child.wait().unwrap();
    a.shutdown().await;
    let next = next.expect("the watch showed the leader and never the end of its term");
    assert!(
        next.contains("resigned") && next.contains(&format!("\"term\":{term}")),
        "{next}"
    );
    assert_eq!(
        status.code(),
        Some(0),
        "--count 1 ends the watch after the change"
    );
}
