//! `Semaphore::acquire` returns a guard, as tokio's does: its permits come back when it is
//! dropped, on an early `?`, on a panic, by `release()`, and at the client's shutdown for
//! guards still alive (once: a guard dropped after shutdown adds nothing); `forget()` keeps
//! them taken until a `release(n)`, as Redisson's `acquire` does.

use std::time::Duration;

use relock_tests::*;

async fn count_is(sem: &relock::Semaphore, n: u64, what: &str) {
    wait_until(Duration::from_secs(3), what, || async {
        sem.available().await.unwrap() == n
    })
    .await
    .unwrap();
}

async fn fails_early(sem: &relock::Semaphore) -> Result<(), String> {
    let _permits = sem.acquire(2).await.map_err(|e| e.to_string())?;
    Err("the work failed".into())
}

#[tokio::test]
async fn a_permit_guard_gives_its_permits_back_on_drop_error_panic_and_shutdown_and_forget_keeps_them(
) {
    let server = server();
    let c = client(&server).await;
    let sem = c.semaphore("s15");
    assert!(sem.try_set_permits(3).await.unwrap());

    // Dropped: back in the background.
    let permits = sem.acquire(2).await.unwrap();
    assert_eq!((permits.count(), permits.semaphore()), (2, "s15"));
    assert_eq!(sem.available().await.unwrap(), 1);
    drop(permits);
    count_is(&sem, 3, "the dropped guard's permits back").await;

    // An early `?`.
    assert!(fails_early(&sem).await.is_err());
    count_is(&sem, 3, "the permits of a failed body back").await;

    // A panic in the task that holds them.
    let holder = {
        let sem = sem.clone();
        tokio::spawn(async move {
            let _permits = sem.acquire(3).await.unwrap();
            panic!("the work failed");
        })
    };
    assert!(holder.await.unwrap_err().is_panic());
    count_is(&sem, 3, "the permits of a panicked task back").await;

    // `release()` reports, and the count is back when it returns.
    let permits = sem.try_acquire(1).await.unwrap().expect("one is free");
    permits.release().await.unwrap();
    assert_eq!(sem.available().await.unwrap(), 3);

    // `forget()` keeps them until someone releases them.
    assert_eq!(sem.acquire(2).await.unwrap().forget(), 2);
    assert!(
        sem.try_acquire_for(2, Duration::from_millis(200))
            .await
            .unwrap()
            .is_none(),
        "forgotten permits stay taken"
    );
    assert_eq!(sem.available().await.unwrap(), 1);
    sem.release(2).await.unwrap();
    assert_eq!(sem.available().await.unwrap(), 3);

    // Shutdown gives back the permits of a guard still alive, once.
    let kept = sem.acquire(2).await.unwrap();
    assert_eq!(sem.available().await.unwrap(), 1);
    c.shutdown().await;
    assert_eq!(
        crate::get(&server, "s15").as_deref(),
        Some("3"),
        "given back by shutdown"
    );
    drop(kept);
    let other = client(&server).await;
    let probe = other.semaphore("s15");
    assert!(
        wait_until(Duration::from_millis(500), "a second give-back", || async {
            probe.available().await.unwrap() != 3
        })
        .await
        .is_err(),
        "the guard dropped after shutdown gave its permits back a second time"
    );
    assert_eq!(crate::get(&server, "s15").as_deref(), Some("3"));
}
