//! A permit holder learns at once that its permit was given back by id elsewhere (relock's
//! `release_id`, Redisson's `release(id)`): its `lost()` fires within a round trip or two, not
//! at the permit renewal's next round (here 10 s away), and `release()` says `PermitLost`.
//! Releases of other permits of the same semaphore are not a loss, and a guard's own release
//! never reports one.

use std::time::Duration;

use relock::Error;
use relock_tests::*;

/// Far below the renewal period (10 s): only the channel can have told it.
const PROMPT: Duration = Duration::from_secs(2);

// Current-thread: the capture of warnings sees every task's events.
#[tokio::test]
async fn a_permit_released_by_id_elsewhere_is_reported_lost_at_once_and_others_releases_are_not_a_loss(
) {
    let server = server();
    let logs = capture_traces(tracing::Level::WARN, "");
    let a = client(&server).await;
    let b = client(&server).await;
    let mine = a.permit_expirable_semaphore("p96");
    let theirs = b.permit_expirable_semaphore("p96");
    assert!(mine.try_set_permits(3).await.unwrap());

    // Right after the grant (before the watch listens), and once it listens.
    for settle in [Duration::ZERO, Duration::from_millis(200)] {
        let kept = mine.acquire(None).await.unwrap();
        let p = mine.acquire(None).await.unwrap();
        let other = theirs.acquire(None).await.unwrap();
        tokio::time::sleep(settle).await; // the moment of the fault, not a synchronisation
                                          // Another permit's release on the same semaphore: no loss.
        other.release().await.unwrap();
        assert!(theirs.release_id(p.id()).await.unwrap());
        bounded(PROMPT, "lost() after a release by id elsewhere", p.lost()).await;
        assert!(!kept.is_lost(), "a release of another permit is not a loss");
        assert!(matches!(p.release().await, Err(Error::PermitLost { .. })));
        kept.release().await.unwrap();
    }
    assert_eq!(mine.available().await.unwrap(), 3);
    assert_eq!(
        logs.count("its watch found it gone"),
        2,
        "one warning per lost permit: {}",
        logs.text()
    );

    // A guard's own release, and a drop, report nothing.
    let p = mine.acquire(None).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await; // its watch listens by now
    p.release().await.unwrap();
    drop(mine.acquire(None).await.unwrap());
    wait_until(
        Duration::from_secs(2),
        "the dropped permit to be given back",
        || async { mine.available().await.unwrap() == 3 },
    )
    .await
    .unwrap();
    assert_eq!(logs.count("its watch found it gone"), 2, "{}", logs.text());

    a.shutdown().await;
    b.shutdown().await;
    server.cmd(&["DEL", "p96"]).unwrap();
    assert_nothing_left(&server).await;
}
