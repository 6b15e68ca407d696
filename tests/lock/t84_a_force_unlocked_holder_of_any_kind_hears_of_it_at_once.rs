//! A holder of any lock kind (each of `relock_tests::kinds::KINDS` that is one) learns of a force-unlock, or of any
//! deletion of its hold announced on the lock's channel (Redisson's `forceUnlock`: `DEL` then
//! `PUBLISH … 0`), within a round trip or two: its `lost()` fires, not at the watchdog's next
//! renewal (here 10 s away). Also when the deletion comes right after the acquisition, before
//! the holder listens. (Issue 22: a force-unlocked `relock run` kept running its command for
//! 8 s, while a second one had already taken the lock.)

use std::time::{Duration, Instant};

use relock_tests::kinds::KINDS;
use relock_tests::*;

/// Far below the watchdog's renewal period (10 s): only the channel can have told it.
const PROMPT: Duration = Duration::from_secs(2);

/// Waits (bounded) until the hold's watch listens on `channel`.
async fn listening(server: &RedisServer, channel: &str) {
    wait_until(Duration::from_secs(2), "the holder to listen", || async {
        server.pubsub_numsub(channel).unwrap() == 1
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_force_unlocked_holder_of_any_kind_hears_of_it_at_once() {
    let server = server();
    let holder = client(&server).await;
    let other = client(&server).await;
    for kind in KINDS {
        let name = format!("t84:{}", kind.name);
        let mine = (kind.make)(&holder, &name);
        let (Some(lock), Some(ch)) = (mine.as_lock(), mine.hold_channel()) else {
            continue;
        };
        let theirs = (kind.make)(&other, &name).as_lock().unwrap();
        let kind = kind.name;
        // Held a while (the holder listens on the lock's channel), then force-unlocked by
        // another client.
        let g = lock.lock().await.unwrap();
        listening(&server, &ch).await;
        let t0 = Instant::now();
        assert!(theirs.force_unlock().await.unwrap());
        bounded(PROMPT, "lost() after a force-unlock", g.lost()).await;
        println!("{kind}: lost() {:?} after force_unlock", t0.elapsed());
        assert!(matches!(
            g.unlock().await,
            Err(relock::Error::LockLost { .. })
        ));

        // Force-unlocked at once after the acquisition, before the holder listens.
        let g = lock.lock().await.unwrap();
        assert!(theirs.force_unlock().await.unwrap());
        bounded(PROMPT, "lost() after an early force-unlock", g.lost()).await;
        drop(g);

        // Deleted and announced by hand, as Redisson's forceUnlock does.
        let g = lock.lock().await.unwrap();
        listening(&server, &ch).await;
        server.cmd(&["DEL", &name]).unwrap();
        server.cmd(&["PUBLISH", &ch, "0"]).unwrap();
        // (A read hold's own timeout key, which a by-hand delete leaves to its lease.)
        for k in server.keys().unwrap() {
            if k.contains("rwlock_timeout") {
                server.cmd(&["DEL", &k]).unwrap();
            }
        }
        bounded(PROMPT, "lost() after DEL and PUBLISH", g.lost()).await;
        drop(g);

        // A hold released normally is not reported lost, and its watch goes with it.
        let g = lock.lock().await.unwrap();
        listening(&server, &ch).await;
        assert!(!g.is_lost());
        g.unlock().await.unwrap();
    }
    holder.shutdown().await;
    other.shutdown().await;
    assert_nothing_left(&server).await;
}
