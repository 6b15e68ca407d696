//! Connecting to a port where nothing listens, or to a paused server, fails within the connect
//! timeout with `Error::Connection` naming the URL.

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn unreachable_redis_fails_fast_naming_the_address() {
    let server = server();
    let url = server.url();
    server.kill().unwrap();
    let start = Instant::now();
    let r = relock::Client::builder()
        .url(&url)
        .connect_timeout(Duration::from_millis(500))
        .build()
        .await;
    assert!(
        start.elapsed() < Duration::from_millis(1500),
        "took {:?}",
        start.elapsed()
    );
    match r {
        Err(relock::Error::Connection { url: u, cause }) => {
            assert_eq!(u, url);
            assert!(!cause.is_empty());
        }
        other => panic!("expected Connection error, got {other:?}"),
    }

    let paused = relock_tests::server();
    paused.pause().unwrap();
    let start = Instant::now();
    let r = relock::Client::builder()
        .url(paused.url())
        .connect_timeout(Duration::from_millis(500))
        .build()
        .await;
    assert!(
        start.elapsed() < Duration::from_millis(1500),
        "took {:?}",
        start.elapsed()
    );
    let msg = r.unwrap_err().to_string();
    assert!(msg.contains(&paused.url()), "{msg}");
    paused.resume().unwrap();
}
