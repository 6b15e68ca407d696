//! The fair heartbeat deadline is the fair lock's own client setting. `build` refuses one under
//! 100 ms or over 30 years, naming `fair_heartbeat` and what to pass; of two calls the last
//! one counts; and the deadline a waiter of the client gets in the line on the server is the
//! one set (5 s on a client that sets none).

use std::time::Duration;

use relock_tests::*;

const SAYS: &str = "use at least 100 ms (waiters refresh every deadline/5) and at most 30 years";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fair_heartbeat_is_checked_when_the_client_is_built_and_is_the_deadline_its_waiters_get(
) {
    let s = server();
    let b = || relock::Client::builder().url(s.url());
    let thirty_years = Duration::from_secs(60 * 60 * 24 * 365 * 30);
    for bad in [
        Duration::ZERO,
        Duration::from_millis(99),
        thirty_years + Duration::from_secs(1),
    ] {
        assert_invalid_saying(
            b().fair_heartbeat(bad).build().await,
            "fair_heartbeat",
            SAYS,
        );
    }
    // The last call counts, both ways.
    assert_invalid_saying(
        b().fair_heartbeat(Duration::from_secs(7))
            .fair_heartbeat(Duration::from_millis(50))
            .build()
            .await,
        "fair_heartbeat",
        SAYS,
    );
    for edge in [Duration::from_millis(100), thirty_years] {
        let c = b().fair_heartbeat(edge).build().await.unwrap();
        c.shutdown().await;
    }
    let seven = b()
        .fair_heartbeat(Duration::from_millis(50))
        .fair_heartbeat(Duration::from_secs(7))
        .build()
        .await
        .unwrap();
    let plain = client(&s).await;

    // One holder, then a waiter of each client in line: each deadline is its client's.
    let name = "f104";
    let holder = plain.fair_lock(name).lock().await.unwrap();
    let lock = seven.fair_lock(name);
    let w7 = spawn_in_line(&s, name, 1, async move { lock.lock().await.unwrap() }).await;
    let lock = plain.fair_lock(name);
    let w5 = spawn_in_line(&s, name, 2, async move { lock.lock().await.unwrap() }).await;
    let line = fair_line(&s, name);
    let now = server_ms(&s);
    let left: Vec<i64> = line
        .iter()
        .map(|f| {
            let (_, deadline) = fair_heartbeats(&s, name)
                .into_iter()
                .find(|(g, _)| g == f)
                .unwrap();
            deadline - now
        })
        .collect();
    println!("deadlines left in line order: {left:?} ms");
    // Set by the joins above or a heartbeat since: within the last two seconds even on a busy
    // machine, so more than the default could have given, and never more than was set.
    assert!(
        (5_001..=7_000).contains(&left[0]),
        "the 7 s client's waiter: {} ms left",
        left[0]
    );
    assert!(
        (3_001..=5_000).contains(&left[1]),
        "the default client's waiter: {} ms left",
        left[1]
    );

    holder.unlock().await.unwrap();
    let g = bounded(Duration::from_secs(5), "the first waiter", w7)
        .await
        .unwrap();
    g.unlock().await.unwrap();
    let g = bounded(Duration::from_secs(5), "the second waiter", w5)
        .await
        .unwrap();
    g.unlock().await.unwrap();
    seven.shutdown().await;
    plain.shutdown().await;
    assert_nothing_left(&s).await;
}
