//! `relock elect NAME CMD` runs CMD while this process leads the election (RELOCK_TERM in its
//! environment); another `relock elect --no-wait` exits 75 naming the leader; a standby waits
//! and its command starts when the leader's ends, with a higher term; `relock status` shows the
//! leader's value and term.

use std::process::{Command, Stdio};
use std::time::Duration;

use relock_testkit::{wait_until, RedisServer};

use crate::common::RELOCK;

#[tokio::test]
async fn elect_runs_the_command_while_leading_and_the_next_standby_leads_when_it_ends() {
    let server = RedisServer::start().expect("start redis-server");
    let url = server.url();
    let elect = |value: &str, script: &str| {
        Command::new(RELOCK)
            .args([
                "elect",
                "--url",
                &url,
                "--value",
                value,
                "cli-elect",
                "sh",
                "-c",
                script,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // The leader runs until a file appears.
    let dir = std::env::temp_dir().join(format!("relock-elect-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let go = dir.join("go");
    let leader = elect(
        "first",
        &format!(
            "echo $RELOCK_TERM; while [ ! -e {} ]; do sleep 0.05; done",
            go.display()
        ),
    );
    let client = relock::Client::connect(url.clone()).await.unwrap();
    let election = client.election("cli-elect");
    wait_until(
        Duration::from_secs(5),
        "the first process to lead",
        || async { election.leader().await.unwrap().is_some() },
    )
    .await
    .unwrap();
    let first = election.leader().await.unwrap().unwrap();
    assert_eq!(first.value, "first");

    let out = Command::new(RELOCK)
        .args(["elect", "--url", &url, "--no-wait", "cli-elect", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(75), "{err}");
    assert!(
        err.contains("\"first\"") && err.contains(&format!("term {}", first.term)),
        "{err}"
    );

    let status = Command::new(RELOCK)
        .args(["status", "--url", &url, "cli-elect"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains(&format!(
            "election leader {} (value \"first\"), term {}",
            first.owner, first.term
        )),
        "{text}"
    );

    let standby = elect("second", "echo $RELOCK_TERM");
    wait_until(Duration::from_secs(5), "the standby in line", || async {
        client
            .fair_lock("cli-elect")
            .status()
            .await
            .unwrap()
            .queue
            .len()
            == 1
    })
    .await
    .unwrap();
    std::fs::write(&go, "").unwrap();
    let a = leader.wait_with_output().unwrap();
    let b = standby.wait_with_output().unwrap();
    assert_eq!(
        a.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&a.stderr)
    );
    assert_eq!(
        b.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&b.stderr)
    );
    let term = |o: &std::process::Output| -> u64 {
        String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
    };
    assert_eq!(term(&a), first.term);
    assert!(term(&b) > term(&a));
    assert!(election.leader().await.unwrap().is_none());
    client.shutdown().await;
    std::fs::remove_dir_all(&dir).unwrap();
}
