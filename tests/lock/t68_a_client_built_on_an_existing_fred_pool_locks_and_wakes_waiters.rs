//! A `Client` built on a fred pool the application already has: locks through it, wakes a
//! waiter (over the subscriber connection relock opens with the pool's configuration), and
//! leaves the pool open and usable after `shutdown()`.

use std::time::Duration;

use fred::interfaces::{ClientLike, KeysInterface};
use relock::fred;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_built_on_an_existing_fred_pool_locks_and_wakes_waiters() {
    let server = server();
    let config = fred::types::config::Config::from_url(&server.url()).unwrap();
    let pool = fred::types::Builder::from_config(config)
        .with_connection_config(|c| c.max_command_attempts = 1)
        .with_performance_config(|p| p.default_command_timeout = Duration::from_secs(1))
        .build_pool(2)
        .unwrap();
    pool.init().await.unwrap();
    let clients_before = server
        .cmd(&["CLIENT", "LIST"])
        .unwrap()
        .as_string()
        .unwrap()
        .lines()
        .count();

    let from_pool = relock::Client::builder()
        .command_timeout(Duration::from_secs(1))
        .build_with_pool(pool.clone())
        .await
        .expect("a client on the pool");
    // Exactly one new connection: its subscriber.
    let clients_after = server
        .cmd(&["CLIENT", "LIST"])
        .unwrap()
        .as_string()
        .unwrap()
        .lines()
        .count();
    assert_eq!(clients_after, clients_before + 1);
    assert!(
        format!("{from_pool:?}").contains(&server.addr()),
        "{from_pool:?}"
    );

    let other = client(&server).await;
    let held = other.lock("t68").lock().await.unwrap();
    assert!(from_pool.lock("t68").try_lock().await.unwrap().is_none());
    let g = assert_release_wakes(&from_pool, from_pool.lock("t68"), held).await;
    assert!(other.lock("t68").try_lock().await.unwrap().is_none());
    g.unlock().await.unwrap();

    from_pool.shutdown().await;
    other.shutdown().await;
    // The application's pool is still open and works.
    let _: () = pool.set("t68:after", 1, None, None, false).await.unwrap();
    let _: () = pool.del("t68:after").await.unwrap();
    pool.quit().await.unwrap();
    assert_nothing_left(&server).await;
}
