//! `relock run --at-least D --no-wait NAME CMD` is a cron job that runs at most once per
//! occurrence across machines: after the command ends the lock stays taken until D after it
//! started, so a second run skips (exit 75, or 0 with `--conflict-exit-code 0`) without
//! running its command; then the lock frees itself. `--at-most` stops an overrunning command
//! as a lost lock (exit 76); `--at-most` alone is a usage error.

use std::time::{Duration, Instant};

use relock_testkit::{wait_until, RedisServer};

use crate::common::relock_run;

#[tokio::test]
async fn run_at_least_keeps_the_lock_after_the_command_so_a_later_run_of_the_occurrence_skips() {
    let server = RedisServer::start().expect("start redis-server");
    let url = server.url();
    let job = |extra: &[&str]| {
        let args = [
            &["--at-least", "1500ms", "--no-wait"],
            extra,
            &["cli-job", "sh", "-c", "echo ran"],
        ]
        .concat();
        relock_run(&url, &args)
    };
    let started = Instant::now();
    let (code, out, err) = job(&[]);
    assert_eq!((code, out.as_str()), (Some(0), "ran\n"), "{err}");
    let pttl = server.cmd(&["PTTL", "cli-job"]).unwrap().as_int().unwrap();
    assert!(pttl > 0 && pttl <= 1500, "{pttl}");

    // The same occurrence from another machine's cron: skipped, the command not run.
    let (code, out, err) = job(&["--conflict-exit-code", "0"]);
    assert_eq!((code, out.as_str()), (Some(0), ""), "{err}");
    let (code, out, err) = job(&[]);
    assert_eq!((code, out.as_str()), (Some(75), ""), "{err}");
    assert!(err.contains("held by"), "{err}");

    wait_until(
        Duration::from_secs(3),
        "the kept lock to expire",
        || async { server.cmd(&["EXISTS", "cli-job"]).unwrap().as_int() == Some(0) },
    )
    .await
    .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(1480));
    let (code, out, err) = job(&[]);
    assert_eq!((code, out.as_str()), (Some(0), "ran\n"), "{err}");

    // --at-most stops an overrunning run as a lost lock.
    let t = Instant::now();
    let (code, _, err) = relock_run(
        &url,
        &[
            "--at-least",
            "100ms",
            "--at-most",
            "300ms",
            "cli-job-long",
            "sleep",
            "5",
        ],
    );
    assert_eq!(code, Some(76), "{err}");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());

    let (code, _, err) = relock_run(&url, &["--at-most", "1s", "cli-job-x", "true"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--at-least"), "{err}");
}
