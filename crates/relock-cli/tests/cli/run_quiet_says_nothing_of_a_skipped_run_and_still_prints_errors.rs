//! `relock run --quiet` (for cron, which mails any output): a run skipped because the lock is
//! held exits with the conflict code and prints nothing; without `--quiet` it says who holds
//! it; an error (no server there) is still printed with `--quiet`.

use relock_testkit::RedisServer;

use crate::common::relock_run;

#[tokio::test]
async fn run_quiet_says_nothing_of_a_skipped_run_and_still_prints_errors() {
    let server = RedisServer::start().expect("start redis-server");
    let url = server.url();
    let client = relock::Client::connect(url.clone()).await.unwrap();
    let held = client.lock("cli-quiet").lock().await.unwrap();

    let skip = ["--no-wait", "--conflict-exit-code", "0"];
    let (code, out, err) = relock_run(
        &url,
        &[&skip[..], &["--quiet", "cli-quiet", "true"]].concat(),
    );
    assert_eq!((code, out.as_str(), err.as_str()), (Some(0), "", ""));
    let (code, _, err) = relock_run(&url, &[&skip[..], &["-q", "cli-quiet", "true"]].concat());
    assert_eq!((code, err.as_str()), (Some(0), ""));
    // Without it, the conflict is said.
    let (code, _, err) = relock_run(&url, &[&skip[..], &["cli-quiet", "true"]].concat());
    assert_eq!(code, Some(0));
    assert!(err.contains("`cli-quiet` is held by someone else"), "{err}");

    // An error is not a conflict: printed, exit 1.
    let (code, _, err) = relock_run(
        "redis://127.0.0.1:1",
        &["--quiet", "--no-wait", "cli-quiet", "true"],
    );
    assert_eq!(code, Some(1));
    assert!(!err.is_empty());

    held.unlock().await.unwrap();
    client.shutdown().await;
}
