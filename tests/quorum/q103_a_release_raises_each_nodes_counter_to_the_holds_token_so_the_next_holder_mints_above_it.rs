//! A quorum hold's release raises each node's fencing counter to the hold's token, in the same
//! script as it drops the hold, so the next holder mints above it even on nodes whose counter
//! the acquisition's write-back never raised (it met NOSCRIPT and its resend came after the
//! release, or its task ran late: q101 saw two successive holders with the same token under
//! load). Here the write-back's absence is made certain: after A is granted, the counters of
//! nodes 2 and 3 are set back below A's token; A releases; node 1 stops; B's majority is nodes
//! 2 and 3. Without the raise B's token was A's minus 4.

use std::time::Duration;

use relock_tests::*;

const COUNTER: &str = "redisson_lock_token:{q103}";

#[tokio::test]
async fn a_release_raises_each_nodes_counter_to_the_holds_token_so_the_next_holder_mints_above_it()
{
    let m = masters(3);
    let client = warm_quorum_client(m.urls(), Duration::from_millis(200), "q103:warm").await;
    let lock = client.lock("q103").with_lease(Duration::from_secs(10));
    let a = lock.lock().await.unwrap();
    let token = a.fencing_token();
    wait_held_on_every_node(&m, "q103").await;
    // The write-back on nodes 2 and 3 as if it had not landed yet: their counters behind.
    let behind = (token - 5).to_string();
    for s in &m.servers()[1..] {
        s.cmd(&["SET", COUNTER, &behind, "PX", "1000"]).unwrap();
    }
    a.unlock().await.unwrap();
    // Node 1 stops: B's majority is nodes 2 and 3.
    m[0].pause().unwrap();
    let b = bounded(Duration::from_secs(5), "B's lock", lock.lock())
        .await
        .unwrap();
    m[0].resume().unwrap();
    assert!(
        b.fencing_token() > token,
        "the next holder's token {} is not above A's {token}",
        b.fencing_token()
    );
    b.unlock().await.unwrap();
    client.shutdown().await;
}
