//! `relock run --permits N` (as `consul lock -n N`) runs at most N commands at once on the
//! permit semaphore NAME, each with its permit's id in RELOCK_PERMIT_ID, and gives the permit
//! back when the command ends; a run that cannot get in says why: the permits available, or
//! for a lock, who holds it and when its lease ends.

use std::process::{Command, Stdio};
use std::time::Duration;

use relock_testkit::{wait_until, RedisServer};

use crate::common::RELOCK;

#[tokio::test]
async fn run_with_permits_runs_at_most_n_commands_and_a_conflict_names_the_holder() {
    let server = RedisServer::start().expect("start redis-server");
    let url = server.url();
    let run = |args: &[&str]| crate::common::relock_run(&url, args);
    let holders: Vec<_> = (0..2)
        .map(|_| {
            Command::new(RELOCK)
                .args([
                    "run",
                    "--url",
                    &url,
                    "--permits",
                    "2",
                    "slots",
                    "sleep",
                    "2",
                ])
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let client = relock::Client::connect(url.clone()).await.unwrap();
    let sem = client.permit_expirable_semaphore("slots");
    wait_until(Duration::from_secs(5), "both permits taken", || async {
        sem.acquired().await.unwrap() == 2
    })
    .await
    .unwrap();
    let (code, _, stderr) = run(&["--permits", "2", "--no-wait", "slots", "true"]);
    assert_eq!(code, Some(75), "{stderr}");
    assert!(stderr.contains("0 of its permits available"), "{stderr}");
    for mut h in holders {
        assert_eq!(h.wait().unwrap().code(), Some(0));
    }
    assert_eq!(sem.available().await.unwrap(), 2, "both given back");
    let (code, stdout, stderr) = run(&[
        "--permits",
        "2",
        "slots",
        "sh",
        "-c",
        "echo $RELOCK_PERMIT_ID",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout.trim().len(), 32, "a permit id: {stdout:?}");

    // No permits is no semaphore: a usage error, not a run that waits forever.
    let (code, _, stderr) = run(&["--permits", "0", "slots", "true"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--permits"), "{stderr}");

    // A lock held by this client: the conflict names its field and its lease.
    let guard = client.lock("held").lock().await.unwrap();
    let (code, _, stderr) = run(&["--no-wait", "held", "true"]);
    assert_eq!(code, Some(75));
    let field = guard.owner().to_string();
    assert!(
        stderr.contains(&format!("held by {field} (relock)"))
            && stderr.contains("its lease ends in"),
        "{stderr}"
    );
    guard.unlock().await.unwrap();
    client.shutdown().await;
}
