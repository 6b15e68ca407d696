//! A fixed lease that runs out under a live guard nobody asks `lost()` of is reported (or not)
//! the same whether the hold is watched or not: the watch's wait for the hold's end marks
//! nothing. (Found by review: it awaited `lost()`, which marks the hold lost at its deadline,
//! so only watched holds were warned about and counted.)

use std::time::Duration;

use relock_tests::*;

#[tokio::test]
async fn a_fixed_lease_that_runs_out_unobserved_is_reported_the_same_with_or_without_the_hold_watch(
) {
    let server = server();
    let mut warned = Vec::new();
    for watch in [false, true] {
        let captured = capture_traces(tracing::Level::WARN, "");
        let c = relock::Client::builder()
            .url(server.url())
            .watch_holds(watch)
            .command_timeout(Duration::from_secs(1))
            .build()
            .await
            .unwrap();
        let name = format!("t8x:fixed:{watch}");
        let g = c
            .lock(&name)
            .with_lease(Duration::from_millis(100))
            .lock()
            .await
            .unwrap();
        // Nobody awaits lost(); the guard just lives past its lease.
        let end = g.valid_until() + Duration::from_millis(200);
        wait_until(Duration::from_secs(2), "past the lease", || async {
            std::time::Instant::now() >= end
        })
        .await
        .unwrap();
        let logs = captured.text();
        warned.push(logs.contains("lock lost while held"));
        drop(g);
        c.shutdown().await;
    }
    println!("warned without / with the watch: {warned:?}");
    assert_eq!(
        warned[0], warned[1],
        "the same hold is reported lost or not depending on watch_holds"
    );
}
