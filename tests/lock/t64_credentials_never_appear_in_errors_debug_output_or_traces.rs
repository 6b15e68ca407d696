//! Credentials never leave the client: with a password-protected server and an ACL user, every
//! error (wrong password, unreachable node, bad URL, quorum connect failure), every `Debug`
//! (builders, clients, locks, guards) and every tracing event captured at TRACE level show the
//! URL with `***` instead of the password.

use std::time::Duration;

use relock::Error;
use relock_testkit::{RedisServer, ServerOptions};
use relock_tests::*;

const PASSWORD: &str = "pw-S3cret-41f7";
const ACL_PASSWORD: &str = "acl-S3cret-9a2c";
const SENTINEL_PASSWORD: &str = "sent-S3cret-77b1";

fn assert_no_secret(what: &str, text: &str) {
    for secret in [PASSWORD, ACL_PASSWORD, SENTINEL_PASSWORD] {
        assert!(!text.contains(secret), "{what} shows a secret: {text}");
    }
}

fn builder(url: String) -> relock::ClientBuilder {
    relock::Client::builder()
        .url(url)
        .connect_timeout(Duration::from_millis(800))
        .command_timeout(Duration::from_millis(800))
}

#[tokio::test]
async fn credentials_never_appear_in_errors_debug_output_or_traces() {
    // Everything this test's runtime (one thread) logs, at every level of every crate.
    let captured = capture_traces(tracing::Level::TRACE, "");

    let server = RedisServer::start_with(ServerOptions {
        password: Some(PASSWORD.into()),
        ..ServerOptions::default()
    })
    .expect("start redis-server");
    server
        .cmd(&[
            "ACL",
            "SETUSER",
            "relock-app",
            "on",
            &format!(">{ACL_PASSWORD}"),
            "~*",
            "&*",
            "+@all",
        ])
        .unwrap();
    let port = server.port();
    let mut shown: Vec<(String, String)> = Vec::new();

    // The default user with a password, and an ACL user: lock, inspect, release.
    for url in [
        server.url_with_password(),
        format!("redis://relock-app:{ACL_PASSWORD}@127.0.0.1:{port}"),
    ] {
        let b = builder(url.clone());
        shown.push(("ClientBuilder Debug".into(), format!("{b:?}")));
        let client = b.build().await.expect("connect with credentials");
        let lock = client.lock("t64");
        let guard = lock.lock().await.unwrap();
        shown.push(("Client Debug".into(), format!("{client:?}")));
        shown.push(("Lock Debug".into(), format!("{lock:?}")));
        shown.push(("LockGuard Debug".into(), format!("{guard:?}")));
        assert!(
            format!("{client:?}").contains(":***@127.0.0.1"),
            "{client:?}"
        );
        // The guard shows the hold, not the client.
        let g = format!("{guard:?}");
        assert!(
            g.contains("t64") && g.contains("token") && !g.contains("Client"),
            "{g}"
        );
        assert!(
            g.len() < 400,
            "a guard's Debug stays small: {} bytes",
            g.len()
        );
        guard.unlock().await.unwrap();
        client.shutdown().await;
        // After shutdown every call fails with a typed error.
        let e = lock.try_lock().await.unwrap_err();
        shown.push(("error after shutdown".into(), format!("{e} {e:?}")));
    }

    // A wrong password: an authentication error that names the server, without the password.
    let wrong = format!("redis://relock-app:{SENTINEL_PASSWORD}@127.0.0.1:{port}");
    let e = builder(wrong).build().await.unwrap_err();
    assert!(
        matches!(&e, Error::Authentication { url, .. } if url.contains("relock-app:***@")),
        "{e:?}"
    );
    shown.push(("wrong password".into(), format!("{e} {e:?}")));

    // Nobody listening: the same.
    let dead = relock_testkit::RedisServer::start().unwrap();
    let dead_port = dead.port();
    drop(dead);
    let e = builder(format!("redis://:{PASSWORD}@127.0.0.1:{dead_port}"))
        .build()
        .await
        .unwrap_err();
    assert!(
        matches!(&e, Error::Connection { url, .. } if url.contains(":***@")),
        "{e:?}"
    );
    shown.push(("unreachable".into(), format!("{e} {e:?}")));

    // Bad URLs are rejected before anything is sent, without echoing the password.
    for bad in [
        format!("foo://:{PASSWORD}@127.0.0.1:{port}"),
        format!("redis://:{PASSWORD}@a:1,b:2"),
        format!("redis-sentinel://:{PASSWORD}@127.0.0.1:1?sentinelPassword={SENTINEL_PASSWORD}"),
    ] {
        let e = builder(bad).build().await.unwrap_err();
        assert!(
            matches!(e, Error::InvalidArgument { name: "url", .. }),
            "{e:?}"
        );
        shown.push(("bad url".into(), format!("{e} {e:?}")));
    }

    // A sentinel user name with an `@` ahead of the sentinel password in the query (found by
    // review: the password was shown).
    let sentinel_url = format!(
        "redis-sentinel://127.0.0.1:1?sentinelServiceName=m&sentinelUsername=ops@corp&sentinelPassword={SENTINEL_PASSWORD}"
    );
    shown.push(("sentinel URL".into(), relock::redacted_url(&sentinel_url)));
    shown.push((
        "sentinel ClientBuilder Debug".into(),
        format!("{:?}", builder(sentinel_url)),
    ));

    // The quorum client: its builder, and a connect that fails on every node.
    let qb = relock::QuorumClient::builder()
        .urls([
            format!("redis://:{PASSWORD}@127.0.0.1:{dead_port}"),
            format!("redis://relock-app:{ACL_PASSWORD}@127.0.0.1:2"),
            format!("redis://:{SENTINEL_PASSWORD}@127.0.0.1:1"),
        ])
        .connect_timeout(Duration::from_millis(500));
    shown.push(("QuorumClientBuilder Debug".into(), format!("{qb:?}")));
    let e = qb.build().await.unwrap_err();
    assert!(matches!(e, Error::Connection { .. }), "{e:?}");
    shown.push(("quorum connect".into(), format!("{e} {e:?}")));

    for (what, text) in &shown {
        assert_no_secret(what, text);
    }
    let logs = captured.text();
    assert!(
        logs.contains("relock client connected"),
        "the capture works: {logs}"
    );
    assert_no_secret("tracing output", &logs);
    assert_nothing_left(&server).await;
}
