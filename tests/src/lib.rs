//! Shared fixture for relock's integration tests: servers from the test kit, clients with
//! short timeouts, and the "nothing left behind" check.

use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use relock_testkit::{wait_until, RedisServer};

pub mod acl;
pub mod kinds;

/// Asserts that `r` is [`relock::Error::InvalidArgument`] naming `arg`, with a reason.
#[track_caller]
pub fn assert_invalid<T: std::fmt::Debug>(r: relock::Result<T>, arg: &str) {
    match r {
        Err(relock::Error::InvalidArgument { name, reason }) if name == arg => {
            assert!(!reason.is_empty())
        }
        other => panic!("expected InvalidArgument for `{arg}`, got {other:?}"),
    }
}

/// Asserts that `r` is [`relock::Error::InvalidArgument`] naming `arg`, whose reason says
/// `says` (what to pass).
#[track_caller]
pub fn assert_invalid_saying<T: std::fmt::Debug>(r: relock::Result<T>, arg: &str, says: &str) {
    match r {
        Err(relock::Error::InvalidArgument { name, reason }) if name == arg => {
            assert!(reason.contains(says), "`{arg}`: {reason}")
        }
        other => panic!("expected InvalidArgument for `{arg}`, got {other:?}"),
    }
}

/// Asserts that `r` is [`relock::Error::WrongType`] naming `key`.
#[track_caller]
pub fn assert_wrong_type<T: std::fmt::Debug>(r: relock::Result<T>, key: &str) {
    match r {
        Err(relock::Error::WrongType { key: k }) if k == key => {}
        other => panic!("expected WrongType for `{key}`, got {other:?}"),
    }
}

/// A fresh standalone server.
pub fn server() -> RedisServer {
    RedisServer::start().expect("start redis-server (run scripts/ensure-redis)")
}

/// A client on `server` with a watchdog lease of `lease` and short timeouts.
pub async fn client_with_lease(server: &RedisServer, lease: Duration) -> relock::Client {
    relock::Client::builder()
        .url(server.url())
        .watchdog_lease(lease)
        .command_timeout(Duration::from_secs(1))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .expect("connect")
}

/// [`client_with_lease`] whose holds do not listen on their locks' channels
/// (`ClientBuilder::watch_holds(false)`): for the holder in scenarios that count the waiters'
/// subscriptions on the server, where the holder's own would count as one.
pub async fn client_not_watching_holds(server: &RedisServer, lease: Duration) -> relock::Client {
    relock::Client::builder()
        .url(server.url())
        .watchdog_lease(lease)
        .watch_holds(false)
        .command_timeout(Duration::from_secs(1))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .expect("connect")
}

/// A client on `server` with default settings but short timeouts.
pub async fn client(server: &RedisServer) -> relock::Client {
    client_with_lease(server, Duration::from_secs(30)).await
}

/// Asserts that nothing is left: no keys (the fencing counter outlives a release by 1 s) and
/// no pub/sub channels, within a bounded wait.
pub async fn assert_nothing_left(server: &RedisServer) {
    let r = wait_until(
        Duration::from_secs(5),
        "no keys and no channels left",
        || async { server.dbsize().unwrap() == 0 && server.pubsub_channels().unwrap().is_empty() },
    )
    .await;
    if let Err(e) = r {
        panic!(
            "{e}: keys {:?}, channels {:?}",
            server.keys().unwrap(),
            server.pubsub_channels().unwrap()
        );
    }
}

/// Runs `f` to completion or panics after `limit`: no test can hang.
pub async fn bounded<F: std::future::Future>(limit: Duration, what: &str, f: F) -> F::Output {
    match tokio::time::timeout(limit, f).await {
        Ok(v) => v,
        Err(_) => panic!("`{what}` did not finish within {limit:?}"),
    }
}

/// Polls `f` once, in the calling task, and says what that poll gave. For "polled once, then
/// kept alive unpolled" scenarios. On a loaded machine a poll that only sends a command can
/// still see its reply (the thread stalls between the send and the look), so such a test
/// retries on `Ready` instead of assuming `Pending`.
pub async fn poll_once<F: std::future::Future + Unpin>(f: &mut F) -> std::task::Poll<F::Output> {
    std::future::poll_fn(|cx| std::task::Poll::Ready(std::pin::Pin::new(&mut *f).poll(cx))).await
}

/// With a reply held by `proxy` (`frozen`: the client's connections frozen towards it, as
/// `freeze_existing` returned them), starts `client.shutdown()` in a task, waits (bounded)
/// until `shutting_down` says shutdown has begun, then loses the held reply and lets traffic
/// pass again ([`lose_replies`]). Returns the shutdown task. For "an operation cut off during
/// shutdown" scenarios.
pub async fn shut_down_losing_the_held_reply<F, Fut>(
    proxy: &relock_testkit::FaultProxy,
    frozen: &[relock_testkit::ConnId],
    client: &relock::Client,
    mut shutting_down: F,
) -> tokio::task::JoinHandle<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let shutdown = {
        let c = client.clone();
        tokio::spawn(async move { c.shutdown().await })
    };
    wait_until(
        Duration::from_secs(3),
        "shutdown to begin",
        &mut shutting_down,
    )
    .await
    .unwrap();
    lose_replies(proxy, frozen);
    shutdown
}

/// Loses every reply held on the `frozen` connections, and any still on its way to them:
/// resets them all, then lets traffic pass again. Call it once the server has run the command
/// (its effect is seen there). Resetting only the connections that hold bytes is not enough:
/// another connection may hold an unrelated reply (a background `DEL` of a request key, a
/// keep-alive `PING`) while the awaited reply has not reached the proxy yet, and would then
/// pass once traffic flows again.
pub fn lose_replies(proxy: &relock_testkit::FaultProxy, frozen: &[relock_testkit::ConnId]) {
    for &id in frozen {
        proxy.reset_conn(id);
    }
    proxy.clear_overrides();
}

/// Starts a task that waits for `lock` (of `client`) and returns when it got it, and waits
/// (bounded) until that waiter is parked, so subscribed on the server. Counted on the client,
/// not by the channel's subscribers on the server: a holder's watch (`hold_watch`) may
/// subscribe to the same channel meanwhile.
pub async fn spawn_parked_waiter(
    server: &RedisServer,
    client: &relock::Client,
    lock: relock::Lock,
) -> tokio::task::JoinHandle<relock::Result<(std::time::Instant, relock::LockGuard)>> {
    let channel = format!("redisson_lock__channel:{{{}}}", lock.name());
    let before = client.parked_waiters();
    let waiter =
        tokio::spawn(async move { lock.lock().await.map(|g| (std::time::Instant::now(), g)) });
    wait_until(Duration::from_secs(2), "the waiter to park", || async {
        client.parked_waiters() > before && server.pubsub_numsub(&channel).unwrap() > 0
    })
    .await
    .unwrap();
    waiter
}

/// Waits (bounded) until `client` has no waiters left on `name`, locally and on the server.
pub async fn assert_no_waiters(server: &RedisServer, client: &relock::Client, name: &str) {
    let channel = format!("redisson_lock__channel:{{{name}}}");
    wait_until(
        Duration::from_secs(3),
        "waiters' subscriptions released",
        || async {
            client.subscribed_channels() == 0 && server.pubsub_numsub(&channel).unwrap() == 0
        },
    )
    .await
    .unwrap_or_else(|e| {
        panic!(
            "{e}: local channels {}, server NUMSUB {}",
            client.subscribed_channels(),
            server.pubsub_numsub(&channel).unwrap()
        )
    });
}

/// A client whose fair-lock waiters keep their place for `heartbeat` without a refresh.
pub async fn fair_client(server: &RedisServer, heartbeat: Duration) -> relock::Client {
    relock::Client::builder()
        .url(server.url())
        .fair_heartbeat(heartbeat)
        .command_timeout(Duration::from_secs(1))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .expect("connect")
}

/// A fair lock's line on the server, first waiter first (owner fields).
pub fn fair_line(server: &RedisServer, name: &str) -> Vec<String> {
    let key = format!("relock_fair_line:{{{name}}}");
    // The waiters are the members scored as tickets (µs); deadlines and first leases score
    // below.
    match server
        .cmd(&["ZRANGE", &key, "1000000000000000", "+inf", "BYSCORE"])
        .unwrap()
    {
        relock_testkit::Value::Array(Some(items)) => {
            items.iter().filter_map(|v| v.as_string()).collect()
        }
        _ => Vec::new(),
    }
}

/// A fair lock's grant record: the field a handoff gave the lock last, and its token.
pub fn fair_grant(server: &RedisServer, name: &str) -> Option<(String, String)> {
    let record = server
        .cmd(&["GET", &format!("relock_fair_grant:{{{name}}}")])
        .unwrap()
        .as_string()?;
    let (field, token) = record.rsplit_once('=').expect("<field>=<token>");
    Some((field.to_owned(), token.to_owned()))
}

/// A fair lock's waiters with their heartbeat deadlines (server ms), earliest deadline first.
pub fn fair_heartbeats(server: &RedisServer, name: &str) -> Vec<(String, i64)> {
    let key = format!("relock_fair_line:{{{name}}}");
    match server
        .cmd(&[
            "ZRANGE",
            &key,
            "1000000000000",
            "(1000000000000000",
            "BYSCORE",
            "WITHSCORES",
        ])
        .unwrap()
    {
        relock_testkit::Value::Array(Some(items)) => items
            .chunks(2)
            .filter_map(|p| {
                let member = p[0].as_string().unwrap();
                let field = member.strip_prefix("alive:")?.to_owned();
                Some((field, p[1].as_int().unwrap()))
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The server's clock in ms (`TIME`).
pub fn server_ms(server: &RedisServer) -> i64 {
    match server.cmd(&["TIME"]).unwrap() {
        relock_testkit::Value::Array(Some(t)) => {
            t[0].as_int().unwrap() * 1000 + t[1].as_int().unwrap() / 1000
        }
        other => panic!("TIME replied {other:?}"),
    }
}

/// Starts `f` (which waits for a fair lock) and waits, bounded, until the line on the server
/// has grown to `expect` waiters, so waiters enter the line in a known order.
pub async fn spawn_in_line<T, F>(
    server: &RedisServer,
    name: &str,
    expect: usize,
    f: F,
) -> tokio::task::JoinHandle<T>
where
    F: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let handle = tokio::spawn(f);
    wait_until(
        Duration::from_secs(3),
        "the waiter to join the line",
        || async { fair_line(server, name).len() == expect },
    )
    .await
    .unwrap();
    handle
}

pub use relock_testkit::RedisMasters;

/// `n` independent masters.
pub fn masters(n: usize) -> RedisMasters {
    RedisMasters::start(n).expect("start redis-servers (run scripts/ensure-redis)")
}

/// A quorum client over `masters` with a 50 ms node timeout, the given watchdog lease and
/// restart quarantine.
pub async fn quorum_client(
    masters: &RedisMasters,
    lease: Duration,
    quarantine: Duration,
) -> relock::QuorumClient {
    relock::QuorumClient::builder()
        .urls(masters.urls())
        .node_timeout(Duration::from_millis(50))
        .watchdog_lease(lease)
        .restart_quarantine(quarantine)
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .expect("connect to the masters")
}

/// A new fault proxy in front of master `i`, and `masters`' URLs with that node reached
/// through it: for quorum tests that hold, delay or cut one node's traffic.
pub fn urls_with_proxy(
    masters: &RedisMasters,
    i: usize,
) -> (relock_testkit::FaultProxy, Vec<String>) {
    let proxy = relock_testkit::FaultProxy::start(&masters[i].addr()).expect("start a proxy");
    let mut urls = masters.urls();
    urls[i] = proxy.url();
    (proxy, urls)
}

/// A quorum client builder over `urls` with `node_timeout` and no restart quarantine, for
/// tests that stop and start nodes at will.
pub fn quorum_builder(urls: Vec<String>, node_timeout: Duration) -> relock::QuorumClientBuilder {
    relock::QuorumClient::builder()
        .urls(urls)
        .node_timeout(node_timeout)
        .restart_quarantine(Duration::ZERO)
}

/// A quorum client over `urls` (no restart quarantine, `node_timeout`, a 2 s connect
/// timeout), warmed up on `warm_up_name` (every script loaded on every node): the usual start
/// of a quorum scenario with proxies in front of some nodes.
pub async fn warm_quorum_client(
    urls: Vec<String>,
    node_timeout: Duration,
    warm_up_name: &str,
) -> relock::QuorumClient {
    let client = quorum_builder(urls, node_timeout)
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .expect("connect to the masters");
    warm_up(&client, warm_up_name).await;
    client
}

/// Waits (bounded) until `name` exists on every one of `masters` (a hold's late votes too).
pub async fn wait_held_on_every_node(masters: &RedisMasters, name: &str) {
    wait_until(Duration::from_secs(2), "the hold on every node", || async {
        masters
            .servers()
            .iter()
            .all(|s| s.cmd(&["EXISTS", name]).ok().and_then(|v| v.as_int()) == Some(1))
    })
    .await
    .unwrap();
}

/// Locks and unlocks `name` once, so that every script is loaded on every node: a fault
/// injected afterwards hits the script call itself, not a `SCRIPT LOAD` or a NOSCRIPT retry.
pub async fn warm_up(client: &relock::QuorumClient, name: &str) {
    lock_and_unlock(&client.lock(name)).await;
    // The unlock returns once a majority answered; a slow node may still be between its
    // NOSCRIPT and the script's body, or (under load, past the node timeout) may not have
    // been sent the script at all yet. Load the scripts on every node that answers: a test
    // that then slows a node must not meet that NOSCRIPT, whose resend costs a round trip
    // (q100 once took three instead of one). Waiting for the client to load them was not
    // enough (q103 once waited 5 s for a node that had neither).
    for url in client.nodes() {
        let Some(port) = url
            .trim_end_matches('/')
            .rsplit(':')
            .next()
            .and_then(|p| p.parse::<u16>().ok())
        else {
            continue;
        };
        for script in [relock::lua::ACQUIRE, relock::lua::QUORUM_RELEASE] {
            // A node that is down (or not a plain server) is not loaded.
            let _ = relock_testkit::command_on_port(port, &["SCRIPT", "LOAD", script]);
        }
    }
}

/// One `lock()` and `unlock()` of `lock`, of any kind (a warm-up: connections up, scripts
/// loaded, so that a later EVALSHA meets no NOSCRIPT round trip).
pub async fn lock_and_unlock(lock: &impl relock::DistributedLock) {
    let guard = lock.lock().await.expect("lock");
    guard.unlock().await.expect("unlock");
}

/// A client on `server` through a new `FaultProxy`, with `command_timeout` and a 2 s connect
/// timeout; and the proxy.
pub async fn client_behind_proxy(
    server: &RedisServer,
    command_timeout: Duration,
) -> (relock_testkit::FaultProxy, relock::Client) {
    let proxy = relock_testkit::FaultProxy::start(&server.addr()).unwrap();
    let client = relock::Client::builder()
        .url(proxy.url())
        .command_timeout(command_timeout)
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .expect("connect through the proxy");
    (proxy, client)
}

/// Locks `name` with a fixed `lease`, and waits (bounded) until its hold is on `node`, which
/// may have answered after the majority did.
pub async fn hold_seen_on(
    client: &relock::QuorumClient,
    name: &str,
    lease: Duration,
    node: &RedisServer,
) -> relock::LockGuard {
    let guard = client.lock(name).with_lease(lease).lock().await.unwrap();
    wait_until(Duration::from_secs(2), "the hold on the node", || async {
        node.cmd(&["EXISTS", name]).ok().and_then(|v| v.as_int()) == Some(1)
    })
    .await
    .unwrap();
    guard
}

/// Asserts that nothing is left on any of `servers` (bounded wait); names the node otherwise.
pub async fn assert_nothing_left_on(servers: &[&RedisServer]) {
    let r = wait_until(
        Duration::from_secs(5),
        "no keys and no channels on any node",
        || async {
            servers
                .iter()
                .all(|s| s.dbsize().unwrap() == 0 && s.pubsub_channels().unwrap().is_empty())
        },
    )
    .await;
    if let Err(e) = r {
        let left: Vec<String> = servers
            .iter()
            .map(|s| {
                let ttls: Vec<String> = s
                    .keys()
                    .unwrap()
                    .iter()
                    .map(|k| {
                        format!(
                            "{k} (pttl {:?})",
                            s.cmd(&["PTTL", k]).ok().and_then(|v| v.as_int())
                        )
                    })
                    .collect();
                format!("{}: {ttls:?} {:?}", s.addr(), s.pubsub_channels().unwrap())
            })
            .collect();
        panic!("{e}: {left:?}");
    }
}

/// Calls `f` until it yields `Some`, within `limit` (bounded; panics naming `what`).
pub async fn eventually<T, F, Fut>(limit: Duration, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let slot = std::sync::Mutex::new(None);
    let r = wait_until(limit, what, || {
        let fut = f();
        let slot = &slot;
        async move {
            match fut.await {
                Some(v) => {
                    *slot.lock().unwrap() = Some(v);
                    true
                }
                None => false,
            }
        }
    })
    .await;
    if let Err(e) = r {
        panic!("{e}");
    }
    slot.into_inner()
        .unwrap()
        .expect("set when the wait succeeded")
}

/// Parks a waiter for `lock` on `client` (waits until `client.parked_waiters()` counts it),
/// releases `held`, and asserts the release woke the waiter within 500 ms (not the holder's
/// lease). Returns the waiter's guard.
pub async fn assert_release_wakes(
    client: &relock::Client,
    lock: relock::Lock,
    held: relock::LockGuard,
) -> relock::LockGuard {
    let before = client.parked_waiters();
    let waiter =
        tokio::spawn(async move { lock.lock().await.map(|g| (std::time::Instant::now(), g)) });
    wait_until(Duration::from_secs(10), "the waiter to park", || async {
        client.parked_waiters() > before
    })
    .await
    .unwrap();
    let released = std::time::Instant::now();
    held.unlock().await.unwrap();
    let (at, g) = bounded(Duration::from_secs(5), "woken waiter", waiter)
        .await
        .unwrap()
        .unwrap();
    let took = at - released;
    assert!(
        took < Duration::from_millis(500),
        "woken {took:?} after the release"
    );
    g
}

/// Starts `holder` (the `relock-test-holder` binary, `env!("CARGO_BIN_EXE_relock-test-holder")`)
/// as a fair waiter on `name` (heartbeat deadline `heartbeat_ms`) and waits, bounded, until
/// the line has `expect` waiters.
pub async fn spawn_waiter_process(
    holder: &str,
    server: &RedisServer,
    name: &str,
    heartbeat_ms: u64,
    expect: usize,
) -> std::process::Child {
    let child = std::process::Command::new(holder)
        .args([
            &server.url(),
            name,
            "30000",
            "fair",
            &heartbeat_ms.to_string(),
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_until(
        Duration::from_secs(5),
        "the process to join the line",
        || async { fair_line(server, name).len() == expect },
    )
    .await
    .unwrap();
    child
}

/// Everything a `tracing-subscriber` fmt layer writes (`.with_writer(move || captured.clone())`),
/// for tests that read relock's log events and spans.
#[derive(Debug, Clone, Default)]
pub struct Captured(pub Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// What was written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// Takes what was written so far.
    pub fn take(&self) -> String {
        String::from_utf8(std::mem::take(&mut *self.0.lock().unwrap())).unwrap()
    }

    /// Lines written so far that contain `needle`.
    pub fn count(&self, needle: &str) -> usize {
        self.text().lines().filter(|l| l.contains(needle)).count()
    }
}

/// Captures, on this thread, the events of at most `max` level whose target starts with
/// `target` (`""` for every crate), until the returned guard is dropped.
///
/// Why not `tracing::subscriber::set_default`: tracing caches each callsite's interest
/// process-wide. A callsite first reached on another test's thread while that thread's
/// subscriber (or none) ignored it can stay disabled for a subscriber set on this thread a
/// moment later, so a test saw an empty capture now and then. Here one global subscriber
/// enables every callsite "sometimes" and decides per event from this thread's capture, so
/// tests of one binary that capture in parallel do not see each other. Tests that capture run
/// on a current-thread runtime, so every task's events are emitted on the test's thread.
pub fn capture_traces(max: tracing::Level, target: &'static str) -> TraceCapture {
    routed::install();
    let captured = Captured::default();
    routed::CURRENT.with(|c| {
        *c.borrow_mut() = Some(routed::Route {
            captured: captured.clone(),
            max,
            target,
        })
    });
    TraceCapture { captured }
}

/// What [`capture_traces`] captured; capturing stops when it is dropped.
#[derive(Debug)]
pub struct TraceCapture {
    captured: Captured,
}

impl std::ops::Deref for TraceCapture {
    type Target = Captured;
    fn deref(&self) -> &Captured {
        &self.captured
    }
}

impl Drop for TraceCapture {
    fn drop(&mut self) {
        routed::CURRENT.with(|c| c.borrow_mut().take());
    }
}

mod routed {
    use std::cell::RefCell;
    use std::sync::Once;

    use tracing::subscriber::Interest;
    use tracing::Metadata;
    use tracing_subscriber::layer::{Context, Filter, SubscriberExt};
    use tracing_subscriber::Layer;

    use super::Captured;

    pub(super) struct Route {
        pub(super) captured: Captured,
        pub(super) max: tracing::Level,
        pub(super) target: &'static str,
    }

    thread_local! {
        pub(super) static CURRENT: RefCell<Option<Route>> = const { RefCell::new(None) };
    }

    fn wanted(meta: &Metadata<'_>) -> Option<Captured> {
        CURRENT.with(|c| {
            c.borrow()
                .as_ref()
                .filter(|r| meta.level() <= &r.max && meta.target().starts_with(r.target))
                .map(|r| r.captured.clone())
        })
    }

    /// Enabled per event, never cached per callsite.
    struct ThisThread;

    impl<S> Filter<S> for ThisThread {
        fn enabled(&self, meta: &Metadata<'_>, _: &Context<'_, S>) -> bool {
            wanted(meta).is_some()
        }
        fn callsite_enabled(&self, _: &'static Metadata<'static>) -> Interest {
            Interest::sometimes()
        }
    }

    /// Writes to this thread's capture (or nowhere, if it ended meanwhile).
    struct Writer;

    impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Writer {
        type Writer = Box<dyn std::io::Write>;
        fn make_writer(&'a self) -> Self::Writer {
            Box::new(std::io::sink())
        }
        fn make_writer_for(&'a self, meta: &Metadata<'_>) -> Self::Writer {
            match wanted(meta) {
                Some(c) => Box::new(c),
                None => Box::new(std::io::sink()),
            }
        }
    }

    pub(super) fn install() {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            let layer = tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_writer(Writer)
                .with_filter(ThisThread);
            tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
                .expect("capture_traces owns this binary's global subscriber");
        });
    }
}

/// Keeps the permits of a `Semaphore::acquire` taken without a guard (Redisson's way), for the
/// scenarios written against `acquire` → `()`: `sem.acquire(n).await.map(kept)`.
pub fn kept(permits: relock::SemaphorePermits) {
    permits.forget();
}

/// As [`kept`], for the `try_` forms: whether the permits were taken (and kept).
pub fn taken(permits: Option<relock::SemaphorePermits>) -> bool {
    permits.map(relock::SemaphorePermits::forget).is_some()
}
