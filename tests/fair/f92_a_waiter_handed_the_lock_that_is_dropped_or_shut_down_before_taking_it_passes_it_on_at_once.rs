//! A waiter is handed the lock by a release, but its `lock()` future is not polled any more
//! (so it never takes the grant) and is then dropped; in a second round its client shuts down
//! instead. Either way the grant is given back by its leave of the line and passed on to the
//! next waiter at once, not held for the first lease (here the 60 s heartbeat deadline).

use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn a_waiter_handed_the_lock_that_is_dropped_or_shut_down_before_taking_it_passes_it_on_at_once(
) {
    let server = server();
    let heartbeat = Duration::from_secs(60);
    let a = fair_client(&server, heartbeat).await;
    let mut holder = a.fair_lock("f92").lock().await.unwrap();
    for shut_down in [false, true] {
        let b = fair_client(&server, heartbeat).await;
        let lock = b.fair_lock("f92");
        // Boxed, so that it can be kept alive unpolled and dropped at a chosen moment.
        let mut stalled = Box::pin(lock.lock());
        tokio::select! {
            r = &mut stalled => panic!("acquired too early: {:?}", r.map(|_| ())),
            _ = wait_until(Duration::from_secs(3), "in line", || async {
                fair_line(&server, "f92").len() == 1
            }) => {}
        }
        let stalled_field = fair_line(&server, "f92")[0].clone();
        let next_lock = a.fair_lock("f92");
        let next = spawn_in_line(&server, "f92", 2, async move {
            let g = next_lock.lock().await.unwrap();
            (Instant::now(), g)
        })
        .await;
        let held_token = holder.fencing_token();
        holder.unlock().await.unwrap();
        // The release handed the lock to the stalled waiter.
        assert_eq!(lock_fields(&server), vec![stalled_field.clone()]);

        let gone = Instant::now();
        if shut_down {
            bounded(Duration::from_secs(5), "shutdown", b.shutdown()).await;
        }
        drop(stalled);
        let (at, g) = bounded(Duration::from_secs(5), "the next waiter", next)
            .await
            .unwrap();
        let waited = at - gone;
        assert!(
            waited < Duration::from_secs(1),
            "the next waiter got the lock {waited:?} after the first left (shut down: {shut_down})"
        );
        assert_eq!(lock_fields(&server), vec![g.owner().to_string()]);
        assert!(g.fencing_token() > held_token);
        let record = fair_grant(&server, "f92");
        assert!(
            record.as_ref().is_none_or(|(f, _)| *f != stalled_field),
            "the given-back grant's record: {record:?}"
        );
        b.shutdown().await;
        holder = g;
    }
    holder.unlock().await.unwrap();
    a.shutdown().await;
    assert_nothing_left(&server).await;
}

/// The fields of the f92 lock hash (its holder).
fn lock_fields(server: &RedisServer) -> Vec<String> {
    match server.cmd(&["HKEYS", "f92"]).unwrap() {
        relock_testkit::Value::Array(Some(items)) => {
            items.iter().filter_map(|v| v.as_string()).collect()
        }
        _ => Vec::new(),
    }
}
