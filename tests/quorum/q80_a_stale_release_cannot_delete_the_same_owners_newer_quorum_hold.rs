//! One owner's quorum hold runs out (its fixed lease ends while its guard lives), the same
//! owner takes a fresh hold, and only then is the old guard dropped. Its release must not
//! touch the newer hold on any node: another client still cannot acquire, the new guard is
//! not lost, and the new hold's field is still on a majority.

use std::time::Duration;

use relock::Owner;
use relock_tests::*;

/// The fields of the lock hash `key` on `s` (empty if the key is missing).
fn fields(s: &RedisServer, key: &str) -> Vec<String> {
    match s.cmd(&["HKEYS", key]).unwrap() {
        relock_testkit::Value::Array(Some(items)) => {
            items.iter().filter_map(|v| v.as_string()).collect()
        }
        _ => Vec::new(),
    }
}

#[tokio::test]
async fn a_stale_release_cannot_delete_the_same_owners_newer_quorum_hold() {
    let m = masters(5);
    let a = quorum_client(&m, Duration::from_secs(30), Duration::ZERO).await;
    let b = quorum_client(&m, Duration::from_secs(30), Duration::ZERO).await;
    let name = "q80";
    let owner = Owner::new();
    owner
        .scope(async {
            // The first hold: a short fixed lease that runs out while its guard lives.
            let old = bounded(
                Duration::from_secs(2),
                "first lock",
                a.lock(name).with_lease(Duration::from_millis(700)).lock(),
            )
            .await
            .unwrap();
            // Granted by a majority; node 0's vote may land a moment after the quorum returned.
            wait_until(Duration::from_secs(1), "node 0 to have the hold", || async {
                fields(&m[0], name).len() == 1
            })
            .await
            .unwrap();
            let old_field = fields(&m[0], name);
            assert_eq!(old_field.len(), 1, "{old_field:?}");
            wait_until(
                Duration::from_secs(3),
                "the first hold to expire on every node",
                || async {
                    m.servers()
                        .iter()
                        .all(|s| s.cmd(&["EXISTS", name]).unwrap().as_int() == Some(0))
                },
            )
            .await
            .unwrap();
            assert!(old.is_lost(), "its lease ran out");

            // The same owner takes the lock again: a fresh hold (its old one is gone).
            let new = bounded(
                Duration::from_secs(2),
                "second lock",
                a.lock(name).with_lease(Duration::from_secs(15)).lock(),
            )
            .await
            .unwrap();
            assert!(!new.is_lost());
            wait_until(Duration::from_secs(1), "node 0 to have the new hold", || async {
                fields(&m[0], name).len() == 1
            })
            .await
            .unwrap();
            let new_field = fields(&m[0], name);
            assert_eq!(new_field.len(), 1, "{new_field:?}");

            // Now the stale guard goes; wait until its release has run on every node (the
            // only script calls: fixed leases are not renewed, and `b` is idle).
            for s in m.servers() {
                s.reset_stats().unwrap();
            }
            drop(old);
            wait_until(
                Duration::from_secs(3),
                "the stale guard's release to run on every node",
                || async {
                    m.servers()
                        .iter()
                        .all(|s| s.command_calls("evalsha").unwrap() >= 1)
                },
            )
            .await
            .unwrap();

            let on: usize = m
                .servers()
                .iter()
                .filter(|s| fields(s, name) == new_field)
                .count();
            let other = b.lock(name).try_lock().await.unwrap();
            assert!(
                other.is_none(),
                "another client acquired while the newer hold's guard lives (its field is on {on} of 5 nodes)"
            );
            assert!(!new.is_lost(), "the newer guard must not be lost");
            assert!(on >= 3, "the newer hold's field is on {on} of 5 nodes");
            assert!(a.lock(name).is_locked().await.unwrap());
            assert_ne!(
                old_field, new_field,
                "the fresh hold must have a field of its own"
            );
            new.unlock().await.unwrap();
        })
        .await;
    a.shutdown().await;
    b.shutdown().await;
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
}
