//! Permit semaphore conservation under faults: two clients of six tasks each acquire and
//! release one of four permits (with the watchdog) over and over, while every command
//! connection is killed (CLIENT KILL) every 150 ms. An acquire cut off with its connection is
//! retried under its permit id, and a release names its id: at the end all four permits are
//! available, and no call failed.

use std::time::Duration;

use relock_tests::*;

use crate::{conservation_under_kills, GiveBack};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_with_ids_are_neither_created_nor_destroyed_while_connections_are_killed() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let sem = a.permit_expirable_semaphore("p92");
    assert!(sem.try_set_permits(4).await.unwrap());
    let take = |c: relock::Client| async move {
        let sem = c.permit_expirable_semaphore("p92");
        let permit = sem.try_acquire_for(Duration::from_secs(3), None).await?;
        Ok(permit.map(|p| Box::pin(p.release()) as GiveBack))
    };
    let available =
        |c: relock::Client| async move { c.permit_expirable_semaphore("p92").available().await };
    let own = ["p92", "{p92}:permits"];
    conservation_under_kills(&server, [a, b], "p92", &own, take, available).await;
}
