//! 3 clients × 10 waiters join the line one after another while the lock is held; they get
//! the lock in exactly that order (0 inversions), and nothing is left afterwards.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use relock_tests::*;

#[tokio::test]
async fn waiters_from_three_clients_acquire_in_arrival_order() {
    let server = server();
    let clients = [
        client(&server).await,
        client(&server).await,
        client(&server).await,
    ];
    let holder = clients[0].fair_lock("f10").lock().await.unwrap();

    let order = Arc::new(Mutex::new(Vec::new()));
    let mut waiters = Vec::new();
    for i in 0..30 {
        let lock = clients[i % 3].fair_lock("f10");
        let order = order.clone();
        waiters.push(
            spawn_in_line(&server, "f10", i + 1, async move {
                let g = lock.lock().await.unwrap();
                order.lock().unwrap().push(i);
                g.unlock().await.unwrap();
            })
            .await,
        );
    }
    assert_eq!(fair_line(&server, "f10").len(), 30);
    holder.unlock().await.unwrap();
    for w in waiters {
        bounded(Duration::from_secs(10), "every waiter served", w)
            .await
            .unwrap();
    }
    let order = order.lock().unwrap().clone();
    let inversions = order.windows(2).filter(|w| w[0] > w[1]).count();
    assert_eq!(
        order,
        (0..30).collect::<Vec<_>>(),
        "{inversions} inversions"
    );
    for c in &clients {
        assert_eq!(c.queued_waiters(), 0);
        assert_no_waiters(&server, c, "f10").await;
    }
    assert_nothing_left(&server).await;
}
