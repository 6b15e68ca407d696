//! A `unix:///path` URL reaches a redis-server on its unix socket: lock, contend, wake, release;
//! a unix URL without a path is rejected naming the expected form. With credentials
//! (`unix://user:password@/path`, `unix://:password@/path`) it authenticates as that user, and a
//! wrong password, or one written without its colon, is `Authentication`, never shown.

use std::error::Error as _;

use relock::Error;
use relock_testkit::{RedisServer, ServerOptions};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_works_over_a_unix_socket() {
    let dir = std::env::temp_dir().join(format!("relock-t66-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("redis.sock");
    let server = RedisServer::start_with(ServerOptions {
        extra_args: vec![
            "--unixsocket".into(),
            socket.display().to_string(),
            "--unixsocketperm".into(),
            "700".into(),
        ],
        ..ServerOptions::default()
    })
    .expect("start redis-server with a unix socket");
    let url = format!("unix://{}", socket.display());
    let a = relock::Client::connect(url.clone())
        .await
        .expect("connect over the socket");
    let b = relock::Client::connect(url).await.unwrap();
    let held = a.lock("t66").lock().await.unwrap();
    assert!(b.lock("t66").try_lock().await.unwrap().is_none());
    let g = assert_release_wakes(&b, b.lock("t66"), held).await;
    g.unlock().await.unwrap();
    let e = relock::Client::connect("unix://").await.unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument { name: "url", reason } if reason.contains("unix:///path")),
        "{e:?}"
    );
    a.shutdown().await;
    b.shutdown().await;
    assert_nothing_left(&server).await;
    drop(server);

    // A server that requires a password, and an ACL user with its own.
    let socket = dir.join("redis-auth.sock");
    let server = RedisServer::start_with(ServerOptions {
        extra_args: vec![
            "--unixsocket".into(),
            socket.display().to_string(),
            "--unixsocketperm".into(),
            "700".into(),
        ],
        password: Some("t66-admin-pw".into()),
        acl_user: Some(("t66app".into(), "t66-app-pw".into())),
        ..ServerOptions::default()
    })
    .expect("start redis-server with a password and a unix socket");
    let path = socket.display().to_string();
    let user = relock::Client::connect(format!("unix://t66app:t66-app-pw@{path}"))
        .await
        .expect("connect over the socket as the ACL user");
    let default = relock::Client::connect(format!("redis+unix://:t66-admin-pw@{path}"))
        .await
        .expect("connect over the socket with the default user's password");
    let held = user.lock("t66").lock().await.unwrap();
    assert!(default.lock("t66").try_lock().await.unwrap().is_none());
    let g = assert_release_wakes(&default, default.lock("t66"), held).await;
    g.unlock().await.unwrap();
    // The ACL user's connections are its own.
    let list = server
        .cmd(&["CLIENT", "LIST"])
        .unwrap()
        .as_string()
        .unwrap();
    assert!(
        list.contains("user=t66app"),
        "no connection as t66app: {list}"
    );
    let e = relock::Client::builder()
        .url(format!("unix://t66app:t66-wrong-pw@{path}"))
        .connect_timeout(std::time::Duration::from_secs(2))
        .build()
        .await
        .expect_err("a wrong password connects");
    assert!(
        matches!(e, Error::Authentication { .. }) && !e.is_transient() && e.source().is_some(),
        "{e:?}"
    );
    assert!(
        !e.to_string().contains("t66-wrong-pw") && !format!("{e:?}").contains("t66-wrong-pw"),
        "{e}"
    );
    // A lone userinfo is a user name, as in every URL: no password is sent, and the one
    // written there is never shown.
    let e = relock::Client::builder()
        .url(format!("unix://t66-admin-pw@{path}"))
        .connect_timeout(std::time::Duration::from_secs(2))
        .build()
        .await
        .expect_err("a lone userinfo authenticates");
    assert!(matches!(e, Error::Authentication { .. }), "{e:?}");
    assert!(
        !e.to_string().contains("t66-admin-pw") && !format!("{e:?}").contains("t66-admin-pw"),
        "{e}"
    );
    user.shutdown().await;
    default.shutdown().await;
    assert_nothing_left(&server).await;
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}
