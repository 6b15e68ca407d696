//! Shell habits: `relock run NAME CMD ARGS` runs CMD with its own options (as `flock FILE CMD`),
//! with or without `--`; `--wait 0.4` is 0.4 seconds (as `flock -w`); a duration it cannot read
//! is refused with the forms it takes.

use std::time::{Duration, Instant};

use relock_testkit::RedisServer;

#[tokio::test]
async fn run_takes_the_command_after_its_name_and_a_bare_number_as_seconds() {
    let server = RedisServer::start().expect("start redis-server");
    let url = server.url();
    let run = |args: &[&str]| crate::common::relock_run(&url, args);
    // No `--`: the command's own options (`-c`, `-n`) are the command's, not relock's.
    let (code, stdout, stderr) = run(&["cli-habits", "sh", "-c", "echo hi; exit 3"]);
    assert_eq!((code, stdout.as_str()), (Some(3), "hi\n"), "{stderr}");
    let (code, stdout, _) = run(&["cli-habits", "echo", "-n", "x"]);
    assert_eq!((code, stdout.as_str()), (Some(0), "x"));
    // With `--`, as before.
    let (code, stdout, _) = run(&["cli-habits", "--", "echo", "--wait"]);
    assert_eq!((code, stdout.as_str()), (Some(0), "--wait\n"));

    // A misspelled option of relock before CMD stays a usage error naming the right one.
    let (code, stdout, stderr) = run(&["cli-habits", "--no-wiat", "echo", "ran"]);
    assert_eq!((code, stdout.as_str()), (Some(2), ""), "{stderr}");
    assert!(stderr.contains("'--no-wait'"), "{stderr}");

    // `--wait 0.4` while the lock is held: 0.4 s, then the conflict code.
    let client = relock::Client::connect(url.clone()).await.unwrap();
    let held = client.lock("cli-habits").lock().await.unwrap();
    let started = Instant::now();
    let (code, _, stderr) = run(&["--wait", "0.4", "cli-habits", "true"]);
    let took = started.elapsed();
    assert_eq!(code, Some(75), "{stderr}");
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_secs(5),
        "{took:?}"
    );
    held.unlock().await.unwrap();

    // A duration it cannot read: a usage error (2) that names the forms it takes.
    let (code, _, stderr) = run(&["--wait", "soon", "cli-habits", "true"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("write seconds (2, 0.5)"), "{stderr}");
    client.shutdown().await;
}
