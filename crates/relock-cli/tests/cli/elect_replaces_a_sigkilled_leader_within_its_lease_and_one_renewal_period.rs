//! A `relock elect` leader killed with SIGKILL (no resignation, no release) is replaced when
//! its leadership's lease ends: the standby `relock elect`, waiting in line, runs its command
//! within the watchdog lease plus one renewal period (a third of it) of the kill, with a
//! higher term.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use relock_testkit::{wait_until, RedisServer};

use crate::common::RELOCK;

#[tokio::test]
async fn elect_replaces_a_sigkilled_leader_within_its_lease_and_one_renewal_period() {
    let server = RedisServer::start().expect("start redis-server");
    let url = server.url();
    let lease = Duration::from_secs(1);
    let dir = std::env::temp_dir().join(format!("relock-elect-kill-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pidfile = dir.join("cmd.pid");
    let elect = |value: &str, script: String| {
        Command::new(RELOCK)
            .args([
                "elect",
                "--url",
                &url,
                "--watchdog-lease",
                "1s",
                "--value",
                value,
            ])
            .args(["cli-elect-kill", "sh", "-c", &script])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // The leader's command records its pid (to be cleaned up: SIGKILL of relock leaves it).
    let mut leader = elect(
        "first",
        format!("echo $$ > {}; exec sleep 30", pidfile.display()),
    );
    let client = relock::Client::connect(url.clone()).await.unwrap();
    let election = client.election("cli-elect-kill");
    wait_until(
        Duration::from_secs(5),
        "the first process to lead",
        || async { election.leader().await.unwrap().is_some() },
    )
    .await
    .unwrap();
    let first = election.leader().await.unwrap().unwrap();
    let standby = elect("second", "echo $RELOCK_TERM".into());
    wait_until(Duration::from_secs(5), "the standby in line", || async {
        let s = client.fair_lock("cli-elect-kill").status().await.unwrap();
        s.queue.len() == 1
    })
    .await
    .unwrap();

    let killed = Instant::now();
    leader.kill().unwrap(); // SIGKILL
    leader.wait().unwrap();
    let b = standby.wait_with_output().unwrap();
    let took = killed.elapsed();
    assert_eq!(
        b.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&b.stderr)
    );
    let term: u64 = String::from_utf8_lossy(&b.stdout).trim().parse().unwrap();
    assert!(term > first.term);
    // Within the lease and one renewal period (plus the standby's start-up and wake-up).
    assert!(
        took < lease + lease / 3 + Duration::from_millis(700),
        "{took:?}"
    );
    if let Ok(pid) = std::fs::read_to_string(&pidfile) {
        let _ = Command::new("kill").arg(pid.trim()).status();
    }
    client.shutdown().await;
    std::fs::remove_dir_all(&dir).unwrap();
}
