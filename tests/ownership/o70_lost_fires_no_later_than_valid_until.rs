//! `lost()` is never late: with Redis frozen (renewals fail) it resolves at the hold's local
//! `valid_until`, not at the end of a failed renewal round. And a hold granted to an attempt
//! that races `shutdown()` is released and reported lost like every other hold.

use std::time::{Duration, Instant};

use relock_tests::*;

/// Resumes a SIGSTOPped server when dropped, also when an assertion fails.
struct Resume<'a>(&'a RedisServer);

impl Drop for Resume<'_> {
    fn drop(&mut self) {
        let _ = self.0.resume();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_fires_no_later_than_valid_until() {
    let server = server();

    // 1. Renewals fail: lost() at valid_until.
    let c = client_with_lease(&server, Duration::from_millis(900)).await;
    let g = c.lock("o70").lock().await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await; // at least one renewal
    assert!(!g.is_lost());
    server.pause().unwrap();
    let resume = Resume(&server);
    // A renewal the server answered just before the stop is taken in first.
    tokio::time::sleep(Duration::from_millis(30)).await;
    let vu = g.valid_until();
    let ahead = vu.saturating_duration_since(Instant::now());
    assert!(
        ahead > Duration::from_millis(200),
        "valid_until only {ahead:?} ahead"
    );
    bounded(
        Duration::from_secs(3),
        "lost() while Redis is frozen",
        g.lost(),
    )
    .await;
    let at = Instant::now();
    assert_eq!(
        g.valid_until(),
        vu,
        "valid_until moved while Redis was frozen"
    );
    assert!(
        at <= vu + Duration::from_millis(60),
        "lost() resolved {:?} after valid_until",
        at - vu
    );
    assert!(
        at + Duration::from_millis(100) >= vu,
        "lost() resolved {:?} before valid_until",
        vu - at
    );
    assert!(g.is_lost());
    drop(resume);
    let r = bounded(
        Duration::from_secs(3),
        "unlock of the lost hold",
        g.unlock(),
    )
    .await;
    assert!(matches!(r, Err(relock::Error::LockLost { .. })), "{r:?}");
    assert_eq!(c.held_locks(), 0);
    assert_nothing_left(&server).await;

    // 2. An attempt in flight when shutdown starts, while the client holds another lock:
    // one attempt not yet run by the server (writes paused), and one run whose reply is still
    // on its way (replies delayed by a proxy).
    let c = client(&server).await;
    race_shutdown(&server, &c, "o70:paused", || {
        server.cmd(&["CLIENT", "PAUSE", "300", "WRITE"]).unwrap();
    })
    .await;

    let proxy = relock_testkit::FaultProxy::start(&server.addr()).unwrap();
    let c = relock::Client::builder()
        .url(proxy.url())
        .command_timeout(Duration::from_secs(1))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    race_shutdown(&server, &c, "o70:late-reply", || {
        proxy.set(
            relock_testkit::Direction::Down,
            relock_testkit::Mode::Delay(Duration::from_millis(300)),
        )
    })
    .await;
    proxy.heal();
    assert_nothing_left(&server).await;
}

/// Takes `<name>:held`, makes commands slow (`slow`: about 300 ms until a reply), starts
/// `lock()` on `name`, and shuts `c` down 50 ms later. The racing `lock()` returns `Shutdown`
/// or a guard; every guard reports itself lost by the time shutdown returned (within 100 ms),
/// and nothing of either lock is left on the server.
async fn race_shutdown(server: &RedisServer, c: &relock::Client, name: &str, slow: impl FnOnce()) {
    let held_name = format!("{name}:held");
    let held = c.lock(held_name.as_str()).lock().await.unwrap();
    slow();
    let lock = c.lock(name);
    let started = Instant::now();
    let attempt = tokio::spawn(async move { lock.lock().await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    bounded(Duration::from_secs(3), "shutdown", c.shutdown()).await;
    let shut = Instant::now();
    let r = bounded(Duration::from_secs(3), "the racing lock()", attempt)
        .await
        .unwrap();
    let mut guards = vec![("the held lock", held)];
    match r {
        Err(relock::Error::Shutdown) => {}
        Ok(g) => guards.push(("the hold granted during shutdown", g)),
        Err(e) => panic!("{name}: the racing lock() returned {e:?}"),
    }
    for (what, g) in &guards {
        bounded(
            Duration::from_secs(3),
            &format!("{name}: lost() of {what}"),
            g.lost(),
        )
        .await;
        let late = shut.elapsed();
        assert!(
            late < Duration::from_millis(100),
            "{name}: lost() of {what} resolved {late:?} after shutdown returned"
        );
        assert!(g.is_lost());
    }
    assert!(
        shut >= started + Duration::from_millis(250),
        "{name}: shutdown returned {:?} into a 300 ms delay: it did not wait for the attempt",
        shut - started
    );
    assert_eq!(c.held_locks(), 0, "{name}");
    let left = wait_until(Duration::from_secs(3), "both locks released", || async {
        server.cmd(&["EXISTS", name, &held_name]).unwrap().as_int() == Some(0)
    })
    .await;
    if let Err(e) = left {
        panic!(
            "{name}: {e}: PTTL {:?}, {held_name} PTTL {:?}",
            server.cmd(&["PTTL", name]).unwrap().as_int(),
            server.cmd(&["PTTL", &held_name]).unwrap().as_int()
        );
    }
    drop(guards);
}
