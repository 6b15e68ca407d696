//! Bad arguments are refused before anything is sent (`InvalidArgument` naming the argument
//! and what to pass), keys of another type (a hash, a string that is not a count) give
//! `WrongType` naming the key and are left untouched, and a release past 10^15 is refused
//! without changing the count. For the semaphore and the latch.

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_and_keys_of_another_type_get_typed_errors() {
    let server = server();
    let a = client(&server).await;
    let sem = a.semaphore("s70");
    let too_many = 1_000_000_000_000_001u64;
    assert_invalid(sem.acquire(0).await.map(kept), "n");
    assert_invalid(sem.try_acquire(0).await.map(taken), "n");
    assert_invalid(
        sem.try_acquire_for(0, Duration::from_secs(1))
            .await
            .map(taken),
        "n",
    );
    assert_invalid(sem.release(0).await, "n");
    assert_invalid(sem.add_permits(0).await, "n");
    assert_invalid(sem.acquire(too_many).await.map(kept), "n");
    assert_invalid(sem.release(u64::MAX).await, "n");
    assert_invalid(sem.add_permits(i64::MIN).await, "n");
    assert_invalid(sem.try_set_permits(too_many).await, "n");
    let e = sem.acquire(0).await.map(kept).unwrap_err().to_string();
    assert!(e.contains("`n`") && e.contains("at least 1"), "{e}");
    for bad in ["", "a{b", "x{}y"] {
        assert_invalid(a.semaphore(bad).try_acquire(1).await.map(taken), "name");
        assert_invalid(a.semaphore(bad).available().await, "name");
        assert_invalid(a.count_down_latch(bad).count().await, "name");
        assert_invalid(a.count_down_latch(bad).wait().await, "name");
    }
    let latch = a.count_down_latch("l70");
    assert_invalid(latch.try_set_count(0).await, "n");
    assert_invalid(latch.try_set_count(too_many).await, "n");
    crate::keys_become(&server, &[]).await;

    // At the limit: one more is refused, the count unchanged.
    assert!(sem.try_set_permits(1_000_000_000_000_000).await.unwrap());
    assert_invalid(sem.release(1).await, "n");
    assert_eq!(sem.available().await.unwrap(), 1_000_000_000_000_000);
    assert!(sem
        .try_acquire(1_000_000_000_000_000)
        .await
        .map(taken)
        .unwrap());
    assert_eq!(sem.available().await.unwrap(), 0);

    // Keys of another type.
    let _ = server.cmd(&["HSET", "s70:hash", "f", "1"]).unwrap();
    let _ = server.cmd(&["SET", "s70:text", "many"]).unwrap();
    for key in ["s70:hash", "s70:text"] {
        let sem = a.semaphore(key);
        assert_wrong_type(sem.acquire(1).await.map(kept), key);
        assert_wrong_type(sem.try_acquire(1).await.map(taken), key);
        assert_wrong_type(
            sem.try_acquire_for(1, Duration::from_secs(1))
                .await
                .map(taken),
            key,
        );
        assert_wrong_type(sem.release(1).await, key);
        assert_wrong_type(sem.add_permits(-1).await, key);
        assert_wrong_type(sem.available().await, key);
        assert_wrong_type(sem.drain().await, key);
        let latch = a.count_down_latch(key);
        assert_wrong_type(latch.count().await, key);
        assert_wrong_type(latch.wait().await, key);
        assert_wrong_type(latch.wait_for(Duration::from_secs(1)).await, key);
        assert_wrong_type(latch.count_down().await, key);
    }
    // Setting or deleting: a hash is another type; a text string is "set" already.
    assert_wrong_type(a.semaphore("s70:hash").try_set_permits(1).await, "s70:hash");
    assert_wrong_type(
        a.count_down_latch("s70:hash").try_set_count(1).await,
        "s70:hash",
    );
    assert_wrong_type(a.count_down_latch("s70:hash").delete().await, "s70:hash");
    assert_wrong_type(a.count_down_latch("s70:text").delete().await, "s70:text");
    assert!(!a.semaphore("s70:text").try_set_permits(1).await.unwrap());
    assert!(!a
        .count_down_latch("s70:text")
        .try_set_count(1)
        .await
        .unwrap());

    // Untouched.
    assert_eq!(
        server
            .cmd(&["HGET", "s70:hash", "f"])
            .unwrap()
            .as_string()
            .as_deref(),
        Some("1")
    );
    assert_eq!(crate::get(&server, "s70:text").as_deref(), Some("many"));
    crate::keys_become(&server, &["s70", "s70:hash", "s70:text"]).await;
    crate::no_subscriptions(&[&a]).await;
    let _ = server.cmd(&["DEL", "s70", "s70:hash", "s70:text"]).unwrap();
    assert_nothing_left(&server).await;
}
