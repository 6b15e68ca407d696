//! A user granted exactly what `docs/operations.md` lists for every kind on one server
//! (its lock keys, their channels as channels, the script and pub/sub commands) acquires,
//! waits and is woken, renews, releases, reads the status of and force-unlocks every lock kind
//! (plain, fair, read-write), and acquires, waits, renews and releases the counting kinds
//! (semaphore, permit semaphore, latch); without the channel grant its release is refused with a typed
//! `Permission` error that names the lock and the refused channel. Nothing outside the grant
//! is ever sent (the server's `ACL LOG` stays empty). (Issue 22: the release
//! script passed the channel as a key, so such a user could acquire but never release, and
//! every lock blocked everyone for its whole lease.)

use std::time::Duration;

use relock::Error;
use relock_tests::*;

/// The grant for locks named `orders:*` (docs/operations.md, "Least-privilege ACL users").
const GRANT: &[&str] = &[
    "resetkeys",
    "resetchannels",
    "~orders:*",
    "~{orders:*",
    "~redisson_lock_token:{orders:*",
    "~relock_fair_*:{orders:*",
    "~relock_request:{orders:*",
    "&redisson_lock__channel:{orders:*",
    "&relock_fair_channel:{orders:*",
    "&redisson_rwlock:{orders:*",
    "&redisson_sc:{orders:*",
    "&redisson_countdownlatch__channel__{orders:*",
    "-@all",
    // The scripts, and what they call.
    "+evalsha",
    "+eval",
    "+evalsha_ro",
    "+eval_ro",
    "+exists",
    "+type",
    "+pttl",
    "+pexpire",
    "+del",
    "+get",
    "+set",
    "+incr",
    "+incrby",
    "+decr",
    "+decrby",
    "+time",
    "+hlen",
    "+hgetall",
    "+hget",
    "+hset",
    "+hdel",
    "+hexists",
    "+hincrby",
    "+hkeys",
    "+zadd",
    "+zrem",
    "+zscore",
    "+zrange",
    "+zrank",
    "+zcard",
    "+zrangebyscore",
    "+zremrangebyscore",
    "+publish",
    // Waiters, and the client's keep-alive.
    "+subscribe",
    "+unsubscribe",
    "+ping",
    // fred asks these on every connect (it logs a warning, and the server an ACL LOG entry,
    // for each one refused).
    "+info",
    "+client|id",
];

async fn app(server: &RedisServer, user: &str) -> relock::Client {
    relock::Client::builder()
        .url(format!("redis://{user}:app-pw@127.0.0.1:{}", server.port()))
        .watchdog_lease(Duration::from_millis(300))
        .fair_heartbeat(Duration::from_millis(500))
        .command_timeout(Duration::from_secs(1))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .expect("connect as the least-privilege user")
}

#[tokio::test]
async fn a_least_privilege_acl_user_runs_every_lock_kind_and_a_missing_grant_is_named() {
    let server = server();
    let mut setuser = vec!["ACL", "SETUSER", "app", "on", ">app-pw"];
    setuser.extend(GRANT);
    server.cmd(&setuser).unwrap();
    let logs = capture_traces(tracing::Level::WARN, "");
    let c = app(&server, "app").await;
    let other = app(&server, "app").await;

    // Every kind: acquire, a waiter on the other client woken by the release, renewal past
    // three leases, status, force-unlock.
    exercise(c.lock("orders:plain"), other.lock("orders:plain")).await;
    exercise(c.fair_lock("orders:fair"), other.fair_lock("orders:fair")).await;
    exercise(
        c.read_write_lock("orders:rw").write_lock(),
        other.read_write_lock("orders:rw").write_lock(),
    )
    .await;
    exercise(
        c.read_write_lock("orders:rw").write_lock(),
        other.read_write_lock("orders:rw").read_lock(),
    )
    .await;
    exercise(
        c.read_write_lock("orders:rw").read_lock(),
        other.read_write_lock("orders:rw").write_lock(),
    )
    .await;
    // The counting kinds: a waiter on the other client woken by a release, a permit renewed
    // past three leases, a latch opened by a count-down.
    let sem = c.semaphore("orders:sem");
    assert!(sem.try_set_permits(1).await.unwrap());
    sem.acquire(1).await.unwrap();
    let theirs = other.semaphore("orders:sem");
    let waiter = tokio::spawn(async move { theirs.acquire(1).await.map(|()| theirs) });
    parked(&other, "the semaphore waiter to park").await;
    sem.release(1).await.unwrap();
    let theirs = bounded(Duration::from_secs(2), "the semaphore waiter woken", waiter)
        .await
        .unwrap()
        .unwrap();
    theirs.release(1).await.unwrap();
    assert_eq!(sem.available().await.unwrap(), 1);
    let permits = c.permit_expirable_semaphore("orders:permits");
    assert!(permits.try_set_permits(1).await.unwrap());
    let p = permits.acquire(None).await.unwrap();
    let first = p.valid_until();
    wait_until(Duration::from_secs(3), "three permit renewals", || async {
        p.valid_until() >= first + Duration::from_millis(700)
    })
    .await
    .unwrap();
    let theirs = other.permit_expirable_semaphore("orders:permits");
    let waiter = tokio::spawn(async move { theirs.acquire(None).await.map(|g| (theirs, g)) });
    parked(&other, "the permit waiter to park").await;
    p.release().await.unwrap();
    let (_theirs, g) = bounded(Duration::from_secs(2), "the permit waiter woken", waiter)
        .await
        .unwrap()
        .unwrap();
    g.release().await.unwrap();
    assert_eq!(permits.available().await.unwrap(), 1);
    let latch = c.count_down_latch("orders:latch");
    assert!(latch.try_set_count(1).await.unwrap());
    let theirs = other.count_down_latch("orders:latch");
    let waiter = tokio::spawn(async move { theirs.wait().await });
    parked(&other, "the latch waiter to park").await;
    latch.count_down().await.unwrap();
    bounded(Duration::from_secs(2), "the latch waiter woken", waiter)
        .await
        .unwrap()
        .unwrap();
    server
        .cmd(&["DEL", "orders:sem", "orders:permits"])
        .unwrap();

    assert!(c
        .lock("orders:plain")
        .status()
        .await
        .unwrap()
        .holders
        .is_empty());
    assert!(c
        .fair_lock("orders:fair")
        .status()
        .await
        .unwrap()
        .holders
        .is_empty());
    assert!(c
        .read_write_lock("orders:rw")
        .status()
        .await
        .unwrap()
        .holders
        .is_empty());
    c.shutdown().await;
    other.shutdown().await;
    // Nothing was refused on the way (the server's ACL LOG is empty: no command outside the
    // grant was even tried), and nothing warned of a refusal.
    let denied = server.cmd(&["ACL", "LOG"]).unwrap();
    assert_eq!(
        denied,
        relock_testkit::Value::Array(Some(vec![])),
        "{denied:?}"
    );
    assert_eq!(logs.count("NOPERM"), 0, "{}", logs.text());

    // Without the channel grant: the release is refused, naming the lock and the channel.
    let mut setuser = vec!["ACL", "SETUSER", "nochannel", "on", ">app-pw"];
    setuser.extend(
        GRANT
            .iter()
            .filter(|r| !r.starts_with("&redisson_lock__channel")),
    );
    server.cmd(&setuser).unwrap();
    let c = app(&server, "nochannel").await;
    let g = c.lock("orders:1").lock().await.unwrap();
    let e = g.unlock().await.unwrap_err();
    match &e {
        Error::Permission { key, source, .. } => {
            assert_eq!(key, "orders:1");
            assert!(
                source.to_string().contains("channel"),
                "names the channel: {source}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(!e.is_transient());
    let text = e.to_string();
    assert!(
        text.contains("docs/operations.md") && !text.contains("app-pw"),
        "{text}"
    );
    c.shutdown().await;
    server.cmd(&["FLUSHALL"]).unwrap();
    assert_nothing_left(&server).await;
}

/// Waits (bounded) until `client` has one waiter parked.
async fn parked(client: &relock::Client, what: &str) {
    wait_until(Duration::from_secs(2), what, || async {
        client.parked_waiters() == 1
    })
    .await
    .unwrap();
}

async fn exercise<A, B>(mine: A, theirs: B)
where
    A: relock::DistributedLock,
    B: relock::DistributedLock + 'static,
{
    let g = bounded(Duration::from_secs(3), "lock", mine.lock())
        .await
        .unwrap();
    assert!(mine.is_locked().await.unwrap());
    // A waiter on the other client, woken by the release (not by expiry: the watchdog renews
    // the 300 ms lease meanwhile).
    let waiter = tokio::spawn(async move {
        let g = theirs.lock().await.unwrap();
        let t = g.fencing_token();
        g.unlock().await.unwrap();
        (theirs, t)
    });
    // Renewed past three leases: its deadline moves on by more than two leases.
    let first = g.valid_until();
    let renewed = || async { g.valid_until() >= first + Duration::from_millis(700) };
    wait_until(Duration::from_secs(3), "three renewals", renewed)
        .await
        .unwrap();
    assert!(
        !g.is_lost(),
        "renewal failed under the least-privilege user"
    );
    assert!(!waiter.is_finished());
    let token = g.fencing_token();
    g.unlock().await.unwrap();
    let (theirs, t) = bounded(Duration::from_secs(2), "the waiter to be woken", waiter)
        .await
        .unwrap();
    assert!(t > token);
    // Force-unlock of a held lock.
    let g = mine.lock().await.unwrap();
    assert!(theirs.force_unlock().await.unwrap());
    bounded(Duration::from_secs(2), "lost after force-unlock", g.lost()).await;
    drop(g);
}
