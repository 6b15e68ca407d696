//! TLS: against a redis-server listening with certificates the test kit generated, a lock is
//! taken, a waiter is woken by the release (pub/sub over TLS too), also with a client
//! certificate and with verification skipped; a client that trusts another CA fails to connect
//! with a connection error that names the certificate problem; TLS options on a plain URL are
//! rejected before anything is sent.

use std::time::Duration;

use relock::Error;
use relock_testkit::{RedisServer, ServerOptions, TlsMaterial};
use relock_tests::*;

fn tls_builder(url: &str) -> relock::ClientBuilder {
    relock::Client::builder()
        .url(url)
        .connect_timeout(Duration::from_secs(2))
        .command_timeout(Duration::from_secs(1))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_works_over_tls_and_a_wrong_ca_fails_naming_the_cause() {
    let server = RedisServer::start_with(ServerOptions {
        tls: true,
        ..ServerOptions::default()
    })
    .expect("start a TLS redis-server");
    let url = server.tls_url().unwrap();
    let m = server.tls().unwrap().clone();

    let trusting = tls_builder(&url)
        .tls_ca_pem(m.ca_cert_pem.clone())
        .build()
        .await
        .expect("connect over TLS");
    let with_cert = tls_builder(&url)
        .tls_ca_pem(m.ca_cert_pem.clone())
        .tls_client_cert_pem(m.client_cert_pem.clone(), m.client_key_pem.clone())
        .build()
        .await
        .expect("connect over TLS with a client certificate");
    let insecure = tls_builder(&url)
        .tls_insecure_skip_verify(true)
        .build()
        .await
        .expect("connect over TLS without verification");

    // Only TLS clients are connected: the plain port has seen none of them.
    let clients = server
        .cmd(&["CLIENT", "LIST"])
        .unwrap()
        .as_string()
        .unwrap();
    let tls_port = url.rsplit(':').next().unwrap();
    assert!(
        clients
            .lines()
            .filter(|l| l.contains(&format!("laddr=127.0.0.1:{tls_port}")))
            .count()
            >= 3,
        "{clients}"
    );

    let held = trusting.lock("t65").lock().await.unwrap();
    assert!(with_cert.lock("t65").try_lock().await.unwrap().is_none());
    // A waiter on another TLS client is woken by the release message, not by the lease.
    let g = assert_release_wakes(&with_cert, with_cert.lock("t65"), held).await;
    assert!(g.fencing_token() > 0);
    g.unlock().await.unwrap();
    let g = insecure.lock("t65").lock().await.unwrap();
    g.unlock().await.unwrap();

    // A client that trusts another CA: refused, and the error says why.
    let other = TlsMaterial::generate().unwrap();
    let e = tls_builder(&url)
        .tls_ca_pem(other.ca_cert_pem)
        .build()
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, Error::Connection { .. }), "{e:?}");
    assert!(
        text.contains("InvalidCertificate") && text.contains("tls_ca_pem"),
        "the error names the cause: {text}"
    );

    // TLS options on a plain URL, and a CA option with no certificate in it: rejected at once.
    let e = tls_builder(&server.url())
        .tls_ca_pem(m.ca_cert_pem.clone())
        .build()
        .await
        .unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { name: "tls", .. }),
        "{e:?}"
    );
    let e = tls_builder(&url)
        .tls_ca_pem("not a pem")
        .build()
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidArgument {
                name: "tls_ca_pem",
                ..
            }
        ),
        "{e:?}"
    );

    for c in [trusting, with_cert, insecure] {
        c.shutdown().await;
    }
    assert_nothing_left(&server).await;
}
