//! A `lock()` future of a free lock is polled once (its acquire is sent, alone, on one of the
//! client's connection slots of the coalescer) and then kept alive, unpolled, as after a
//! `select!` over `&mut lock` that took the other branch. The client has one connection
//! (`connections(1)`; with the default 4, four such futures do the same). Every other plain
//! lock and unlock of this client must still go through: the kept future's grant is the only
//! thing waiting for its caller.

use std::task::Poll;
use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_kept_alive_unpolled_does_not_stall_the_clients_other_locks_and_unlocks() {
    let s = server();
    let c = relock::Client::builder()
        .url(s.url())
        .connections(1)
        .command_timeout(Duration::from_secs(1))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .expect("connect");
    let held = c.lock("t78-held");
    let g = held.lock().await.unwrap();
    // Polled once, then kept but not polled. A first poll only sends the acquire, but a
    // loaded machine can stall this thread between the send and the look at the reply, and the
    // whole acquire then ends in that one poll: that round proves nothing, so it is undone and
    // the next name tried.
    let candidates: Vec<_> = (0..20).map(|i| c.lock(format!("t78-kept-{i}"))).collect();
    let mut kept = None;
    for lock in &candidates {
        let mut fut = Box::pin(lock.lock());
        match poll_once(&mut fut).await {
            Poll::Pending => {
                kept = Some((lock.name().to_owned(), fut));
                break;
            }
            Poll::Ready(r) => r.expect("a free lock").unlock().await.expect("unlock"),
        }
    }
    let (kept_name, kept) =
        kept.expect("in 20 rounds, a first poll of lock() that did not finish it");
    wait_until(
        Duration::from_secs(3),
        "the kept lock()'s grant on the server",
        || async { s.cmd(&["EXISTS", &kept_name]).unwrap().as_int() == Some(1) },
    )
    .await
    .unwrap();
    // An unrelated unlock of this client.
    let unlocked = tokio::time::timeout(Duration::from_secs(5), g.unlock()).await;
    let held_on_server = s.cmd(&["EXISTS", "t78-held"]).unwrap().as_int();
    // An unrelated lock of this client, on a free name.
    let other = tokio::time::timeout(
        Duration::from_secs(5),
        c.lock("t78-other").try_lock_for(Duration::from_secs(4)),
    )
    .await;
    assert!(
        matches!(unlocked, Ok(Ok(()))) && matches!(other, Ok(Ok(Some(_)))),
        "while one lock() future of the client is kept unpolled: unlock() of another lock \
         gave {unlocked:?} within 5 s (t78-held still on the server: {held_on_server:?}), \
         try_lock_for() of a free lock gave {:?} within 5 s",
        other.as_ref().map(|r| r.as_ref().map(|g| g.is_some()))
    );
    drop(other);
    drop(kept);
    bounded(Duration::from_secs(10), "shutdown", c.shutdown()).await;
    assert_nothing_left(&s).await;
}
