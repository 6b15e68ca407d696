//! The least-privilege ACL lines of `crates/relock/docs/operations.md` ("Least-privilege ACL
//! users"), per deployment, and the exercise every deployment's test runs under them.

use std::time::Duration;

use relock_testkit::{wait_until, RedisServer, Value};

use crate::bounded;
use crate::kinds::{Handle, KINDS};

/// Keys, channels and the commands the scripts call, for names `orders:*`: every deployment.
const COMMON: &[&str] = &[
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
    "~relock_election:{orders:*",
    "&relock_election_channel:{orders:*",
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
    "+hrandfield",
    "+hgetall",
    "+hget",
    "+hmget",
    "+hset",
    "+hdel",
    "+hexists",
    "+hincrby",
    "+zadd",
    "+zrem",
    "+zscore",
    "+zmscore",
    "+zrange",
    "+zrank",
    "+zcard",
    "+zcount",
    "+zrangebyscore",
    "+zremrangebyscore",
    // The client's keep-alive and confirmations.
    "+ping",
    // fred asks these on every connect (it logs a warning, and the server an ACL LOG entry,
    // for each one refused).
    "+info",
    "+client|id",
];

/// One server, and a quorum (on every master).
pub fn one_server() -> Vec<&'static str> {
    let mut g = COMMON.to_vec();
    g.extend(["+publish", "+subscribe", "+unsubscribe"]);
    g
}

/// Sentinel (on every data node): fred asks the master it was given for its `ROLE`.
pub fn sentinel() -> Vec<&'static str> {
    let mut g = one_server();
    g.push("+role");
    g
}

/// A Cluster (on every node): sharded pub/sub, and the topology.
pub fn cluster() -> Vec<&'static str> {
    let mut g = COMMON.to_vec();
    g.extend([
        "+spublish",
        "+ssubscribe",
        "+sunsubscribe",
        "+cluster|info",
        "+cluster|slots",
    ]);
    g
}

/// `ACL SETUSER user on >password <rules>` on `server` (as the kit's admin).
pub fn set_user(server: &RedisServer, user: &str, password: &str, rules: &[&str]) {
    let pass = format!(">{password}");
    let mut cmd = vec!["ACL", "SETUSER", user, "on", pass.as_str()];
    cmd.extend(rules);
    server.cmd(&cmd).unwrap();
}

/// Asserts that `server` refused nothing (`ACL LOG` is empty): no command outside the grant
/// was even tried.
pub fn assert_nothing_refused(server: &RedisServer) {
    let denied = server.cmd(&["ACL", "LOG"]).unwrap();
    assert_eq!(
        denied,
        Value::Array(Some(vec![])),
        "port {}: {denied:?}",
        server.port()
    );
}

/// The watchdog lease of [`every_kind_as_least_privileged`]'s clients: short, so that three
/// renewals take about a second, yet long enough that a loaded CI machine's stall of a few
/// hundred ms does not end a hold (a renewal call is given a third of the lease).
pub const LEASE: Duration = Duration::from_millis(500);
/// How far a renewed lease's end moves on past three leases: more than two leases.
pub const PAST_TWO_LEASES: Duration = Duration::from_millis(2 * LEASE.as_millis() as u64 + 100);

/// Connects two clients to `url` as the least-privilege user `app` (password `app-pw`, set
/// on `servers` with `rules`; `url` names it) and runs [`exercise_every_kind`] with them; then
/// asserts that no server refused anything (`ACL LOG` empty: nothing outside the grant was even
/// tried) and that nothing warned of a refusal. Returns the keys it leaves (the semaphores'
/// counts).
pub async fn every_kind_as_least_privileged(
    servers: &[&RedisServer],
    rules: &[&str],
    url: &str,
    command_timeout: Duration,
) -> Vec<String> {
    for s in servers {
        set_user(s, "app", "app-pw", rules);
    }
    let app = || {
        relock::Client::builder()
            .url(url)
            .watchdog_lease(LEASE)
            .fair_heartbeat(Duration::from_millis(500))
            .command_timeout(command_timeout)
            .connect_timeout(Duration::from_secs(3))
            .build()
    };
    let logs = crate::capture_traces(tracing::Level::WARN, "");
    let c = app().await.expect("connect as the least-privilege user");
    let other = app().await.expect("connect as the least-privilege user");

    let left = exercise_every_kind(&c, &other).await;

    c.shutdown().await;
    other.shutdown().await;
    for s in servers {
        assert_nothing_refused(s);
    }
    assert_eq!(logs.count("NOPERM"), 0, "{}", logs.text());
    left
}

/// Each of `cases` (what, URL, the cause its error names) is refused by `builder(url).build()`
/// within 10 s, with an error that `refused(error, cause)` accepts and whose text (shown and
/// debugged) holds none of `secrets`.
pub async fn assert_refused_unshown(
    cases: Vec<(&str, String, &str)>,
    builder: impl Fn(String) -> relock::ClientBuilder,
    refused: impl Fn(&relock::Error, &str) -> bool,
    secrets: &[&str],
) {
    for (what, bad, cause) in cases {
        let started = std::time::Instant::now();
        let e = bounded(Duration::from_secs(10), what, builder(bad).build())
            .await
            .unwrap_err();
        let text = format!("{e} {e:?}");
        assert!(refused(&e, cause), "{what}: {text}");
        for secret in secrets {
            assert!(!text.contains(secret), "{what} shows a secret: {text}");
        }
        println!("{what}: refused in {:?}: {e}", started.elapsed());
    }
}

/// Waits (bounded) until `client` has one waiter parked.
pub async fn parked(client: &relock::Client, what: &str) {
    wait_until(Duration::from_secs(3), what, || async {
        client.parked_waiters() == 1
    })
    .await
    .unwrap();
}

/// One lock kind under the user: acquire, a waiter on the other client woken by the release
/// (not by expiry: the watchdog renews `mine`'s lease, which must be [`LEASE`], meanwhile),
/// renewal past three leases, and a force-unlock that the holder hears of.
pub async fn exercise(
    mine: Box<dyn relock::DistributedLock>,
    theirs: Box<dyn relock::DistributedLock>,
) {
    let g = bounded(Duration::from_secs(3), "lock", mine.lock())
        .await
        .unwrap();
    assert!(mine.is_locked().await.unwrap());
    let waiter = tokio::spawn(async move {
        let g = theirs.lock().await.unwrap();
        let t = g.fencing_token();
        g.unlock().await.unwrap();
        (theirs, t)
    });
    // Renewed past three leases: its deadline moves on by more than two leases.
    let first = g.valid_until();
    let renewed = || async { g.valid_until() >= first + PAST_TWO_LEASES };
    wait_until(Duration::from_secs(4), "three renewals", renewed)
        .await
        .unwrap();
    assert!(
        !g.is_lost(),
        "renewal failed under the least-privilege user"
    );
    assert!(!waiter.is_finished());
    let token = g.fencing_token();
    g.unlock().await.unwrap();
    let (theirs, t) = bounded(Duration::from_secs(3), "the waiter to be woken", waiter)
        .await
        .unwrap();
    assert!(t > token);
    let g = mine.lock().await.unwrap();
    assert!(theirs.force_unlock().await.unwrap());
    bounded(Duration::from_secs(3), "lost after force-unlock", g.lost()).await;
    drop(g);
}

/// Every kind of [`KINDS`] on a one-server, Cluster or Sentinel client under the user (names
/// `orders:<kind>`): a guarded write and a fenced key, the lock kinds as [`exercise`] (each
/// against the lock its hold keeps out), the counting kinds (a waiter on the other client woken
/// by a release, a permit renewed past three leases, a latch opened by a count-down, a rate
/// limiter's waiter given its permit when the oldest record expires), an election and a job. Leaves nothing behind but the semaphores' counts: returns their keys.
pub async fn exercise_every_kind(c: &relock::Client, other: &relock::Client) -> Vec<String> {
    // A guarded write and read, and a fenced key: the line covers them as written (data keys
    // tagged with the lock's name, the batch's commands among those granted).
    let g = c.lock("orders:plain").lock().await.unwrap();
    let row = "{orders:plain}:row";
    let batch = relock::Commands::new()
        .cmd("HSET")
        .key(row)
        .arg("status")
        .arg("paid");
    assert_eq!(g.write(batch).await.unwrap().len(), 1);
    let read = g
        .read(relock::Commands::new().cmd("HGET").key(row).arg("status"))
        .await
        .unwrap();
    assert_eq!(read[0].as_string().as_deref(), Some("paid"));
    g.write(relock::Commands::new().cmd("DEL").key(row))
        .await
        .unwrap();
    let stock = c.fenced_key("orders:stock");
    stock.set(g.fencing_token(), "1").await.unwrap();
    assert_eq!(
        stock.get().await.unwrap(),
        Some(("1".to_string(), g.fencing_token()))
    );
    let deleted: i64 = relock::fred::interfaces::KeysInterface::del(c.pool(), "orders:stock")
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    g.unlock().await.unwrap();
    let mut left = Vec::new();
    for kind in KINDS {
        let name = format!("orders:{}", kind.name);
        match ((kind.make)(c, &name), (kind.make)(other, &name)) {
            (Handle::Semaphore(sem), Handle::Semaphore(theirs)) => {
                semaphore(other, sem, theirs).await;
                left.push(name);
            }
            (Handle::Permits(permits), Handle::Permits(theirs)) => {
                permit_semaphore(other, permits, theirs).await;
                left.push(name);
            }
            (Handle::Latch(latch), Handle::Latch(theirs)) => {
                count_down_latch(other, latch, theirs).await
            }
            (Handle::RateLimiter(mine), Handle::RateLimiter(theirs)) => {
                rate_limiter(mine, theirs).await
            }
            (Handle::Election(mine), Handle::Election(theirs)) => {
                election(other, mine, theirs).await
            }
            (Handle::Job(mine), Handle::Job(theirs)) => job(c, mine, theirs).await,
            (mine, _) => {
                let (Some(lock), Some(rival)) = (mine.as_lock(), mine.rival_on(other)) else {
                    panic!("{}: no exercise for {mine:?}", kind.name);
                };
                exercise(lock, rival).await;
            }
        }
    }
    for kind in KINDS {
        let handle = (kind.make)(c, &format!("orders:{}", kind.name));
        if let Some(status) = handle.status().await {
            assert!(status.unwrap().holders.is_empty(), "{}", kind.name);
        }
    }
    left
}

/// A waiter on the other client woken by a release.
async fn semaphore(other: &relock::Client, sem: relock::Semaphore, theirs: relock::Semaphore) {
    assert!(sem.try_set_permits(1).await.unwrap());
    sem.acquire(1).await.map(crate::kept).unwrap();
    let waiter =
        tokio::spawn(async move { theirs.acquire(1).await.map(crate::kept).map(|()| theirs) });
    parked(other, "the semaphore waiter to park").await;
    sem.release(1).await.unwrap();
    let theirs = bounded(Duration::from_secs(3), "the semaphore waiter woken", waiter)
        .await
        .unwrap()
        .unwrap();
    theirs.release(1).await.unwrap();
    assert_eq!(sem.available().await.unwrap(), 1);
}

/// A permit renewed past three leases, and a waiter on the other client woken by its release.
async fn permit_semaphore(
    other: &relock::Client,
    permits: relock::PermitSemaphore,
    theirs: relock::PermitSemaphore,
) {
    assert!(permits.try_set_permits(1).await.unwrap());
    let p = permits.acquire(None).await.unwrap();
    let first = p.valid_until();
    wait_until(Duration::from_secs(4), "three permit renewals", || async {
        p.valid_until() >= first + PAST_TWO_LEASES
    })
    .await
    .unwrap();
    let waiter = tokio::spawn(async move { theirs.acquire(None).await.map(|g| (theirs, g)) });
    parked(other, "the permit waiter to park").await;
    p.release().await.unwrap();
    let (_theirs, g) = bounded(Duration::from_secs(3), "the permit waiter woken", waiter)
        .await
        .unwrap()
        .unwrap();
    g.release().await.unwrap();
    assert_eq!(permits.available().await.unwrap(), 1);
}

/// A waiter on the other client opened by a count-down.
async fn count_down_latch(
    other: &relock::Client,
    latch: relock::CountDownLatch,
    theirs: relock::CountDownLatch,
) {
    assert!(latch.try_set_count(1).await.unwrap());
    let waiter = tokio::spawn(async move { theirs.wait().await });
    parked(other, "the latch waiter to park").await;
    latch.count_down().await.unwrap();
    bounded(Duration::from_secs(3), "the latch waiter woken", waiter)
        .await
        .unwrap()
        .unwrap();
}

/// A limit shared by both clients: a waiter on the other client gets its permit when the
/// oldest record expires; a release, the config, a per-client limit, and a delete.
async fn rate_limiter(mine: relock::RateLimiter, theirs: relock::RateLimiter) {
    use relock::RateType;
    let interval = Duration::from_millis(300);
    assert!(mine
        .try_set_rate(RateType::Overall, 2, interval)
        .await
        .unwrap());
    assert!(mine.try_acquire(2).await.unwrap());
    assert_eq!(theirs.available_permits().await.unwrap(), 0);
    assert!(theirs
        .try_acquire_for(1, Duration::from_secs(3))
        .await
        .unwrap());
    theirs.release(1).await.unwrap();
    assert_eq!(mine.config().await.unwrap().unwrap().rate(), 2);
    mine.set_rate(RateType::PerClient, 1, interval)
        .await
        .unwrap();
    assert!(mine.try_acquire(1).await.unwrap());
    assert!(theirs.try_acquire(1).await.unwrap());
    assert!(mine.delete().await.unwrap());
    assert!(theirs.delete().await.unwrap());
}

/// A leader, a standby on the other client that leads when it resigns, and an observer that
/// sees both terms.
async fn election(other: &relock::Client, mine: relock::Election, theirs: relock::Election) {
    let mut changes = theirs.observe();
    let leader = mine.campaign("c").await.unwrap();
    let standby = tokio::spawn(async move { theirs.campaign("other").await });
    parked(other, "the standby to park").await;
    let first = leader.term();
    leader.resign().await.unwrap();
    let next = bounded(Duration::from_secs(3), "the standby to lead", standby)
        .await
        .unwrap()
        .unwrap();
    assert!(next.term() > first);
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let e = bounded(Duration::from_secs(3), "an election event", changes.next())
            .await
            .expect("the observation goes on")
            .unwrap();
        seen.push(e);
    }
    assert!(
        matches!(&seen[0], relock::LeaderEvent::Elected(l) if l.term == first),
        "{seen:?}"
    );
    assert_eq!(seen[1], relock::LeaderEvent::Resigned { term: first });
    assert!(
        matches!(&seen[2], relock::LeaderEvent::Elected(l) if l.term == next.term()),
        "{seen:?}"
    );
    next.resign().await.unwrap();
    drop(changes);
}

/// One client runs the occurrence, the other skips it during the at-least time.
async fn job(c: &relock::Client, mine: relock::Job, theirs: relock::Job) {
    let at_least = Duration::from_millis(200);
    let (mine, theirs) = (mine.at_least_for(at_least), theirs.at_least_for(at_least));
    assert_eq!(mine.run(async |_| 1).await.unwrap(), Some(1));
    assert_eq!(theirs.run(async |_| 2).await.unwrap(), None);
    let lock = c.lock(mine.name());
    wait_until(
        Duration::from_secs(3),
        "the kept job lock to expire",
        || async { !lock.is_locked().await.unwrap() },
    )
    .await
    .unwrap();
}
