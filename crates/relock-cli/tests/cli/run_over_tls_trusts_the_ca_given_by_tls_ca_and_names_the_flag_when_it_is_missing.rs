//! `relock run --tls-ca FILE` (and `--tls-cert`/`--tls-key`) reaches a TLS server signed by a
//! private CA; without it the error names the flag to use, and an unreadable file is named.

use relock_testkit::{RedisServer, ServerOptions};

#[tokio::test]
async fn run_over_tls_trusts_the_ca_given_by_tls_ca_and_names_the_flag_when_it_is_missing() {
    let server = RedisServer::start_with(ServerOptions {
        tls: true,
        ..Default::default()
    })
    .expect("start a TLS redis-server");
    let url = server.tls_url().unwrap();
    let m = server.tls().unwrap().clone();
    let dir = std::env::temp_dir().join(format!("relock-cli-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (ca, cert, key) = (
        dir.join("ca.pem"),
        dir.join("client.pem"),
        dir.join("client.key"),
    );
    std::fs::write(&ca, &m.ca_cert_pem).unwrap();
    std::fs::write(&cert, &m.client_cert_pem).unwrap();
    std::fs::write(&key, &m.client_key_pem).unwrap();
    let run = |extra: &[&str]| {
        let args = [extra, &["tls-lock", "sh", "-c", "echo $RELOCK_TOKEN"]].concat();
        let (code, _, stderr) = crate::common::relock_run(&url, &args);
        (code, stderr)
    };
    let ca_s = ca.to_str().unwrap();
    assert_eq!(run(&["--tls-ca", ca_s]).0, Some(0));
    let with_cert = run(&[
        "--tls-ca",
        ca_s,
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]);
    assert_eq!(with_cert.0, Some(0), "{}", with_cert.1);

    let (code, stderr) = run(&[]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("--tls-ca FILE"), "{stderr}");
    let (code, stderr) = run(&["--tls-ca", "/nonexistent/ca.pem"]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("--tls-ca /nonexistent/ca.pem: cannot read it"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
