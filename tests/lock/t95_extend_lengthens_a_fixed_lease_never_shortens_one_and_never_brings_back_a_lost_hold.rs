//! `guard.extend(lease)` lengthens a fixed-lease hold's lease on the server and on the local
//! clock (a plain lock, a fair lock, a read hold with its timeout key, a multi-lock), never
//! shortens a longer one, refuses a bad lease with a typed error, and on a hold that is gone
//! (deleted, or past its lease) answers `LockLost` without creating anything.

use std::time::Duration;

use relock::Error;
use relock_tests::*;

fn pttl(server: &relock_testkit::RedisServer, key: &str) -> i64 {
    server.cmd(&["PTTL", key]).unwrap().as_int().unwrap()
}

#[tokio::test]
async fn extend_lengthens_a_fixed_lease_never_shortens_one_and_never_brings_back_a_lost_hold() {
    let server = server();
    let client = client(&server).await;
    let short = Duration::from_millis(800);
    let long = Duration::from_secs(20);

    // A plain lock: lengthened on the server and here.
    let lock = client.lock("t95").with_lease(short);
    let g = lock.lock().await.unwrap();
    assert!(pttl(&server, "t95") <= 800);
    g.extend(long).await.unwrap();
    assert!(pttl(&server, "t95") > 19_000, "{}", pttl(&server, "t95"));
    assert!(
        g.remaining() > Duration::from_secs(19),
        "{:?}",
        g.remaining()
    );
    // Never shortened: a shorter extension leaves both as they are.
    g.extend(Duration::from_millis(100)).await.unwrap();
    assert!(pttl(&server, "t95") > 19_000, "{}", pttl(&server, "t95"));
    assert!(
        g.remaining() > Duration::from_secs(19),
        "{:?}",
        g.remaining()
    );
    // Bad input: a typed error naming the argument.
    match g.extend(Duration::ZERO).await {
        Err(Error::InvalidArgument { name, .. }) => assert_eq!(name, "lease"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    // A re-entered guard sees the same lease.
    let again = g.scope(lock.lock()).await.unwrap();
    assert!(again.remaining() > Duration::from_secs(19));
    drop(again);
    g.unlock().await.unwrap();
    assert_eq!(server.cmd(&["EXISTS", "t95"]).unwrap().as_int(), Some(0));

    // Gone on the server (deleted by someone): LockLost, marked lost, nothing re-created.
    let g = lock.lock().await.unwrap();
    server.cmd(&["DEL", "t95"]).unwrap();
    match g.extend(long).await {
        Err(Error::LockLost { name }) => assert_eq!(name, "t95"),
        other => panic!("expected LockLost, got {other:?}"),
    }
    assert!(g.is_lost());
    assert_eq!(server.cmd(&["EXISTS", "t95"]).unwrap().as_int(), Some(0));
    drop(g);

    // Past its lease on the local clock: LockLost, even though nothing else took the lock.
    let g = client
        .lock("t95:late")
        .with_lease(Duration::from_millis(150))
        .lock()
        .await
        .unwrap();
    bounded(Duration::from_secs(2), "the lease to end", g.lost()).await;
    assert!(matches!(g.extend(long).await, Err(Error::LockLost { .. })));
    // The local deadline comes first (it counts from before the script ran), so the server's
    // key may outlive it by a few ms; an extension that reached the server would keep it for
    // `long`.
    wait_until(
        Duration::from_secs(2),
        "the late lock's key to expire",
        || async { server.cmd(&["EXISTS", "t95:late"]).unwrap().as_int() == Some(0) },
    )
    .await
    .unwrap();
    drop(g);

    // A fair lock's hold.
    let fair = client.fair_lock("t95:fair").with_lease(short);
    let g = fair.lock().await.unwrap();
    g.extend(long).await.unwrap();
    assert!(pttl(&server, "t95:fair") > 19_000);
    g.unlock().await.unwrap();

    // A read hold: the lock hash and the hold's own timeout key.
    let rw = client.read_write_lock("t95:rw");
    let r = rw.read_lock().with_lease(short).lock().await.unwrap();
    r.extend(long).await.unwrap();
    let timeout = format!("{{t95:rw}}:{}:rwlock_timeout:1", r.owner());
    assert!(pttl(&server, "t95:rw") > 19_000);
    assert!(
        pttl(&server, &timeout) > 19_000,
        "{}",
        pttl(&server, &timeout)
    );
    r.unlock().await.unwrap();

    // A multi-lock: every part.
    let multi = relock::MultiLock::new()
        .with(client.lock("t95:a").with_lease(short))
        .with(client.lock("t95:b").with_lease(short));
    let m = multi.lock().await.unwrap();
    m.extend(long).await.unwrap();
    assert!(pttl(&server, "t95:a") > 19_000 && pttl(&server, "t95:b") > 19_000);
    m.unlock().await.unwrap();

    client.shutdown().await;
    assert_nothing_left(&server).await;
}
