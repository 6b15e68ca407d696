//! An acquire attempt whose script ran (it took the permit) and whose reply is lost with its
//! connection while `shutdown()` runs, on a server that refuses new connections for a while
//! (a loaded or restarting server): the give-back's first sends fail at once. It must be sent
//! again within shutdown's bound rather than given up at the first failure, or a plain
//! semaphore's permit stays taken for good (it has no lease).

use std::time::Duration;

use relock_testkit::Direction;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_give_back_at_shutdown_whose_connection_is_refused_for_a_while_is_sent_again_until_it_lands(
) {
    let server = server();
    let (proxy, c, sem, frozen) = crate::one_permit_behind_a_proxy(&server, "s93").await;
    let count = || crate::get(&server, "s93");
    let acquire = {
        let sem = sem.clone();
        tokio::spawn(async move { sem.acquire(1).await.map(kept) })
    };
    crate::permit_taken(&server, "s93").await;
    // Shutdown begins while the attempt is in flight; then its reply is lost, and the server
    // refuses new connections for half a command timeout.
    // Nothing sent from now on reaches the server until the connections are replaced.
    proxy.freeze_existing(Direction::Up);
    proxy.refuse(true);
    let shutdown = shut_down_losing_the_held_reply(&proxy, &frozen, &c, || async {
        matches!(sem.available().await, Err(relock::Error::Shutdown))
    })
    .await;
    // The fault's length, not a wait for a condition.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    proxy.refuse(false);
    let r = bounded(Duration::from_secs(5), "acquire", acquire)
        .await
        .unwrap();
    assert!(matches!(r, Err(relock::Error::Shutdown)), "{r:?}");
    bounded(Duration::from_secs(15), "shutdown", shutdown)
        .await
        .unwrap();
    assert_eq!(
        count().as_deref(),
        Some("1"),
        "shutdown returned and the permit the cut-off attempt took is not back"
    );
}
