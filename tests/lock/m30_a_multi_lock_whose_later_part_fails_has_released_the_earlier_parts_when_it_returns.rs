//! `MultiLock::lock`/`try_lock`/`try_lock_for` document: "any part's error (every part already
//! taken is released first)" and "All or nothing. If a part cannot be had in time, or fails,
//! every part already taken is released before the call returns." The `None` path does wait for
//! the releases (`release_all`), but a part's error returns through `?`, which only drops the
//! guards taken so far: their releases run in the background, after the error has reached
//! the caller. Here the second part's key holds a string (WRONGTYPE) and the link has 300 ms
//! of latency: when `try_lock` returns its error, the first part is still held by this
//! client, and another client's `try_lock` of it fails. (A caller that then exits, its runtime
//! gone, leaves the part held until its lease ends.)

use std::time::Duration;

use relock::{Error, MultiLock};
use relock_testkit::{Direction, FaultProxy, Mode};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_lock_whose_later_part_fails_has_released_the_earlier_parts_when_it_returns() {
    let server = server();
    let proxy = FaultProxy::start(&server.addr()).unwrap();
    let a = relock::Client::builder()
        .url(proxy.url())
        .command_timeout(Duration::from_secs(2))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .expect("connect through the proxy");
    let other = client(&server).await;
    server.cmd(&["SET", "m30:b", "not a lock"]).unwrap();
    // Parts in resource order: m30:a (free), then m30:b (a string: WRONGTYPE).
    let multi = MultiLock::new().with(a.lock("m30:b")).with(a.lock("m30:a"));
    proxy.set(Direction::Up, Mode::Delay(Duration::from_millis(300)));
    let r = multi.try_lock().await;
    assert!(matches!(&r, Err(Error::WrongType { .. })), "{r:?}");
    // "every part already taken is released first":
    let held_after = server.cmd(&["EXISTS", "m30:a"]).unwrap().as_int();
    let free = other.lock("m30:a").try_lock().await.unwrap();
    assert!(
        held_after == Some(0) && free.is_some(),
        "try_lock returned {r:?}, and then m30:a still existed ({held_after:?}) and another \
         client's try_lock got {:?}: the part taken before the failing one was not released \
         before the call returned",
        free.as_ref().map(|g| g.fencing_token())
    );
    drop(free);
    proxy.set(Direction::Up, Mode::Pass);
    a.shutdown().await;
    other.shutdown().await;
}
