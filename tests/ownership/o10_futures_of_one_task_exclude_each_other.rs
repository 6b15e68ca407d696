//! Futures polled by one task are different holders: branches of `join!`, arms of a
//! `select!` loop, a set of futures polled together (what `FuturesUnordered` does) and a
//! bounded-concurrency driver (what `for_each_concurrent` does) each run a non-atomic
//! GET / SET increment under the lock, with awaits inside. No update is lost, never more than
//! one section is inside at a time, and every section has its own (rising) fencing token.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::{pin, Pin};
use std::task::Poll;
use std::time::Duration;

use fred::interfaces::KeysInterface;
use relock_tests::*;

use crate::support::raw_redis;

/// Who is inside, at most how many at once, and the token of every section in entry order.
#[derive(Default)]
struct Probe {
    inside: Cell<usize>,
    max: Cell<usize>,
    tokens: RefCell<Vec<u64>>,
}

/// One critical section: lock, read the counter, yield and sleep, write it back + 1, unlock.
async fn critical(lock: &relock::Lock, redis: &fred::clients::Client, key: &str, probe: &Probe) {
    let g = lock.lock().await.unwrap();
    probe.inside.set(probe.inside.get() + 1);
    probe.max.set(probe.max.get().max(probe.inside.get()));
    probe.tokens.borrow_mut().push(g.fencing_token());
    let v: Option<i64> = redis.get(key).await.unwrap();
    tokio::task::yield_now().await;
    tokio::time::sleep(Duration::from_millis(3)).await;
    let _: () = redis
        .set(key, v.unwrap_or(0) + 1, None, None, false)
        .await
        .unwrap();
    probe.inside.set(probe.inside.get() - 1);
    g.unlock().await.unwrap();
}

async fn worker(
    n: usize,
    lock: &relock::Lock,
    redis: &fred::clients::Client,
    key: &str,
    probe: &Probe,
) {
    for _ in 0..n {
        critical(lock, redis, key, probe).await;
    }
}

type Local<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

/// Polls all of `futs` from the calling task until every one is done.
async fn poll_all(futs: Vec<Local<'_>>) {
    let mut slots: Vec<Option<Local<'_>>> = futs.into_iter().map(Some).collect();
    std::future::poll_fn(|cx| {
        for slot in slots.iter_mut() {
            if let Some(f) = slot {
                if f.as_mut().poll(cx).is_ready() {
                    *slot = None;
                }
            }
        }
        if slots.iter().all(Option::is_none) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}

/// Runs `f` for every item of `items`, at most `limit` at a time, all polled by the calling
/// task (as `StreamExt::for_each_concurrent`).
async fn for_each_concurrent<'a, I, F>(items: I, limit: usize, f: F)
where
    I: IntoIterator,
    F: Fn(I::Item) -> Local<'a>,
{
    let mut items = items.into_iter();
    let mut running: Vec<Local<'a>> = Vec::new();
    std::future::poll_fn(|cx| loop {
        while running.len() < limit {
            match items.next() {
                Some(i) => running.push(f(i)),
                None => break,
            }
        }
        let before = running.len();
        running.retain_mut(|fut| fut.as_mut().poll(cx).is_pending());
        if running.is_empty() {
            return Poll::Ready(());
        }
        if running.len() == before {
            return Poll::Pending;
        }
    })
    .await
}

fn check(server: &RedisServer, key: &str, probe: &Probe, expected: usize, what: &str) {
    let total: i64 = support_get(server, key);
    let tokens = probe.tokens.borrow().clone();
    assert_eq!(
        (total, probe.max.get()),
        (expected as i64, 1),
        "{what}: (total, max simultaneous holders); tokens {tokens:?}"
    );
    assert_eq!(tokens.len(), expected, "{what}: sections entered");
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "{what}: every section is its own hold with a rising token: {tokens:?}"
    );
    server.cmd(&["DEL", key]).unwrap();
}

fn support_get(server: &RedisServer, key: &str) -> i64 {
    server.cmd(&["GET", key]).unwrap().as_int().unwrap_or(0)
}

#[tokio::test]
async fn futures_of_one_task_exclude_each_other() {
    let server = server();
    let c = client(&server).await;
    let redis = raw_redis(&server).await;
    let limit = Duration::from_secs(15);

    // join! of three critical-section loops.
    let (lock, key, probe) = (c.lock("o10:join"), "o10:join:n", Probe::default());
    bounded(limit, "join!", async {
        tokio::join!(
            worker(4, &lock, &redis, key, &probe),
            worker(4, &lock, &redis, key, &probe),
            worker(4, &lock, &redis, key, &probe),
        )
    })
    .await;
    check(&server, key, &probe, 12, "join!");

    // A select! loop over three pinned workers.
    let (lock, key, probe) = (c.lock("o10:select"), "o10:select:n", Probe::default());
    bounded(limit, "select! loop", async {
        let mut a = pin!(worker(4, &lock, &redis, key, &probe));
        let mut b = pin!(worker(4, &lock, &redis, key, &probe));
        let mut d = pin!(worker(4, &lock, &redis, key, &probe));
        let (mut da, mut db, mut dd) = (false, false, false);
        while !(da && db && dd) {
            tokio::select! {
                _ = &mut a, if !da => da = true,
                _ = &mut b, if !db => db = true,
                _ = &mut d, if !dd => dd = true,
            }
        }
    })
    .await;
    check(&server, key, &probe, 12, "select! loop");

    // Four workers polled together by this task (what FuturesUnordered does).
    let (lock, key, probe) = (c.lock("o10:set"), "o10:set:n", Probe::default());
    bounded(
        limit,
        "futures polled together",
        poll_all(
            (0..4)
                .map(|_| Box::pin(worker(3, &lock, &redis, key, &probe)) as Local<'_>)
                .collect(),
        ),
    )
    .await;
    check(&server, key, &probe, 12, "futures polled together");

    // Twelve items, three at a time (what for_each_concurrent does).
    let (lock, key, probe) = (c.lock("o10:each"), "o10:each:n", Probe::default());
    bounded(
        limit,
        "for_each_concurrent",
        for_each_concurrent(0..12, 3, |_| {
            Box::pin(critical(&lock, &redis, key, &probe)) as Local<'_>
        }),
    )
    .await;
    check(&server, key, &probe, 12, "for_each_concurrent");

    assert_eq!(c.held_locks(), 0);
    assert_nothing_left(&server).await;
}
