//! The permit-expirable semaphore's bad arguments are refused before anything is sent
//! (`InvalidArgument` naming the argument and what to pass), keys of another type give
//! `WrongType` naming the key and are left untouched, and ids that are not there are reported
//! as not released.

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_and_keys_of_another_type_get_typed_errors() {
    let server = server();
    let a = client(&server).await;
    let sem = a.permit_expirable_semaphore("p60");
    let zero = Some(Duration::ZERO);
    assert_invalid_saying(sem.acquire(zero).await, "lease", "at least 1 ms");
    assert_invalid_saying(sem.try_acquire(zero).await, "lease", "at least 1 ms");
    assert_invalid_saying(
        sem.try_acquire_for(Duration::from_secs(1), zero).await,
        "lease",
        "at least 1 ms",
    );
    let forever = Some(Duration::from_secs(40 * 365 * 86_400));
    assert_invalid_saying(sem.try_acquire(forever).await, "lease", "at most 30 years");
    assert_invalid_saying(sem.add_permits(0).await, "n", "at least 1");
    assert_invalid_saying(sem.add_permits(i64::MIN).await, "n", "at most");
    assert_invalid_saying(
        sem.try_set_permits(1_000_000_000_000_001).await,
        "n",
        "at most",
    );
    for bad in ["", "xyz", "abc", "0x12"] {
        assert_invalid_saying(sem.release_id(bad).await, "id", "hex digits");
    }
    for bad in ["", "a{b", "x{}y"] {
        let sem = a.permit_expirable_semaphore(bad);
        assert_invalid_saying(sem.try_acquire(None).await, "name", "");
        assert_invalid_saying(sem.available().await, "name", "");
        assert_invalid_saying(sem.release_id("00").await, "name", "");
    }
    assert!(server.keys().unwrap().is_empty(), "{:?}", server.keys());

    // A missing semaphore has no permits; an unknown id is not released.
    assert!(sem.try_acquire(None).await.unwrap().is_none());
    assert!(!sem
        .release_id("00112233445566778899aabbccddeeff")
        .await
        .unwrap());
    assert_eq!(sem.available().await.unwrap(), 0);
    assert!(server.keys().unwrap().is_empty(), "{:?}", server.keys());

    // Keys of another type: the count as a hash or as text, the timeouts as a string.
    let _ = server.cmd(&["HSET", "p60:hash", "f", "1"]).unwrap();
    let _ = server.cmd(&["SET", "p60:text", "many"]).unwrap();
    let _ = server.cmd(&["SET", "p60:z", "5"]).unwrap();
    let _ = server.cmd(&["SET", "{p60:z}:timeout", "x"]).unwrap();
    for key in ["p60:hash", "p60:text", "p60:z"] {
        let sem = a.permit_expirable_semaphore(key);
        assert_wrong_type(sem.acquire(None).await, key);
        assert_wrong_type(sem.try_acquire(None).await, key);
        assert_wrong_type(sem.try_acquire_for(Duration::from_secs(1), None).await, key);
        assert_wrong_type(sem.available().await, key);
        assert_wrong_type(sem.acquired().await, key);
        if key != "p60:z" {
            assert_wrong_type(sem.release_id("00").await, key);
            assert_wrong_type(sem.add_permits(1).await, key);
        }
    }
    assert_wrong_type(
        a.permit_expirable_semaphore("p60:hash")
            .try_set_permits(1)
            .await,
        "p60:hash",
    );
    // Nothing was changed.
    assert_eq!(crate::get(&server, "p60:text").as_deref(), Some("many"));
    assert_eq!(crate::get(&server, "p60:z").as_deref(), Some("5"));
    assert_eq!(crate::get(&server, "{p60:z}:timeout").as_deref(), Some("x"));
    let mut keys = server.keys().unwrap();
    keys.sort();
    assert_eq!(keys, ["p60:hash", "p60:text", "p60:z", "{p60:z}:timeout"]);
    assert_eq!(a.held_permits(), 0);
    crate::no_subscriptions(&[&a]).await;
}
