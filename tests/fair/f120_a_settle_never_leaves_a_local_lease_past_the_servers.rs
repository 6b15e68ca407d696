//! A handed-over hold is brought to its own (shorter) watchdog lease at its first renewal. A
//! fixed-lease re-entry or an extension of that hold, sent before the settle and answered
//! after it (its reply held up on its pool connection), never leaves the local lease past the
//! server's: while another client holds the lock, this hold is lost, never still held.
use std::time::Duration;

use relock_testkit::{Direction, FaultProxy, Mode};
use relock_tests::*;
use tokio::time::{sleep, sleep_until, Instant};

const W: Duration = Duration::from_millis(1500);

async fn setup(
    name: &'static str,
) -> (
    RedisServer,
    FaultProxy,
    relock::Client,
    relock::Lock,
    relock::LockGuard,
    Instant,
) {
    let server = server();
    let proxy = FaultProxy::start(&server.addr()).unwrap();
    let a = fair_client(&server, Duration::from_secs(5)).await;
    let b = relock::Client::builder()
        .url(proxy.url())
        .watchdog_lease(W)
        .fair_heartbeat(Duration::from_secs(5))
        .command_timeout(Duration::from_secs(5))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    // Warm-up on another name: every script this test uses is loaded (no NOSCRIPT round trip
    // later).
    {
        let wname = format!("{name}-warm");
        let ga = a.fair_lock(&wname).lock().await.unwrap();
        let l = b.fair_lock(&wname);
        let un = tokio::spawn(async move {
            sleep(Duration::from_millis(500)).await;
            ga.unlock().await.unwrap();
        });
        let g = l.lock().await.unwrap();
        un.await.unwrap();
        let g2 = g
            .scope(l.clone().with_lease(Duration::from_secs(3)).lock())
            .await
            .unwrap();
        g.extend(Duration::from_secs(3)).await.unwrap();
        drop(g2);
        // Past the first renewal (whose settle skips a hold with a fixed guard); then one
        // more handoff without it, so that the settle script itself is loaded too.
        sleep(W).await;
        g.unlock().await.unwrap();
        let ga = a.fair_lock(&wname).lock().await.unwrap();
        let un = tokio::spawn(async move {
            sleep(Duration::from_millis(500)).await;
            ga.unlock().await.unwrap();
        });
        let g = l.lock().await.unwrap();
        un.await.unwrap();
        sleep(W).await;
        g.unlock().await.unwrap();
    }
    let ga = a.fair_lock(name).lock().await.unwrap();
    let lock = b.fair_lock(name);
    let unlock = tokio::spawn(async move {
        sleep(Duration::from_millis(500)).await;
        ga.unlock().await.unwrap();
        a
    });
    let g = lock.lock().await.unwrap();
    let granted = Instant::now();
    let _a = unlock.await.unwrap();
    eprintln!("handed over: local remaining {:?}", g.remaining());
    assert!(g.remaining() > W, "a handoff's first lease");
    (server, proxy, b, lock, g, granted)
}

/// Holds the reply of `op` (sent now) on its connection past the settle; delivers every other
/// reply (the settle's) first.
async fn hold_back<F: std::future::Future>(
    proxy: &FaultProxy,
    granted: Instant,
    op: F,
) -> F::Output {
    proxy.set(Direction::Down, Mode::Freeze);
    sleep(Duration::from_millis(30)).await;
    let before = proxy.conns_holding(Direction::Down);
    tokio::pin!(op);
    let ctrl = async {
        sleep(Duration::from_millis(100)).await;
        let held: Vec<_> = proxy
            .conns_holding(Direction::Down)
            .into_iter()
            .filter(|c| !before.contains(c))
            .collect();
        eprintln!("op's reply held on {held:?} (before: {before:?})");
        sleep_until(granted + W / 3 + Duration::from_millis(300)).await;
        eprintln!("holding now: {:?}", proxy.conns_holding(Direction::Down));
        for c in &held {
            proxy.set_conn(*c, Direction::Down, Some(Mode::Freeze));
        }
        proxy.set(Direction::Down, Mode::Pass);
        sleep(Duration::from_millis(200)).await;
        for c in &held {
            proxy.set_conn(*c, Direction::Down, None);
        }
    };
    let (r, ()) = tokio::join!(op, ctrl);
    r
}

#[tokio::test]
async fn a_fixed_lease_reentry_answered_after_the_settle() {
    let (server, _proxy_keep, b, lock, g, granted) = setup("f120a").await;
    let proxy = &_proxy_keep;
    sleep_until(granted + Duration::from_millis(300)).await;
    let g2 = hold_back(
        proxy,
        granted,
        g.scope(lock.clone().with_lease(Duration::from_secs(30)).lock()),
    )
    .await
    .unwrap();
    let pttl = server.cmd(&["PTTL", "f120a"]).unwrap().as_int().unwrap();
    eprintln!(
        "after: fixed guard's local remaining {:?}, server PTTL {pttl} ms",
        g2.remaining()
    );
    // The watchdog guard goes: renewals stop; only the 30 s fixed guard is left.
    drop(g);
    let c = client(&server).await;
    let gc = c
        .fair_lock("f120a")
        .try_lock_for(Duration::from_secs(6))
        .await
        .unwrap();
    eprintln!(
        "c acquired: {}; b's fixed guard lost: {}, local remaining {:?}",
        gc.is_some(),
        g2.is_lost(),
        g2.remaining()
    );
    assert!(
        gc.is_none() || g2.is_lost(),
        "DOUBLE GRANT: c holds rv1 while b's guard is not lost ({:?} left locally)",
        g2.remaining()
    );
    drop(b);
}

#[tokio::test]
async fn an_extension_answered_after_the_settle() {
    let (server, proxy, b, _lock, g, granted) = setup("f120b").await;
    sleep_until(granted + Duration::from_millis(300)).await;
    hold_back(&proxy, granted, g.extend(Duration::from_secs(30)))
        .await
        .unwrap();
    let pttl = server.cmd(&["PTTL", "f120b"]).unwrap().as_int().unwrap();
    eprintln!(
        "after: local remaining {:?}, server PTTL {pttl} ms",
        g.remaining()
    );
    // b is cut off (a partition): the watchdog can no longer renew.
    proxy.set_both(Mode::Blackhole);
    let c = client(&server).await;
    let gc = c
        .fair_lock("f120b")
        .try_lock_for(Duration::from_secs(6))
        .await
        .unwrap();
    eprintln!(
        "c acquired: {}; b's guard lost: {}, local remaining {:?}",
        gc.is_some(),
        g.is_lost(),
        g.remaining()
    );
    assert!(
        gc.is_none() || g.is_lost(),
        "DOUBLE GRANT: c holds rv2 while b's guard is not lost ({:?} left locally)",
        g.remaining()
    );
    drop(b);
}
