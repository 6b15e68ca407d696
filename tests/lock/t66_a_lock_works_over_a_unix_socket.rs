//! A `unix:///path` URL reaches a redis-server on its unix socket: lock, contend, wake, release;
//! a unix URL without a path is rejected naming the expected form.

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
    let _ = std::fs::remove_dir_all(dir);
}
