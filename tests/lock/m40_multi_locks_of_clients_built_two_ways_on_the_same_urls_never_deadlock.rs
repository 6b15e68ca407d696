//! `MultiLock` orders its parts by `DistributedLock::resource()` (the server's URL without
//! credentials, "as the client was given it"), and asks: "Give the same server the same URL
//! everywhere". A client built with `ClientBuilder::build_with_pool` is never given a URL: it
//! describes the pool's configuration instead (`redis://127.0.0.1:<port>`), while `build` on
//! the very URL the pool was made from keeps the (redacted) credentials
//! (`redis://:***@127.0.0.1:<port>`). Two services given the same two password URLs, one of
//! which uses its own fred pool for one server, order the same two parts differently, and two
//! `lock()`s deadlock: here each takes its first part and waits for the other's, and with
//! `try_lock_for` both give up though nobody else holds anything.

use std::time::Duration;

use fred::interfaces::ClientLike;
use relock::fred;
use relock::{DistributedLock, MultiLock};
use relock_testkit::{RedisServer, ServerOptions};

fn password_server() -> RedisServer {
    RedisServer::start_with(ServerOptions {
        password: Some("m40secret".into()),
        ..ServerOptions::default()
    })
    .expect("start redis-server")
}

async fn built(url: String) -> relock::Client {
    relock::Client::builder()
        .url(url)
        .command_timeout(Duration::from_secs(1))
        .build()
        .await
        .expect("connect")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_locks_of_clients_built_two_ways_on_the_same_urls_never_deadlock() {
    let (s1, s2) = (password_server(), password_server());
    let (lo, hi) = if s1.port() < s2.port() {
        (&s1, &s2)
    } else {
        (&s2, &s1)
    };
    // Service X: both clients built on the URLs.
    let (x_lo, x_hi) = (
        built(lo.url_with_password()).await,
        built(hi.url_with_password()).await,
    );
    // Service Y: the same URLs; for `hi` it uses its own fred pool made from that URL.
    let y_lo = built(lo.url_with_password()).await;
    let config = fred::types::config::Config::from_url(&hi.url_with_password()).unwrap();
    let pool = fred::types::Builder::from_config(config)
        .with_connection_config(|c| c.max_command_attempts = 1)
        .with_performance_config(|p| p.default_command_timeout = Duration::from_secs(1))
        .build_pool(1)
        .unwrap();
    pool.init().await.unwrap();
    let y_hi = relock::Client::builder()
        .command_timeout(Duration::from_secs(1))
        .build_with_pool(pool.clone())
        .await
        .expect("a client on the pool");

    let x = MultiLock::new()
        .with(x_lo.lock("m40"))
        .with(x_hi.lock("m40"));
    let y = MultiLock::new()
        .with(y_lo.lock("m40"))
        .with(y_hi.lock("m40"));
    let resources = [
        x_lo.lock("m40").resource(),
        x_hi.lock("m40").resource(),
        y_lo.lock("m40").resource(),
        y_hi.lock("m40").resource(),
    ];
    let (got_x, got_y) = tokio::join!(
        x.try_lock_for(Duration::from_secs(3)),
        y.try_lock_for(Duration::from_secs(3))
    );
    let (got_x, got_y) = (got_x.unwrap(), got_y.unwrap());
    let (took_x, took_y) = (got_x.is_some(), got_y.is_some());
    drop((got_x, got_y));
    assert!(
        took_x || took_y,
        "two multi-locks over the same two locks, nothing else holding them, both gave up after \
         3 s (with lock() they wait for ever): each took its first part and waited for the \
         other's. Resources (x lo, x hi, y lo, y hi): {resources:?}"
    );
    for c in [&x_lo, &x_hi, &y_lo, &y_hi] {
        c.shutdown().await;
    }
    let _ = pool.quit().await;
}
