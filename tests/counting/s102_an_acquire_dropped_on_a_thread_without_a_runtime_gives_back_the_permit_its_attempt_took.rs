//! An `acquire` future polled on the client's runtime and then dropped on a thread with no
//! tokio runtime (a `Drop` of a struct moved to `std::thread`), after its attempt's task has
//! ended: either the attempt's reply was lost (it may have taken the permit), or the reply
//! said the permit was taken but the caller was not polled again to claim it. The drop must
//! give the permit back through the client's runtime, as a guard dropped off the runtime
//! does; shutdown, with Redis reachable, must leave the semaphore at its one permit.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use relock_tests::*;

/// A waker that records that it was woken: the attempt's task has ended.
struct Woken(AtomicBool);

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Polls an acquire once (its attempt is sent, its reply held), lets `reply` lose or deliver
/// the reply, waits until the attempt's task has ended, then drops the acquire on a plain
/// thread, and shuts the client down. Returns the count as it was before shutdown and after.
async fn dropped_off_the_runtime(name: &str, lose: bool) -> (Option<String>, Option<String>) {
    let server = server();
    let (proxy, c, sem, frozen) = crate::one_permit_behind_a_proxy(&server, name).await;
    let woken = Arc::new(Woken(AtomicBool::new(false)));
    let waker = Waker::from(woken.clone());
    let mut acquire = Box::pin(sem.acquire(1));
    assert!(acquire
        .as_mut()
        .poll(&mut Context::from_waker(&waker))
        .is_pending());
    crate::permit_taken(&server, name).await;
    if lose {
        lose_replies(&proxy, &frozen);
    } else {
        proxy.clear_overrides();
    }
    wait_until(
        Duration::from_secs(5),
        "the attempt's task to end",
        || async { woken.0.load(Ordering::SeqCst) },
    )
    .await
    .unwrap();
    std::thread::scope(|s| {
        s.spawn(move || drop(acquire));
    });
    let _ = wait_until(Duration::from_secs(3), "the permit given back", || async {
        crate::get(&server, name).as_deref() == Some("1")
    })
    .await;
    let before = crate::get(&server, name);
    bounded(Duration::from_secs(15), "shutdown", c.shutdown()).await;
    (before, crate::get(&server, name))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_its_reply_was_lost() {
    let (before, after) = dropped_off_the_runtime("s102a", true).await;
    assert_eq!(
        (before.as_deref(), after.as_deref()),
        (Some("1"), Some("1")),
        "the permit the dropped acquire's attempt may have taken is not back (before shutdown, after it)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_its_reply_said_taken() {
    let (before, after) = dropped_off_the_runtime("s102b", false).await;
    assert_eq!(
        (before.as_deref(), after.as_deref()),
        (Some("1"), Some("1")),
        "the permit the dropped acquire's attempt took is not back (before shutdown, after it)"
    );
}
