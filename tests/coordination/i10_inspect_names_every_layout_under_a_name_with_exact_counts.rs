//! `Client::inspect` names what is under a name, with exact counts: nothing; a lock (held, with
//! its holder; a read-write lock's mode; a fair lock's line; free with only its fencing counter
//! left); a semaphore's and a latch's count; a permit-expirable semaphore's available permits,
//! an ended lease counted back without being given back, and its live permits; a key of
//! another type or a string that is not a count; data under a lock's name (`NotALock`); and a
//! count under a key prefix.

use std::time::Duration;

use relock::{Error, Inspection};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_names_every_layout_under_a_name_with_exact_counts() {
    let server = server();
    let c = client(&server).await;
    let other = client(&server).await;

    assert_eq!(c.inspect("i10:none").await.unwrap(), Inspection::Nothing);

    // A held lock, then free with its fencing counter left, then nothing.
    let g = c.lock("i10:plain").lock().await.unwrap();
    let Inspection::Lock(s) = c.inspect("i10:plain").await.unwrap() else {
        panic!("not a lock")
    };
    assert_eq!(s.holders.len(), 1);
    assert_eq!(s.holders[0].count, 1);
    assert_eq!(s.counter, Some(g.fencing_token()));
    assert!(s.pttl_ms.unwrap() > 0 && s.mode.is_none());
    g.unlock().await.unwrap();
    let Inspection::Lock(s) = c.inspect("i10:plain").await.unwrap() else {
        panic!("not a lock")
    };
    assert!(!s.is_held() && s.counter.is_some(), "{s:?}");
    wait_until(Duration::from_secs(5), "the counter to expire", || async {
        c.inspect("i10:plain").await.unwrap() == Inspection::Nothing
    })
    .await
    .unwrap();

    // A read-write lock's mode; a fair lock's line.
    let w = c
        .read_write_lock("i10:rw")
        .write_lock()
        .lock()
        .await
        .unwrap();
    let Inspection::Lock(s) = c.inspect("i10:rw").await.unwrap() else {
        panic!("not a lock")
    };
    assert_eq!(s.mode.as_deref(), Some("write"));
    assert_eq!(s.holders.len(), 1);
    w.unlock().await.unwrap();
    let held = c.fair_lock("i10:fair").lock().await.unwrap();
    let waiting = other.fair_lock("i10:fair");
    let waiter = tokio::spawn(async move { waiting.lock().await.map(|g| (waiting, g)) });
    wait_until(Duration::from_secs(3), "the fair waiter in line", || async {
        matches!(c.inspect("i10:fair").await.unwrap(), Inspection::Lock(s) if s.queue.len() == 1)
    })
    .await
    .unwrap();
    held.unlock().await.unwrap();
    let (_, g) = bounded(Duration::from_secs(3), "the fair waiter", waiter)
        .await
        .unwrap()
        .unwrap();
    g.unlock().await.unwrap();

    // A semaphore's and a latch's count.
    let sem = c.semaphore("i10:sem");
    assert!(sem.try_set_permits(3).await.unwrap());
    sem.acquire(1).await.map(kept).unwrap();
    assert_eq!(c.inspect("i10:sem").await.unwrap(), Inspection::Count(2));
    let latch = c.count_down_latch("i10:latch");
    assert!(latch.try_set_count(5).await.unwrap());
    latch.count_down().await.unwrap();
    assert_eq!(c.inspect("i10:latch").await.unwrap(), Inspection::Count(4));

    // A permit semaphore: one live permit, and one whose lease has ended, counted back as
    // available without being given back.
    let permits = c.permit_expirable_semaphore("i10:permits");
    assert!(permits.try_set_permits(3).await.unwrap());
    let live = permits.acquire(None).await.unwrap();
    assert_eq!(
        c.inspect("i10:permits").await.unwrap(),
        Inspection::PermitSemaphore {
            available: 2,
            held: 1
        }
    );
    let short = permits.acquire(Some(Duration::from_secs(1))).await.unwrap();
    assert_eq!(
        c.inspect("i10:permits").await.unwrap(),
        Inspection::PermitSemaphore {
            available: 1,
            held: 2
        }
    );
    wait_until(Duration::from_secs(5), "the short lease to end", || async {
        c.inspect("i10:permits").await.unwrap()
            == Inspection::PermitSemaphore {
                available: 2,
                held: 1,
            }
    })
    .await
    .unwrap();
    assert_eq!(
        server.cmd(&["GET", "i10:permits"]).unwrap().as_int(),
        Some(1),
        "the ended permit is counted, not given back"
    );
    drop(short);
    live.release().await.unwrap();

    // Anything else: a string that is not a count, a list; data under a lock's name.
    server.cmd(&["SET", "i10:text", "hello"]).unwrap();
    assert_eq!(c.inspect("i10:text").await.unwrap(), Inspection::Other);
    server.cmd(&["RPUSH", "i10:list", "a"]).unwrap();
    assert_eq!(c.inspect("i10:list").await.unwrap(), Inspection::Other);
    server.cmd(&["HSET", "i10:data", "status", "paid"]).unwrap();
    let r = c.inspect("i10:data").await;
    assert!(
        matches!(&r, Err(Error::NotALock { key, .. }) if key == "i10:data"),
        "{r:?}"
    );

    // Under a key prefix: the prefixed count.
    let prefixed = relock::Client::builder()
        .url(server.url())
        .key_prefix("app:")
        .build()
        .await
        .unwrap();
    assert!(prefixed
        .semaphore("i10:sem")
        .try_set_permits(7)
        .await
        .unwrap());
    assert_eq!(
        prefixed.inspect("i10:sem").await.unwrap(),
        Inspection::Count(7)
    );
    assert_eq!(c.inspect("i10:sem").await.unwrap(), Inspection::Count(2));

    prefixed.shutdown().await;
    c.shutdown().await;
    other.shutdown().await;
    server.cmd(&["FLUSHALL"]).unwrap();
    assert_nothing_left(&server).await;
}
