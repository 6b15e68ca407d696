//! No herd: with 20 waiters parked in 2 clients, each release wakes only the next in line, so
//! the acquire script runs about once per handoff (read from `INFO commandstats`). The plain
//! lock's figure on the same setup is printed beside it.

use std::time::Duration;

use relock_tests::*;

/// Runs 20 parked waiters (10 per client) through the lock once each, after the holder lets
/// go; returns acquire-script calls per handoff.
async fn acquire_calls_per_handoff(server: &RedisServer, fair: bool) -> f64 {
    // A long heartbeat deadline: no heartbeat call falls inside the measurement.
    let clients = [
        fair_client(server, Duration::from_secs(60)).await,
        fair_client(server, Duration::from_secs(60)).await,
    ];
    let lock = |c: &relock::Client| {
        if fair {
            c.fair_lock("f50")
        } else {
            c.lock("f50")
        }
    };
    // Warm-up, so that no NOSCRIPT fallback is counted.
    lock_and_unlock(&lock(&clients[0])).await;
    let holder = lock(&clients[0]).lock().await.unwrap();
    let mut waiters = Vec::new();
    for i in 0..20 {
        let l = lock(&clients[i % 2]);
        waiters.push(tokio::spawn(async move {
            l.lock().await.unwrap().unlock().await.unwrap();
        }));
    }
    wait_until(Duration::from_secs(5), "20 parked waiters", || async {
        clients[0].parked_waiters() + clients[1].parked_waiters() == 20
    })
    .await
    .unwrap();
    if fair {
        assert_eq!(fair_line(server, "f50").len(), 20);
    }
    server.reset_stats().unwrap();
    holder.unlock().await.unwrap();
    for w in waiters {
        bounded(Duration::from_secs(10), "every waiter served", w)
            .await
            .unwrap();
    }
    let scripts = server.command_calls("evalsha").unwrap() + server.command_calls("eval").unwrap();
    // 21 releases (the holder's and each waiter's); the rest are acquire attempts.
    let acquires = scripts - 21;
    for c in &clients {
        c.shutdown().await;
    }
    acquires as f64 / 20.0
}

#[tokio::test]
async fn a_release_wakes_only_the_first_waiter() {
    let server = server();
    let fair = acquire_calls_per_handoff(&server, true).await;
    let plain = acquire_calls_per_handoff(&server, false).await;
    println!("acquire-script calls per handoff, 20 parked waiters in 2 clients: fair {fair:.2}, plain {plain:.2}");
    assert!(fair <= 1.1, "fair lock: {fair} acquire calls per handoff");
    assert!(plain >= fair, "plain {plain} vs fair {fair}");
    assert_nothing_left(&server).await;
}
