//! `relock status --quorum` reads a quorum lock on each master: held (exit 0) when one owner
//! field is on a majority, free (exit 1) when none can be, unknown (exit 2) when too many
//! masters do not answer. The masters that did not answer are named.

use std::process::Command;

use relock_testkit::RedisMasters;
use serde_json::Value;

const RELOCK: &str = env!("CARGO_BIN_EXE_relock");

fn status(urls: &str) -> (Option<i32>, Value, String) {
    let out = Command::new(RELOCK)
        .args([
            "status",
            "--json",
            "--node-timeout",
            "300ms",
            "--quorum",
            urls,
            "cli-q",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let json: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    (out.status.code(), json[0].clone(), stdout)
}

#[tokio::test]
async fn status_on_a_quorum_shows_each_master_and_the_majoritys_verdict() {
    let m = RedisMasters::start(3).expect("start 3 masters");
    let urls = m.urls().join(",");
    let quorum = relock::QuorumClient::builder()
        .urls(m.urls())
        .restart_quarantine(std::time::Duration::ZERO)
        .build()
        .await
        .unwrap();
    let guard = quorum.lock("cli-q").lock().await.unwrap();

    // Held on all three.
    let (code, s, text) = status(&urls);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(s["verdict"], "held", "{text}");
    assert_eq!(s["holder"], guard.owner(), "{text}");
    assert_eq!(
        (s["held_on"].as_u64(), s["majority"].as_u64()),
        (Some(3), Some(2)),
        "{text}"
    );
    for n in s["nodes"].as_array().unwrap() {
        assert_eq!(n["status"]["holders"][0]["field"], guard.owner(), "{text}");
        assert_eq!(n["status"]["holders"][0]["layout"], "relock", "{text}");
    }

    // One master stopped: still held on a majority, and the silent one is named.
    m[2].pause().unwrap();
    let (code, s, text) = status(&urls);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(
        (s["held_on"].as_u64(), s["unreachable"].as_u64()),
        (Some(2), Some(1)),
        "{text}"
    );
    assert!(s["nodes"][2]["status"].is_null(), "{text}");
    let err = s["nodes"][2]["error"].as_str().unwrap_or_default();
    assert!(
        err.contains(&m[2].port().to_string()),
        "the silent master is named: {text}"
    );
    m[2].resume().unwrap();

    // Released: free everywhere, once each master has had the release (unlock returns when a
    // majority answered).
    guard.unlock().await.unwrap();
    relock_testkit::wait_until(
        std::time::Duration::from_secs(5),
        "the release on every master",
        || async {
            m.servers().iter().all(|s| {
                s.cmd(&["EXISTS", "cli-q"])
                    .is_ok_and(|v| v.as_int() == Some(0))
            })
        },
    )
    .await
    .unwrap();
    let (code, s, text) = status(&urls);
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(s["verdict"], "free", "{text}");
    assert_eq!(s["held_on"].as_u64(), Some(0), "{text}");

    // Two of three silent: free on one master cannot tell the rest.
    m[0].pause().unwrap();
    m[1].pause().unwrap();
    let (code, s, text) = status(&urls);
    m[0].resume().unwrap();
    m[1].resume().unwrap();
    assert_eq!(code, Some(2), "{text}");
    assert_eq!(s["verdict"], "unknown", "{text}");
    assert_eq!(s["unreachable"].as_u64(), Some(2), "{text}");
    // One server listed twice would vote twice: refused, as by `relock run --quorum`.
    let twice = format!("{},{},{}", m.urls()[0], m.urls()[1], m.urls()[0]);
    let out = Command::new(RELOCK)
        .args(["status", "--quorum", &twice, "cli-q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("twice"));
    quorum.shutdown().await;
}
