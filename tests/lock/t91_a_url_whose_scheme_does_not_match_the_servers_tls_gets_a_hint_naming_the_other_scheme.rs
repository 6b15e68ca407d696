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

    // Plain text to the TLS port, then TLS to the plain port.
    let plain_to_tls = tls_url.replacen("rediss://", "redis://", 1);
    let cause = refused(&plain_to_tls, None, connect).await;
    assert!(
        cause.contains("may speak TLS only (use a rediss:// URL)"),
        "no TLS hint: {cause}"
    );
    let tls_to_plain = format!("rediss://127.0.0.1:{}", server.port());
    let cause = refused(&tls_to_plain, Some(ca), connect).await;
    assert!(
        cause.contains("may not speak TLS on this port (use a redis:// URL)"),
        "no TLS hint: {cause}"
    );
}

/// Builds a client on `url` (trusting `ca` if given), which must fail within the connect
/// timeout with a transient `Error::Connection`; its cause.
async fn refused(url: &str, ca: Option<String>, connect: Duration) -> String {
    let mut builder = relock::Client::builder()
        .url(url)
        .connect_timeout(connect)
        .command_timeout(Duration::from_secs(1));
    if let Some(ca) = ca {
        builder = builder.tls_ca_pem(ca);
    }
    let t = Instant::now();
    let e = builder
        .build()
        .await
        .expect_err("the scheme does not match the port");
    assert!(
        t.elapsed() < connect + Duration::from_secs(2),
        "{:?}",
        t.elapsed()
    );
    assert!(e.is_transient(), "{e:?}");
    match e {
        Error::Connection { cause, .. } => cause,
        other => panic!("expected a connection error, got {other:?}"),
    }
}
