//! With `--baseline-password-in-argv`, `relock-bench lock` behind a password runs the
//! redis-benchmark ceilings (giving it the password on its command line), and the password
//! still appears nowhere in relock's output, the JSON (`--json -`, on stdout) included.

use std::process::Command;

use relock_testkit::{RedisServer, ServerOptions};

const RELOCK: &str = env!("CARGO_BIN_EXE_relock-bench");
const PASSWORD: &str = "argv-S3cret-71c";

#[test]
fn bench_runs_redis_benchmark_behind_a_password_only_when_asked() {
    let server = RedisServer::start_with(ServerOptions {
        password: Some(PASSWORD.into()),
        ..ServerOptions::default()
    })
    .expect("start redis-server");
    let out = Command::new(RELOCK)
        .args(["lock", "--redis", &server.url_with_password()])
        .args(["--seconds", "1", "--tasks", "4", "--workers", "2"])
        .args(["--baseline-password-in-argv", "--json", "-"])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(!stdout.contains(PASSWORD) && !stderr.contains(PASSWORD));
    // stdout is the JSON alone; the text report went to stderr.
    let j: serde_json::Value = serde_json::from_str(&stdout).expect("stdout is JSON");
    assert!(stderr.contains("redis-benchmark acquire -c 4"), "{stderr}");
    assert!(stderr.contains("--baseline-password-in-argv"), "{stderr}");
    assert_eq!(j["baselines_skipped"], serde_json::Value::Null, "{j}");
    let b = &j["baselines"];
    assert!(b["acquire_scripts_per_s"].as_f64().unwrap() > 0.0, "{j}");
    assert!(
        b["pipelined_acquire_scripts_per_s"].as_f64().unwrap() > 0.0,
        "{j}"
    );
    assert!(b["ping_p50_ms"].as_f64().unwrap() > 0.0, "{j}");
    assert!(
        j["uncontended"]["ratio_to_ceiling"].as_f64().unwrap() > 0.0,
        "{j}"
    );
    assert!(
        j["contended"]["plain"]["p50_ratio_to_ping_p50"]
            .as_f64()
            .unwrap()
            > 0.0,
        "{j}"
    );
    assert_eq!(j["redis"], format!("redis://:***@{}", server.addr()), "{j}");
}
