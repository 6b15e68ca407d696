//! A `QuorumLock` named `x` keeps, on each of its nodes, the very hash a plain `Lock` named
//! `x` on that node uses (`LockKeys::new(name)`): the two exclude each other there. Yet their
//! resources differ (`quorum(A,B,C) x` and `redis://A x`), so `DistributedLock::resource`'s
//! "two handles on the same data have the same resource" does not hold, and a multi-lock's
//! global order is not one order over the data: `quorum(..) x` sorts before every
//! `redis://..` part, `redis://A x` after `redis://A m`. Multi-lock 1 over {quorum x, A m}
//! takes `x` on every node, then waits for `m`; multi-lock 2 over {A m, A x} takes `m`, then
//! waits for `x` on A: each waits for the other. With `try_lock_for` both give up though
//! nobody else holds anything; with `lock()` they wait for ever.

use std::time::Duration;

use relock::{DistributedLock, MultiLock};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quorum_lock_and_a_plain_lock_on_one_of_its_nodes_never_deadlock_in_multi_locks() {
    let m = masters(3);
    let q = quorum_client(&m, Duration::from_secs(30), Duration::ZERO).await;
    let node_a = &m.servers()[0];
    let (p1, p2) = (client(node_a).await, client(node_a).await);
    let one = MultiLock::new()
        .with(q.lock("m50:x"))
        .with(p1.lock("m50:m"));
    let two = MultiLock::new()
        .with(p2.lock("m50:x"))
        .with(p2.lock("m50:m"));
    let resources = [
        q.lock("m50:x").resource(),
        p1.lock("m50:m").resource(),
        p2.lock("m50:x").resource(),
    ];
    let mut rounds = Vec::new();
    for _ in 0..3 {
        let (a, b) = tokio::join!(
            one.try_lock_for(Duration::from_secs(2)),
            two.try_lock_for(Duration::from_secs(2))
        );
        let (a, b) = (a.unwrap(), b.unwrap());
        rounds.push((a.is_some(), b.is_some()));
        let stuck = a.is_none() && b.is_none();
        drop((a, b));
        if stuck {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        rounds.iter().all(|(a, b)| *a || *b),
        "two multi-locks over the same data, nobody else holding it, both gave up (rounds, \
         (one, two) got all: {rounds:?}): each held a part the other waited for. Resources: \
         {resources:?}"
    );
    q.shutdown().await;
    p1.shutdown().await;
    p2.shutdown().await;
}
