//! A guarded write in flight when `shutdown` begins is waited for, like an attempt or a
//! release: it completes (its script, and the script's body after NOSCRIPT) before the
//! connections close and before the hold is released, so it reports what it did instead of an
//! unknown outcome for a batch the closed connection never let run.

use std::time::Duration;

use relock::Commands;
use relock_testkit::{Direction, Mode};
use relock_tests::*;

/// How many NOSCRIPT errors the server has answered.
fn noscripts(server: &RedisServer) -> u64 {
    let info = server
        .cmd(&["INFO", "errorstats"])
        .unwrap()
        .as_string()
        .unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix("errorstat_NOSCRIPT:count="))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guarded_write_in_flight_when_shutdown_begins_completes_before_the_connections_close() {
    let server = server();
    let (proxy, c) = client_behind_proxy(&server, Duration::from_secs(3)).await;
    let guard = c.lock("t112").lock().await.unwrap();
    // The guarded script is not cached (the lock's own scripts are again): the write's
    // EVALSHA gets NOSCRIPT, then it sends the body. Each reply takes 300 ms to come back.
    server.script_flush().unwrap();
    let other = c.lock("t112-other").lock().await.unwrap();
    other.unlock().await.unwrap();
    let before = noscripts(&server);
    proxy.set(Direction::Down, Mode::Delay(Duration::from_millis(300)));
    let writing = tokio::spawn(async move {
        let r = guard
            .write(Commands::new().cmd("SET").key("{t112}:row").arg("paid"))
            .await;
        (r, guard)
    });
    // Once the EVALSHA has run on the server (its NOSCRIPT on its way back), shut down.
    wait_until(
        Duration::from_secs(5),
        "the write's first script call",
        || async { noscripts(&server) > before },
    )
    .await
    .unwrap();
    c.shutdown().await;
    let (r, guard) = bounded(Duration::from_secs(10), "the write", writing)
        .await
        .unwrap();
    assert!(r.is_ok(), "{r:?}");
    let row = server.cmd(&["GET", "{t112}:row"]).unwrap();
    assert_eq!(row.as_string().as_deref(), Some("paid"));
    drop(guard);
    proxy.set(Direction::Down, Mode::Pass);
    server.cmd(&["DEL", "{t112}:row"]).unwrap();
    assert_nothing_left(&server).await;
}
