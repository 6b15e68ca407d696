//! `Lock::queue_len` and `Lock::queue_position` read the fair line, where each waiter's heartbeat
//! deadline and first lease sit beside its ticket in one sorted set: the length counts waiters
//! (not members), and a client's place is the number of waiters ahead of its first waiter.

use std::time::Duration;

use relock_tests::*;

#[tokio::test]
async fn the_lines_length_and_a_waiters_place_count_waiters_only() {
    let server = server();
    let heartbeat = Duration::from_secs(5);
    let (h, a, b) = (
        fair_client(&server, heartbeat).await,
        fair_client(&server, heartbeat).await,
        fair_client(&server, heartbeat).await,
    );
    let names = h.fair_lock("f140").key_names().unwrap();
    assert_eq!(names.queue.as_deref(), Some("relock_fair_line:{f140}"));
    assert_eq!(names.grant.as_deref(), Some("relock_fair_grant:{f140}"));
    assert_eq!(
        names.fair_channel.as_deref(),
        Some("relock_fair_channel:{f140}")
    );
    let plain = h.lock("f140-plain").key_names().unwrap();
    assert_eq!(
        (plain.queue, plain.grant, plain.fair_channel),
        (None, None, None)
    );
    let held = h.fair_lock("f140").lock().await.unwrap();
    assert_eq!(h.fair_lock("f140").queue_len().await.unwrap(), 0);
    assert_eq!(a.fair_lock("f140").queue_position().await.unwrap(), None);

    // a, b, then a again: three waiters, each with a first lease (watchdog holds), so the line
    // holds nine members.
    let lock = a.fair_lock("f140");
    let a1 = spawn_in_line(&server, "f140", 1, async move { lock.lock().await }).await;
    let lock = b.fair_lock("f140");
    let b1 = spawn_in_line(&server, "f140", 2, async move { lock.lock().await }).await;
    let lock = a.fair_lock("f140");
    let a2 = spawn_in_line(&server, "f140", 3, async move { lock.lock().await }).await;
    let members = server
        .cmd(&["ZCARD", "relock_fair_line:{f140}"])
        .unwrap()
        .as_int()
        .unwrap();
    assert_eq!(members, 9, "ticket, deadline and first lease per waiter");

    assert_eq!(h.fair_lock("f140").queue_len().await.unwrap(), 3);
    assert_eq!(a.fair_lock("f140").queue_position().await.unwrap(), Some(0));
    assert_eq!(b.fair_lock("f140").queue_position().await.unwrap(), Some(1));
    assert_eq!(h.fair_lock("f140").queue_position().await.unwrap(), None);

    // a's first waiter is handed the lock: b is first now, a's second waiter behind it.
    held.unlock().await.unwrap();
    let g = bounded(Duration::from_secs(5), "a's first waiter", a1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(h.fair_lock("f140").queue_len().await.unwrap(), 2);
    assert_eq!(b.fair_lock("f140").queue_position().await.unwrap(), Some(0));
    assert_eq!(a.fair_lock("f140").queue_position().await.unwrap(), Some(1));

    g.unlock().await.unwrap();
    let g = bounded(Duration::from_secs(5), "b", b1)
        .await
        .unwrap()
        .unwrap();
    g.unlock().await.unwrap();
    let g = bounded(Duration::from_secs(5), "a's second waiter", a2)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(h.fair_lock("f140").queue_len().await.unwrap(), 0);
    g.unlock().await.unwrap();
    for c in [&h, &a, &b] {
        c.shutdown().await;
    }
    assert_nothing_left(&server).await;
}
