//! Helpers shared by the fault scenarios: clients behind a proxy, the lock hash as the server
//! has it, and the server's command log (to prove that a held command did run, and when).

use std::time::{Duration, Instant};

use relock_testkit::{ConnId, Direction, FaultProxy, Mode, Value};
use relock_tests::*;

/// A client that reaches `proxy` (a pool of 4 connections and a subscriber connection), with
/// a fixed client id (fields are `<id>:<n>`), the given command timeout and watchdog lease.
pub async fn proxied_client(
    proxy: &FaultProxy,
    id: &str,
    command_timeout: Duration,
    lease: Duration,
) -> relock::Client {
    relock::Client::builder()
        .url(proxy.url())
        .client_id(id)
        .watchdog_lease(lease)
        .command_timeout(command_timeout)
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .expect("connect through the proxy")
}

/// `HGETALL key` as (field, value) pairs, sorted by field.
pub fn hgetall(server: &RedisServer, key: &str) -> Vec<(String, String)> {
    match server.cmd(&["HGETALL", key]).unwrap() {
        Value::Array(Some(items)) => {
            let mut v: Vec<(String, String)> = items
                .chunks(2)
                .map(|p| (p[0].as_string().unwrap(), p[1].as_string().unwrap()))
                .collect();
            v.sort();
            v
        }
        other => panic!("HGETALL {key} replied {other:?}"),
    }
}

/// A server reply as an integer (panics naming the command otherwise).
pub fn int(server: &RedisServer, args: &[&str]) -> i64 {
    let v = server.cmd(args).unwrap();
    v.as_int()
        .or_else(|| v.as_string().and_then(|s| s.parse().ok()))
        .unwrap_or_else(|| panic!("{args:?} replied {v:?}"))
}

/// The current value of a lock's fencing counter (0 if it has none).
pub fn counter(server: &RedisServer, name: &str) -> u64 {
    match server
        .cmd(&["GET", &format!("redisson_lock_token:{{{name}}}")])
        .unwrap()
    {
        Value::Bulk(None) => 0,
        v => v.as_string().unwrap().parse().unwrap(),
    }
}

/// Makes the server log every command it runs (the slow log, threshold 0), so a test can see
/// that a command held by the proxy ran, and in which order relative to others.
pub fn log_every_command(server: &RedisServer) {
    server
        .cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"])
        .unwrap();
    server
        .cmd(&["CONFIG", "SET", "slowlog-max-len", "100000"])
        .unwrap();
}

/// One command in the server's log: its sequence number and its arguments.
#[derive(Debug, Clone)]
pub struct Logged {
    pub id: i64,
    pub args: Vec<String>,
}

/// The commands logged so far, oldest first (see [`log_every_command`]).
pub fn command_log(server: &RedisServer) -> Vec<Logged> {
    let Value::Array(Some(entries)) = server.cmd(&["SLOWLOG", "GET", "-1"]).unwrap() else {
        panic!("SLOWLOG GET did not reply an array");
    };
    let mut out: Vec<Logged> = entries
        .iter()
        .map(|e| {
            let Value::Array(Some(parts)) = e else {
                panic!("slow log entry {e:?}")
            };
            let Value::Array(Some(args)) = &parts[3] else {
                panic!("slow log entry {e:?}")
            };
            Logged {
                id: parts[0].as_int().unwrap(),
                args: args.iter().filter_map(|a| a.as_string()).collect(),
            }
        })
        .collect();
    out.sort_by_key(|l| l.id);
    out
}

/// The newest log sequence number so far (-1 if none).
pub fn last_logged(server: &RedisServer) -> i64 {
    command_log(server).last().map_or(-1, |l| l.id)
}

/// The logged script calls after `after` whose arguments include all of `needles`.
pub fn logged_after(server: &RedisServer, after: i64, needles: &[&str]) -> Vec<Logged> {
    command_log(server)
        .into_iter()
        .filter(|l| l.id > after && needles.iter().all(|n| l.args.iter().any(|a| a == n)))
        .collect()
}

/// Waits (bounded) until at least one connection holds bytes in `dir`; returns every
/// connection that does.
pub async fn conns_holding(proxy: &FaultProxy, dir: Direction, what: &str) -> Vec<ConnId> {
    eventually(Duration::from_secs(3), what, || async {
        let c = proxy.conns_holding(dir);
        (!c.is_empty()).then_some(c)
    })
    .await
}

/// The one connection of a client behind `proxy` that carries no pool traffic: its subscriber.
/// `poke` must send a few commands over the pool (round-robin over every pool connection).
pub async fn subscriber_conn<F, Fut>(proxy: &FaultProxy, mut poke: F) -> ConnId
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let before: Vec<(ConnId, u64)> = proxy
        .conns()
        .into_iter()
        .map(|c| (c, proxy.conn_bytes(c, Direction::Up)))
        .collect();
    for _ in 0..24 {
        poke().await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let idle: Vec<ConnId> = before
        .iter()
        .filter(|(c, b)| proxy.conn_bytes(*c, Direction::Up) == *b)
        .map(|(c, _)| *c)
        .collect();
    assert_eq!(
        idle.len(),
        1,
        "expected exactly one idle (subscriber) connection: {idle:?} of {before:?}"
    );
    idle[0]
}

/// A client behind a fresh `FaultProxy` to `server` (command timeout `command_timeout`), and
/// the proxy's id of that client's subscriber connection, so a test can slow or cut the
/// subscriber alone.
pub async fn proxied_waiter(
    server: &RedisServer,
    command_timeout: Duration,
) -> (FaultProxy, relock::Client, ConnId) {
    let (proxy, client) = client_behind_proxy(server, command_timeout).await;
    let probe = client.lock("proxied-waiter:probe");
    let sub = subscriber_conn(&proxy, || {
        let p = probe.clone();
        async move {
            p.is_locked().await.unwrap();
        }
    })
    .await;
    (proxy, client, sub)
}

/// Polls `fut` (an acquire or a release) with the replies from Redis frozen at `proxy`, until
/// `key` on `server` exists (`exists`) or not: the command ran on the server and its reply is
/// held back. Returns the future, still pending, and leaves the replies frozen.
pub async fn ran_with_reply_held<F>(
    proxy: &FaultProxy,
    server: &RedisServer,
    key: &str,
    exists: bool,
    mut fut: std::pin::Pin<Box<F>>,
) -> std::pin::Pin<Box<F>>
where
    F: std::future::Future,
{
    proxy.set(Direction::Down, relock_testkit::Mode::Freeze);
    let want = i64::from(exists);
    tokio::select! {
        _ = &mut fut => panic!("`{key}`'s command completed with replies frozen"),
        _ = eventually(Duration::from_secs(3), "the command run on the server", || async {
            (server.cmd(&["EXISTS", key]).unwrap().as_int() == Some(want)).then_some(())
        }) => {}
    }
    fut
}

/// A waiter's lock: when it took the lock, and its guard.
pub type Waiter = tokio::task::JoinHandle<relock::Result<(Instant, relock::LockGuard)>>;

/// Releases `held` while `channel` has no subscriber on the server (the waiter's SUBSCRIBE
/// still on the wire; `scenario` says why it must not have landed yet), then returns how long
/// after the release `waiter` (`what`) took the lock.
pub async fn release_before_subscribed(
    server: &RedisServer,
    channel: &str,
    held: relock::LockGuard,
    waiter: Waiter,
    what: &str,
    scenario: &str,
) -> Duration {
    assert_eq!(server.pubsub_numsub(channel).unwrap(), 0, "{scenario}");
    let released = Instant::now();
    held.unlock().await.unwrap();
    let (got_at, guard) = bounded(Duration::from_secs(15), what, waiter)
        .await
        .unwrap()
        .unwrap();
    drop(guard);
    got_at - released
}

/// `holder` takes `name`; a waiter of `waiter_client` parks on it; the waiter client's
/// subscriber connection `sub` goes silent both ways (half-open: replies and pushes dropped, no
/// RST) for 3 s; then the release. Returns how long after the release the waiter took the lock.
pub async fn waited_behind_a_silent_subscriber(
    server: &RedisServer,
    proxy: &FaultProxy,
    sub: ConnId,
    holder: &relock::Client,
    waiter_client: &relock::Client,
    name: &str,
) -> Duration {
    let held = holder.lock(name).lock().await.unwrap();
    let waiter = spawn_parked_waiter(server, waiter_client, waiter_client.lock(name)).await;
    wait_until(Duration::from_secs(3), "the waiter parked", || async {
        waiter_client.parked_waiters() == 1
    })
    .await
    .unwrap();
    proxy.set_conn(sub, Direction::Down, Some(Mode::Blackhole));
    proxy.set_conn(sub, Direction::Up, Some(Mode::Blackhole));
    tokio::time::sleep(Duration::from_secs(3)).await;
    let released = Instant::now();
    held.unlock().await.unwrap();
    let (got_at, g) = bounded(Duration::from_secs(20), "waiter", waiter)
        .await
        .unwrap()
        .unwrap();
    drop(g);
    got_at - released
}

/// A fair lock `name` held by a client of its own, and one waiter of `waiter_client` parked in
/// its line. Returns the holder's client and guard, the waiter's task (when it took the lock,
/// and its guard) and the waiter's field in the line.
pub async fn fair_waiter_behind_a_holder(
    s: &relock_testkit::RedisServer,
    name: &'static str,
    waiter_client: &relock::Client,
) -> (
    relock::Client,
    relock::LockGuard,
    tokio::task::JoinHandle<(Instant, relock::LockGuard)>,
    String,
) {
    let holder_client = client(s).await;
    let holder = holder_client.fair_lock(name).lock().await.unwrap();
    let lock = waiter_client.fair_lock(name);
    let waiter = spawn_in_line(s, name, 1, async move {
        let g = lock.lock().await.unwrap();
        (Instant::now(), g)
    })
    .await;
    wait_until(Duration::from_secs(3), "the waiter parked", || async {
        waiter_client.parked_waiters() == 1
    })
    .await
    .unwrap();
    let field = fair_line(s, name)[0].clone();
    (holder_client, holder, waiter, field)
}
