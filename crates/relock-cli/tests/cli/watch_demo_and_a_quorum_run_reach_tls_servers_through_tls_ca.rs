//! `--tls-ca` (and the client certificate options) work on every command that connects, not
//! only `run` on one server: `run --quorum` and `status --quorum` over three TLS masters
//! trusting a bundle of their CAs, `watch` and `demo`.

use std::process::Command;

use relock_testkit::{RedisServer, ServerOptions};

use crate::common::{Watch, RELOCK};

#[tokio::test]
async fn watch_demo_and_a_quorum_run_reach_tls_servers_through_tls_ca() {
    let servers: Vec<RedisServer> = (0..3)
        .map(|_| {
            RedisServer::start_with(ServerOptions {
                tls: true,
                ..Default::default()
            })
            .expect("start a TLS redis-server")
        })
        .collect();
    let dir = std::env::temp_dir().join(format!("relock-cli-tls-all-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Each test server has a CA of its own: one file with the three, as a CA bundle.
    let bundle = dir.join("bundle.pem");
    let pems: Vec<String> = servers
        .iter()
        .map(|s| s.tls().unwrap().ca_cert_pem.clone())
        .collect();
    std::fs::write(&bundle, pems.concat()).unwrap();
    let bundle = bundle.to_str().unwrap();
    let urls: Vec<String> = servers.iter().map(|s| s.tls_url().unwrap()).collect();

    let quorum = |extra: &[&str]| {
        Command::new(RELOCK)
            .args([
                "run",
                "--quorum",
                &urls.join(","),
                "--restart-quarantine",
                "0s",
            ])
            .args(extra)
            .args(["tls-quorum", "sh", "-c", "echo $RELOCK_TOKEN"])
            .output()
            .unwrap()
    };
    let out = quorum(&["--tls-ca", bundle]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(token > 0);
    for s in &servers {
        assert_eq!(s.cmd(&["EXISTS", "tls-quorum"]).unwrap().as_int(), Some(0));
    }
    let out = quorum(&[]);
    assert_eq!(out.status.code(), Some(1));
    // status --quorum reads every master over TLS too: free (1), not unknown (2).
    let out = Command::new(RELOCK)
        .args(["status", "--quorum", &urls.join(","), "--tls-ca", bundle])
        .args(["--json", "tls-quorum"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let read: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(read[0]["verdict"], "free", "{stdout}");
    assert_eq!(read[0]["unreachable"], 0, "{stdout}");

    // watch over TLS sees a `relock run` over TLS take the lock.
    let url = &urls[0];
    let mut watch = Watch::start(
        url,
        "tls-watched",
        &[
            "--tls-ca",
            bundle,
            "--enable-notifications",
            "--count",
            "1",
            "--for",
            "20s",
        ],
    );
    assert_eq!(watch.next()["event"], "free");
    let (code, _, stderr) =
        crate::common::relock_run(url, &["--tls-ca", bundle, "tls-watched", "true"]);
    assert_eq!(code, Some(0), "{stderr}");
    // A hold this short may be seen as taken and released in one read ("passed").
    let first = watch.next();
    assert!(
        first["event"] == "acquired" || first["event"] == "passed",
        "{first}"
    );
    let (code, stderr) = watch.wait();
    assert_eq!(code, Some(0), "{stderr}");

    let out = Command::new(RELOCK)
        .args(["demo", "--url", url, "--tls-ca", bundle, "--seconds", "1"])
        .args(["--workers", "2", "--name", "tls-demo"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("OK: mutual exclusion held"), "{stdout}");
    assert!(stdout.contains("most holders at once    1\n"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}
