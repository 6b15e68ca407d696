//! `relock run --quorum … --name WHO` is a usage error (exit 2, naming both flags): a quorum's
//! holds carry no client name, and the flag would be silently ignored.

use relock_testkit::RedisMasters;

use crate::common::RELOCK;

#[tokio::test]
async fn name_with_quorum_is_refused_as_a_usage_error() {
    let m = RedisMasters::start(3).expect("start redis-servers");
    let out = std::process::Command::new(RELOCK)
        .args(["run", "--quorum", &m.urls().join(","), "--name", "bob"])
        .args(["nq", "echo", "ran"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--name") && err.contains("--quorum"), "{err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("ran"));
}
