//! Connecting to a port where nothing listens, or to a paused server, fails within the connect
//! timeout with `Error::Connection` naming the URL.

use std::time::{Duration, Instant};

use relock_tests::*;

/// Connects with a 500 ms connect timeout; asserts it fails within 1.5 s with a
/// `Connection` error naming `url`, and returns the error's cause.
async fn connect_fails_fast(url: &str) -> String {
    let start = Instant::now();
    let r = relock::Client::builder()
        .url(url)
        .connect_timeout(Duration::from_millis(500))
        .build()
        .await;
    let took = start.elapsed();
    assert!(took < Duration::from_millis(1500), "took {took:?}");
    match r {
        Err(e @ relock::Error::Connection { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(url), "{msg}");
            let relock::Error::Connection { url: u, cause } = e else {
                unreachable!()
            };
            assert_eq!(u, url);
            assert!(!cause.is_empty());
            cause
        }
        other => panic!("expected Connection error, got {other:?}"),
    }
}

#[tokio::test]
async fn unreachable_redis_fails_fast_naming_the_address() {
    let server = server();
    let url = server.url();
    server.kill().unwrap();
    connect_fails_fast(&url).await;

    let paused = relock_tests::server();
    paused.pause().unwrap();
    connect_fails_fast(&paused.url()).await;
    paused.resume().unwrap();
}
