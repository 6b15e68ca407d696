//! `--watchdog-lease` (found by review): with `--at-least` it is a usage error (a job's run
//! has the fixed lease `--at-most`, so the flag would be ignored); too short a value is
//! refused naming the flag and its minimum, which is higher with `--quorum`.

use relock_testkit::{RedisMasters, RedisServer};

use crate::common::relock_run;

#[tokio::test]
async fn watchdog_lease_too_short_or_with_at_least_is_refused_naming_the_flag() {
    let server = RedisServer::start().expect("start redis-server");
    let url = server.url();
    let (code, _, err) = relock_run(
        &url,
        &["--at-least", "1s", "--watchdog-lease", "1s", "wl", "true"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--watchdog-lease") && err.contains("--at-least"),
        "{err}"
    );

    let (code, _, err) = relock_run(&url, &["--watchdog-lease", "10ms", "wl", "true"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("--watchdog-lease 10ms: must be at least 30ms"),
        "{err}"
    );
    let (code, _, err) = relock_run(&url, &["--watchdog-lease", "1s", "wl", "true"]);
    assert_eq!(code, Some(0), "{err}");

    let m = RedisMasters::start(3).expect("start redis-servers");
    let out = std::process::Command::new(crate::common::RELOCK)
        .args([
            "run",
            "--quorum",
            &m.urls().join(","),
            "--watchdog-lease",
            "100ms",
        ])
        .args(["wlq", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("must be at least 150ms with --quorum"),
        "{err}"
    );
}
