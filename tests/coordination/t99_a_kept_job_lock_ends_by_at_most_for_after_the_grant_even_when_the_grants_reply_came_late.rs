//! A job that finishes before its at-least time keeps its lock for what is left of it,
//! counted from when the grant's reply came, but never past its at-most time, counted from
//! the grant on the server: with `at_least_for == at_most_for` and the grant's reply a second
//! late, the lock is gone by `at_most_for` after the grant, not a second later.

use std::time::{Duration, Instant};

use relock_testkit::{Direction, Mode};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_job_lock_ends_by_at_most_for_after_the_grant_even_when_the_grants_reply_came_late()
{
    let server = server();
    let (proxy, c) = client_behind_proxy(&server, Duration::from_secs(5)).await;
    let most = Duration::from_secs(3);
    let job = c.job("t99", most).at_least_for(most);
    // The job's scripts in the server's cache: each call below is one round trip.
    let warm = c
        .job("t99-warm", most)
        .at_least_for(Duration::from_millis(200));
    assert_eq!(warm.run(async |_| ()).await.unwrap(), Some(()));
    // Each reply a second late: the run's local start is a second after the grant.
    proxy.set(Direction::Down, Mode::Delay(Duration::from_secs(1)));
    // Before the grant (the attempt is sent after this instant).
    let sent = Instant::now();
    let ran = job.run(async |_| ()).await.unwrap();
    assert_eq!(ran, Some(()));
    assert!(
        server.cmd(&["EXISTS", "t99"]).unwrap().as_int() == Some(1),
        "the lock is kept after the early finish"
    );
    wait_until(Duration::from_secs(10), "the kept lock to end", || async {
        server.cmd(&["EXISTS", "t99"]).unwrap().as_int() == Some(0)
    })
    .await
    .unwrap();
    let held = sent.elapsed();
    proxy.set(Direction::Down, Mode::Pass);
    c.shutdown().await;
    // Without the bound it ends a reply's delay later (4 s).
    assert!(
        held < most + Duration::from_millis(500),
        "the lock ended {held:?} after the attempt was sent; at_most_for is {most:?}"
    );
    assert_nothing_left(&server).await;
}
