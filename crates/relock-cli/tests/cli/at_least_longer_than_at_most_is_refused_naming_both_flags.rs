//! `--at-least` longer than `--at-most` (given, or its 1 h default) is refused before anything
//! is locked (before connecting), naming both flags and saying which one was the default; the
//! command does not run.

use relock_testkit::RedisServer;

use crate::common::relock_run;

#[tokio::test]
async fn at_least_longer_than_at_most_is_refused_naming_both_flags() {
    let server = RedisServer::start().expect("start redis-server");
    let url = server.url();
    let (code, out, err) = relock_run(&url, &["--at-least", "2h", "al", "echo", "ran"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("--at-least 2h is longer than --at-most 1h (its default)"),
        "{err}"
    );
    assert!(!out.contains("ran"), "{out}");
    let (code, out, err) = relock_run(
        &url,
        &["--at-least", "5s", "--at-most", "1s", "al", "echo", "ran"],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("--at-least 5s is longer than --at-most 1s:")
            && err.contains("lower --at-least or raise --at-most"),
        "{err}"
    );
    assert!(!out.contains("ran"), "{out}");
    assert_eq!(server.dbsize().unwrap(), 0, "nothing was locked");
    // Named before connecting: also when no server answers.
    let (code, _, err) = relock_run(
        "redis://127.0.0.1:1",
        &["--at-least", "2h", "al", "echo", "ran"],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("--at-least 2h is longer than --at-most 1h"),
        "{err}"
    );
}
