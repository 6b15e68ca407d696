//! `relock run --at-least D --at-most M` killed with SIGKILL mid-run (no finish, no release):
//! the job's lock ends with its at-most lease, so the next occurrence runs within M of the
//! start, not after the watchdog lease or never.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use relock_testkit::{wait_until, RedisServer};

use crate::common::{relock_run, RELOCK};

#[tokio::test]
async fn run_at_most_bounds_the_lock_of_a_sigkilled_job() {
    let server = RedisServer::start().expect("start redis-server");
    let url = server.url();
    let dir = std::env::temp_dir().join(format!("relock-job-kill-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pidfile = dir.join("cmd.pid");
    let started = Instant::now();
    let mut job = Command::new(RELOCK)
        .args([
            "run",
            "--url",
            &url,
            "--at-least",
            "200ms",
            "--at-most",
            "1s",
        ])
        .args(["cli-job-kill", "sh", "-c"])
        .arg(format!("echo $$ > {}; exec sleep 30", pidfile.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until(Duration::from_secs(5), "the job to run", || async {
        pidfile.exists() && server.cmd(&["EXISTS", "cli-job-kill"]).unwrap().as_int() == Some(1)
    })
    .await
    .unwrap();
    job.kill().unwrap(); // SIGKILL: nothing finishes the run
    job.wait().unwrap();
    let (code, _, err) = relock_run(&url, &["--no-wait", "cli-job-kill", "true"]);
    assert_eq!(
        code,
        Some(75),
        "the killed run still holds its occurrence: {err}"
    );
    wait_until(
        Duration::from_secs(3),
        "the killed run's lock to end",
        || async { server.cmd(&["EXISTS", "cli-job-kill"]).unwrap().as_int() == Some(0) },
    )
    .await
    .unwrap();
    // Ended by its at-most lease (1 s from the grant), well before the watchdog's 30 s.
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "{:?}",
        started.elapsed()
    );
    let (code, _, err) = relock_run(&url, &["--no-wait", "cli-job-kill", "true"]);
    assert_eq!(code, Some(0), "{err}");
    if let Ok(pid) = std::fs::read_to_string(&pidfile) {
        let _ = Command::new("kill").arg(pid.trim()).status();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
