//! A wrong password, a user without a grant and a database index out of range are the
//! caller's to fix, not transient trouble: each is its own variant with `source()`, never
//! `is_transient()`, and none prints the password or an I/O error's `Debug` dump. And an
//! `unlock()` of a hold that was lost while the server was unreachable says `LockLost`, as
//! documented, instead of the release's timeout. (Issue 22: all four were
//! `Error::Connection { cause: String }` with `is_transient() == true`, so a retry loop spun
//! for ever on a wrong password; the unlock was `Timeout { operation: "release" }`.)

use std::error::Error as _;
use std::time::Duration;

use relock::Error;
use relock_testkit::ServerOptions;
use relock_tests::*;

#[tokio::test]
async fn refused_credentials_a_missing_grant_and_a_bad_database_are_typed_and_not_transient() {
    let server = RedisServer::start_with(ServerOptions {
        password: Some("s3cret-admin".into()),
        ..Default::default()
    })
    .unwrap();
    let port = server.port();
    let connect = |url: String| async move {
        relock::Client::builder()
            .url(url)
            .connect_timeout(Duration::from_secs(2))
            .command_timeout(Duration::from_secs(1))
            .build()
            .await
    };

    // A wrong password.
    let r = connect(format!("redis://:wrong-pw@127.0.0.1:{port}")).await;
    let e = r.expect_err("a wrong password connects");
    assert!(matches!(e, Error::Authentication { .. }), "{e:?}");
    assert!(!e.is_transient() && e.source().is_some(), "{e:?}");
    let msg = e.to_string();
    assert!(
        !msg.contains("wrong-pw") && !format!("{e:?}").contains("wrong-pw"),
        "{msg}"
    );
    // No password where one is needed.
    let e = connect(format!("redis://127.0.0.1:{port}"))
        .await
        .expect_err("connects without a password");
    assert!(
        matches!(e, Error::Authentication { .. }) && !e.is_transient(),
        "{e:?}"
    );

    // A database index out of range.
    let e = connect(format!("redis://:s3cret-admin@127.0.0.1:{port}/99"))
        .await
        .expect_err("db 99 connects");
    assert!(
        matches!(e, Error::Configuration { .. }) && !e.is_transient(),
        "{e:?}"
    );
    assert!(!e.to_string().contains("s3cret-admin"), "{e}");

    // A user allowed to connect but not to run scripts on this key.
    server
        .cmd(&[
            "ACL",
            "SETUSER",
            "narrow",
            "on",
            ">narrow-pw",
            "~other:*",
            "&*",
            "+@all",
        ])
        .unwrap();
    let c = connect(format!("redis://narrow:narrow-pw@127.0.0.1:{port}"))
        .await
        .expect("connect as narrow");
    let e = c
        .lock("t82")
        .try_lock()
        .await
        .expect_err("a lock outside the user's keys");
    match &e {
        Error::Permission { key, source, .. } => {
            assert_eq!(key, "t82");
            assert!(source.to_string().contains("NOPERM"), "{source}");
        }
        other => panic!("{other:?}"),
    }
    assert!(!e.is_transient() && e.source().is_some());
    c.shutdown().await;
    // Keys granted but no channel (Redis 7 denies channels by default): a script's refused
    // PUBLISH is a permission error too, not a bare Redis error.
    server
        .cmd(&[
            "ACL",
            "SETUSER",
            "nochan",
            "on",
            ">nochan-pw",
            "~*",
            "resetchannels",
            "+@all",
        ])
        .unwrap();
    let c = connect(format!("redis://nochan:nochan-pw@127.0.0.1:{port}"))
        .await
        .expect("connect as nochan");
    let g = c
        .lock("t82:nochan")
        .try_lock()
        .await
        .unwrap()
        .expect("free");
    let r = g.unlock().await;
    assert!(
        matches!(&r, Err(Error::Permission { key, .. }) if key == "t82:nochan"),
        "{r:?}"
    );
    c.shutdown().await;

    // A refused connection reads as words, not an I/O error's Debug dump.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = free.local_addr().unwrap().port();
    drop(free);
    let e = connect(format!("redis://127.0.0.1:{closed}"))
        .await
        .expect_err("nothing listens");
    assert!(
        matches!(e, Error::Connection { .. }) && e.is_transient(),
        "{e:?}"
    );
    assert!(!e.to_string().contains("Os {"), "{e}");
    drop(server);

    // A hold lost while its server is unreachable: unlock says LockLost.
    let server = relock_tests::server();
    let c = client_with_lease(&server, Duration::from_millis(600)).await;
    let g = c.lock("t82:lost").lock().await.unwrap();
    server.pause().unwrap();
    bounded(Duration::from_secs(3), "the hold to be lost", g.lost()).await;
    let r = bounded(Duration::from_secs(5), "unlock", g.unlock()).await;
    server.resume().unwrap();
    assert!(
        matches!(&r, Err(Error::LockLost { name }) if name == "t82:lost"),
        "{r:?}"
    );
    c.shutdown().await;
}
