//! `redis://` to a port that speaks TLS only, and `rediss://` to a plain port: each fails
//! within the connect timeout with a connection error whose message says the server may (not)
//! speak TLS and names the other scheme, never a bare "connection reset" or "timed out".

use std::time::{Duration, Instant};

use relock::Error;
use relock_testkit::{RedisServer, ServerOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_whose_scheme_does_not_match_the_servers_tls_gets_a_hint_naming_the_other_scheme() {
    let server = RedisServer::start_with(ServerOptions {
        tls: true,
        ..ServerOptions::default()
    })
    .expect("start a TLS redis-server");
    let tls_url = server.tls_url().unwrap();
    let ca = server.tls().unwrap().ca_cert_pem.clone();
    let connect = Duration::from_secs(2);

    // Plain text to the TLS port.
    let plain_to_tls = tls_url.replacen("rediss://", "redis://", 1);
    let t = Instant::now();
    let e = relock::Client::builder()
        .url(&plain_to_tls)
        .connect_timeout(connect)
        .command_timeout(Duration::from_secs(1))
        .build()
        .await
        .expect_err("a plain client cannot talk to a TLS port");
    assert!(
        t.elapsed() < connect + Duration::from_secs(2),
        "{:?}",
        t.elapsed()
    );
    match &e {
        Error::Connection { cause, .. } => assert!(
            cause.contains("may speak TLS only (use a rediss:// URL)"),
            "no TLS hint: {e}"
        ),
        other => panic!("expected a connection error, got {other:?}"),
    }

    // TLS to the plain port.
    let tls_to_plain = format!("rediss://127.0.0.1:{}", server.port());
    let t = Instant::now();
    let e = relock::Client::builder()
        .url(&tls_to_plain)
        .tls_ca_pem(ca)
        .connect_timeout(connect)
        .command_timeout(Duration::from_secs(1))
        .build()
        .await
        .expect_err("a TLS client cannot talk to a plain port");
    assert!(
        t.elapsed() < connect + Duration::from_secs(2),
        "{:?}",
        t.elapsed()
    );
    match &e {
        Error::Connection { cause, .. } => assert!(
            cause.contains("may not speak TLS on this port (use a redis:// URL)"),
            "no TLS hint: {e}"
        ),
        other => panic!("expected a connection error, got {other:?}"),
    }
    assert!(e.is_transient());
}
