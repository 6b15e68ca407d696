//! `relock demo` works on any URL relock takes: a Redis Cluster (`redis-cluster://h1:p1,h2:p2`,
//! which its own counter client used to reject) and a password-protected server, whose password
//! never appears in its output.

use std::process::Command;

use relock_testkit::{RedisCluster, RedisServer, ServerOptions};

const RELOCK: &str = env!("CARGO_BIN_EXE_relock");
const PASSWORD: &str = "demo-S3cret-5d1";

fn demo(url: &str) -> (Option<i32>, String) {
    let out = Command::new(RELOCK)
        .args(["demo", "--url", url, "--seconds", "1", "--workers", "2"])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

#[tokio::test]
async fn demo_runs_on_a_cluster_and_behind_a_password() {
    let cluster = RedisCluster::start().expect("start a cluster");
    let (code, text) = demo(&cluster.url());
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("OK: mutual exclusion held"), "{text}");

    let server = RedisServer::start_with(ServerOptions {
        password: Some(PASSWORD.into()),
        ..ServerOptions::default()
    })
    .expect("start redis-server");
    let (code, text) = demo(&server.url_with_password());
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("OK: mutual exclusion held"), "{text}");
    assert!(!text.contains(PASSWORD), "{text}");
}
