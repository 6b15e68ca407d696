//! Shutdown and the semaphore's guards (found by review): permits that shutdown gave back are
//! not reported kept by a later `forget()` (0, so Redisson-style code releases nothing); an
//! acquire granted while shutdown runs and polled after it gets `Shutdown`, its permit given
//! back once; a guard dropped as its runtime ends, without `shutdown`, cannot give its permit
//! back (a counting semaphore has no lease) and says so in a warning.

use std::time::Duration;

use relock_tests::*;

#[tokio::test]
async fn forget_after_shutdown_keeps_nothing() {
    let server = server();
    let c = client(&server).await;
    let sem = c.semaphore("s16a");
    assert!(sem.try_set_permits(3).await.unwrap());
    let permits = sem.acquire(2).await.unwrap();
    c.shutdown().await;
    assert_eq!(crate::get(&server, "s16a").as_deref(), Some("3"));
    assert_eq!(permits.forget(), 0, "shutdown gave them back already");
    assert_eq!(crate::get(&server, "s16a").as_deref(), Some("3"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_granted_during_shutdown_and_polled_after_it_gets_shutdown_and_its_permit_back()
{
    let server = server();
    let c = client(&server).await;
    let sem = c.semaphore("s16d");
    assert!(sem.try_set_permits(1).await.unwrap());
    // Poll an acquire once, so that its attempt is in flight, then leave it unpolled.
    let mut acquire = Box::pin(sem.acquire(1));
    let mut pending = false;
    for _ in 0..20 {
        match poll_once(&mut acquire).await {
            std::task::Poll::Pending => {
                pending = true;
                break;
            }
            std::task::Poll::Ready(r) => {
                drop(r);
                wait_until(Duration::from_secs(3), "the permit back", || async {
                    crate::get(&server, "s16d").as_deref() == Some("1")
                })
                .await
                .unwrap();
                acquire = Box::pin(sem.acquire(1));
            }
        }
    }
    assert!(pending, "no acquire stayed in flight");
    wait_until(
        Duration::from_secs(3),
        "the attempt to take the permit",
        || async { crate::get(&server, "s16d").as_deref() == Some("0") },
    )
    .await
    .unwrap();
    bounded(Duration::from_secs(10), "shutdown", c.shutdown()).await;
    assert_eq!(
        crate::get(&server, "s16d").as_deref(),
        Some("1"),
        "shutdown gave back the permit of the unpolled acquire"
    );
    let r = bounded(Duration::from_secs(5), "the acquire", acquire).await;
    assert!(matches!(r, Err(relock::Error::Shutdown)), "{r:?}");
    let twice = wait_until(Duration::from_millis(300), "a second give-back", || async {
        crate::get(&server, "s16d").as_deref() != Some("1")
    })
    .await;
    assert!(
        twice.is_err(),
        "given back twice: {:?}",
        crate::get(&server, "s16d")
    );
}

#[test]
fn a_guard_dropped_as_its_runtime_ends_gives_back_or_reports_the_loss() {
    // The runtime ends before the background give-back runs: it is sent on a connection of
    // its own, and the permit comes back.
    let alive = server();
    let capture = capture_traces(tracing::Level::WARN, "relock");
    let dropped_as_main_returns = |server: &RedisServer, then_kill: bool| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let c = client(server).await;
            let sem = c.semaphore("s16b");
            assert!(sem.try_set_permits(2).await.unwrap());
            let _permits = sem.acquire(1).await.unwrap();
            if then_kill {
                server.kill().unwrap();
            }
            // Returns without `c.shutdown()`: the guard's give-back is spawned as the runtime
            // ends.
        });
        drop(rt);
    };
    dropped_as_main_returns(&alive, false);
    assert_eq!(crate::get(&alive, "s16b").as_deref(), Some("2"));
    assert_eq!(capture.count("they are lost"), 0, "{}", capture.text());

    // Redis cannot be reached then either: the loss is said, naming the semaphore.
    let gone = server();
    dropped_as_main_returns(&gone, true);
    assert_eq!(
        capture.count("could not be given back: they are lost"),
        1,
        "{}",
        capture.text()
    );
    assert!(capture.text().contains("s16b"), "{}", capture.text());
}
