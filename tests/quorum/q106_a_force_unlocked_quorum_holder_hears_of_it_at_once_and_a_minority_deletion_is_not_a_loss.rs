//! A quorum holder learns of a force-unlock within a round trip or two, not at the watchdog's
//! next renewal (here 10 s away): another client's `force_unlock`, and Redisson's way (`DEL`
//! then `PUBLISH … 0` on every master) both fire its `lost()`. A deletion announced on one
//! node only (a minority) is not a loss: the hold stays live on the majority and unlocks
//! cleanly. Without the watch (`watch_holds(false)`) only the renewal would notice.

use std::time::Duration;

use relock_testkit::RedisMasters;
use relock_tests::*;

/// Far below the watchdog's renewal period (10 s): only the channels can have told it.
const PROMPT: Duration = Duration::from_secs(2);

async fn quorum(masters: &RedisMasters, watch: bool) -> relock::QuorumClient {
    relock::QuorumClient::builder()
        .urls(masters.urls())
        .node_timeout(Duration::from_millis(50))
        .restart_quarantine(Duration::ZERO)
        .connect_timeout(Duration::from_secs(2))
        .watch_holds(watch)
        .build()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_force_unlocked_quorum_holder_hears_of_it_at_once_and_a_minority_deletion_is_not_a_loss()
{
    let masters = RedisMasters::start(3).unwrap();
    let a = quorum(&masters, true).await;
    let b = quorum(&masters, true).await;
    let unwatched = quorum(&masters, false).await;

    // Another client's force-unlock, right after the acquisition (before the watch listens)
    // and once it listens.
    for settle in [Duration::ZERO, Duration::from_millis(200)] {
        let g = a.lock("q106").lock().await.unwrap();
        tokio::time::sleep(settle).await; // the moment of the fault, not a synchronisation
        assert!(b.lock("q106").force_unlock().await.unwrap());
        bounded(
            PROMPT,
            "lost() after another client's force-unlock",
            g.lost(),
        )
        .await;
        assert!(matches!(
            g.unlock().await,
            Err(relock::Error::LockLost { .. })
        ));
    }

    // Redisson's forceUnlock on every master.
    let g = a.lock("q106:r").lock().await.unwrap();
    wait_until(
        Duration::from_secs(2),
        "the watch to listen on every node",
        || async {
            masters
                .servers()
                .iter()
                .all(|m| m.pubsub_numsub("redisson_lock__channel:{q106:r}").unwrap() == 1)
        },
    )
    .await
    .unwrap();
    for m in masters.servers() {
        m.cmd(&["DEL", "q106:r"]).unwrap();
        m.cmd(&["PUBLISH", "redisson_lock__channel:{q106:r}", "0"])
            .unwrap();
    }
    bounded(PROMPT, "lost() after a Redisson force-unlock", g.lost()).await;
    drop(g);

    // A deletion on one node only: the majority still has the hold.
    let g = a.lock("q106:m").lock().await.unwrap();
    wait_until(
        Duration::from_secs(2),
        "the watch to listen on every node",
        || async {
            masters
                .servers()
                .iter()
                .all(|m| m.pubsub_numsub("redisson_lock__channel:{q106:m}").unwrap() == 1)
        },
    )
    .await
    .unwrap();
    let m0 = &masters.servers()[0];
    m0.cmd(&["DEL", "q106:m"]).unwrap();
    m0.cmd(&["PUBLISH", "redisson_lock__channel:{q106:m}", "0"])
        .unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(500), g.lost())
            .await
            .is_err(),
        "a minority deletion is not a loss"
    );
    assert!(!g.is_lost());
    g.unlock().await.unwrap();

    // Without the watch, the force-unlock goes unheard until the renewal (10 s away).
    let g = unwatched.lock("q106:u").lock().await.unwrap();
    assert!(b.lock("q106:u").force_unlock().await.unwrap());
    assert!(
        tokio::time::timeout(Duration::from_millis(500), g.lost())
            .await
            .is_err(),
        "without the watch only the renewal notices"
    );
    drop(g);

    for c in [a, b, unwatched] {
        c.shutdown().await;
    }
    for m in masters.servers() {
        assert_nothing_left(m).await;
    }
}
