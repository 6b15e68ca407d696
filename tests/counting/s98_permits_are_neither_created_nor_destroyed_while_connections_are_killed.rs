//! Semaphore conservation under faults: two clients of six tasks each acquire and release one
//! of four permits over and over, while every command connection is killed (CLIENT KILL)
//! every 150 ms. Calls cut off with their connection are retried under their request ids, so
//! each acquire takes exactly one permit and each release gives back exactly one: at the end
//! all four are available, and no call failed.

use std::time::Duration;

use relock_tests::*;

use crate::{conservation_under_kills, GiveBack};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_are_neither_created_nor_destroyed_while_connections_are_killed() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    assert!(a.semaphore("s98").try_set_permits(4).await.unwrap());
    let take = |c: relock::Client| async move {
        let sem = c.semaphore("s98");
        Ok(sem
            .try_acquire_for(1, Duration::from_secs(3))
            .await?
            .map(|permit| Box::pin(permit.release()) as GiveBack))
    };
    let available = |c: relock::Client| async move { c.semaphore("s98").available().await };
    conservation_under_kills(&server, [a, b], "s98", &["s98"], take, available).await;
}
