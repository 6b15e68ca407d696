//! A holder of any lock kind (plain, fair, read, write) learns of a force-unlock, or of any
//! deletion of its hold announced on the lock's channel (Redisson's `forceUnlock`: `DEL` then
//! `PUBLISH … 0`), within a round trip or two: its `lost()` fires, not at the watchdog's next
//! renewal (here 10 s away). Also when the deletion comes right after the acquisition, before
//! the holder listens. (Issue 22: a force-unlocked `relock run` kept running its command for
//! 8 s, while a second one had already taken the lock.)

use std::time::{Duration, Instant};

use relock_tests::*;

/// Far below the watchdog's renewal period (10 s): only the channel can have told it.
const PROMPT: Duration = Duration::from_secs(2);

async fn held(kind: &str, c: &relock::Client, name: &str) -> relock::LockGuard {
    match kind {
        "plain" => c.lock(name).lock().await,
        "fair" => c.fair_lock(name).lock().await,
        "read" => c.read_write_lock(name).read_lock().lock().await,
        _ => c.read_write_lock(name).write_lock().lock().await,
    }
    .unwrap()
}

async fn force(kind: &str, c: &relock::Client, name: &str) -> bool {
    match kind {
        "plain" => c.lock(name).force_unlock().await,
        "fair" => c.fair_lock(name).force_unlock().await,
        _ => c.read_write_lock(name).write_lock().force_unlock().await,
    }
    .unwrap()
}

fn channel(kind: &str, name: &str) -> String {
    match kind {
        "plain" | "fair" => format!("redisson_lock__channel:{{{name}}}"),
        _ => format!("redisson_rwlock:{{{name}}}"),
    }
}

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
    for kind in ["plain", "fair", "read", "write"] {
        // Held a while (the holder listens on the lock's channel), then force-unlocked by
        // another client.
        let name = format!("t84:{kind}");
        let g = held(kind, &holder, &name).await;
        let ch = channel(kind, &name);
        listening(&server, &ch).await;
        let t0 = Instant::now();
        assert!(force(kind, &other, &name).await);
        bounded(PROMPT, "lost() after a force-unlock", g.lost()).await;
        println!("{kind}: lost() {:?} after force_unlock", t0.elapsed());
        assert!(matches!(
            g.unlock().await,
            Err(relock::Error::LockLost { .. })
        ));

        // Force-unlocked at once after the acquisition, before the holder listens.
        let g = held(kind, &holder, &name).await;
        assert!(force(kind, &other, &name).await);
        bounded(PROMPT, "lost() after an early force-unlock", g.lost()).await;
        drop(g);

        // Deleted and announced by hand, as Redisson's forceUnlock does.
        let g = held(kind, &holder, &name).await;
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
        let g = held(kind, &holder, &name).await;
        listening(&server, &ch).await;
        assert!(!g.is_lost());
        g.unlock().await.unwrap();
    }
    holder.shutdown().await;
    other.shutdown().await;
    assert_nothing_left(&server).await;
}
