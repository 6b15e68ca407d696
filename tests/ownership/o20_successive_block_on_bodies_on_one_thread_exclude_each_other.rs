//! Outside any task (inside `block_on`), one thread is not one owner: a guard kept from one
//! `block_on` body excludes a `try_lock`, a `try_lock_for` and a `lock` in later bodies on
//! the same thread, and the lock is free again once that guard is released.

use std::time::{Duration, Instant};

use relock_tests::*;

use crate::support::hgetall;

#[test]
fn successive_block_on_bodies_on_one_thread_exclude_each_other() {
    let server = server();
    let server = &server;
    std::thread::scope(|s| {
        s.spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let c = rt.block_on(client(server));
            let lock = c.lock("o20");
            let first = rt.block_on(lock.lock()).unwrap();

            // A later body: try_lock is refused (no re-entry of the first body's hold).
            let second = rt.block_on(async {
                lock.try_lock()
                    .await
                    .unwrap()
                    .map(|g| (g.fencing_token(), g))
            });
            assert!(
                second.is_none(),
                "a later block_on body got the lock: token {:?} (first {})",
                second.as_ref().map(|s| s.0),
                first.fencing_token()
            );
            // A bounded wait gives up after its bound, and lock() keeps waiting.
            let t0 = Instant::now();
            let third = rt.block_on(async {
                lock.try_lock_for(Duration::from_millis(300))
                    .await
                    .unwrap()
                    .map(|g| g.fencing_token())
            });
            let waited = t0.elapsed();
            assert_eq!(third, None);
            assert!(
                waited >= Duration::from_millis(290) && waited < Duration::from_secs(2),
                "try_lock_for(300 ms) took {waited:?}"
            );
            let fourth = rt.block_on(async {
                tokio::time::timeout(Duration::from_millis(300), lock.lock())
                    .await
                    .map(|r| r.unwrap().fencing_token())
            });
            assert!(fourth.is_err(), "lock() in a later body got {fourth:?}");

            // On the server: one hold, counted once.
            let fields = hgetall(server, "o20");
            assert_eq!(fields.len(), 1, "{fields:?}");
            assert_eq!(fields[0].1, "1", "{fields:?}");
            assert_eq!(c.held_locks(), 1);

            // Released in a body at the end: free for the next body.
            rt.block_on(first.unlock()).unwrap();
            let after =
                rt.block_on(async { lock.try_lock().await.unwrap().map(|g| g.fencing_token()) });
            assert!(after.is_some(), "free after the release");
            rt.block_on(assert_nothing_left(server));
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p));
    });
}
