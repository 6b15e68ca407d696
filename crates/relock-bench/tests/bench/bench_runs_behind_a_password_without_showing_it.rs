//! `relock-bench lock` against a password-protected server: relock's figures are measured (they
//! used to fail with NOAUTH), the redis-benchmark baselines are skipped with a note (it would
//! take the password on its command line), and the password appears nowhere in the output.

use std::process::Command;

use relock_testkit::{RedisServer, ServerOptions};

const RELOCK: &str = env!("CARGO_BIN_EXE_relock-bench");
const PASSWORD: &str = "bench-S3cret-9e4";

#[tokio::test]
async fn bench_runs_behind_a_password_without_showing_it() {
    let server = RedisServer::start_with(ServerOptions {
        password: Some(PASSWORD.into()),
        ..ServerOptions::default()
    })
    .expect("start redis-server");
    let out = Command::new(RELOCK)
        .args(["lock", "--redis", &server.url_with_password()])
        .args(["--seconds", "1", "--tasks", "4", "--workers", "2"])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("relock lock+unlock"), "{text}");
    assert!(text.contains("baselines skipped"), "{text}");
    assert!(!text.contains(PASSWORD), "{text}");
}
