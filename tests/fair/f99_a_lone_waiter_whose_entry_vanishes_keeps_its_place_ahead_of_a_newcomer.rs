//! A waiter alone in the line (behind a holder) whose entry vanishes while it keeps waiting
//! (its connection stalls past its heartbeat deadline, and the next script that touches the
//! line evicts it) rejoins with its old ticket. Meanwhile a newcomer joined the now empty
//! line. The waiter that never stopped waiting must still be served before the newcomer.
//! (An earlier waiter ahead of it left, so its ticket is not the first: ties play no part.)

use std::time::Duration;

use relock_testkit::{FaultProxy, Mode};
use relock_tests::*;

const NAME: &str = "f99";

fn ticket(server: &RedisServer, field: &str) -> i64 {
    let v = server
        .cmd(&["ZSCORE", "relock_fair_queue:{f99}", field])
        .unwrap();
    v.as_string()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no ticket for {field}: {v:?}"))
}

#[tokio::test]
async fn a_lone_waiter_whose_entry_vanishes_keeps_its_place_ahead_of_a_newcomer() {
    let server = server();
    let heartbeat = Duration::from_millis(600);
    // Client 1: the holder (and an early waiter that gives up).
    let h = fair_client(&server, heartbeat).await;
    // Client 2: waiter A, behind a proxy; a command timeout longer than its stall.
    let proxy = FaultProxy::start(&server.addr()).unwrap();
    let a = relock::Client::builder()
        .url(proxy.url())
        .fair_heartbeat(heartbeat)
        .command_timeout(Duration::from_secs(3))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    // Client 3: newcomer N.
    let n = fair_client(&server, heartbeat).await;

    let holder = h.fair_lock(NAME).lock().await.unwrap();
    let early = {
        let l = h.fair_lock(NAME);
        spawn_in_line(&server, NAME, 1, async move {
            l.lock().await.map(|g| g.fencing_token())
        })
        .await
    };
    let wa = {
        let l = a.fair_lock(NAME);
        spawn_in_line(&server, NAME, 2, async move {
            l.lock().await.map(|g| g.fencing_token())
        })
        .await
    };
    let first_two = fair_line(&server, NAME);
    let a_field = first_two[1].clone();
    // A's ticket is not the sequence's first: no tie with a newcomer's.
    assert!(ticket(&server, &first_two[0]) < ticket(&server, &a_field));
    early.abort();
    wait_until(
        Duration::from_secs(3),
        "the early waiter to leave",
        || async { fair_line(&server, NAME) == vec![a_field.clone()] },
    )
    .await
    .unwrap();

    // A's connection stalls past its heartbeat deadline (A itself keeps waiting).
    proxy.set_both(Mode::Freeze);
    wait_until(
        Duration::from_secs(3),
        "A's heartbeat deadline to pass",
        || async {
            let deadline = fair_heartbeats(&server, NAME)[0].1;
            server_ms(&server) > deadline + 50
        },
    )
    .await
    .unwrap();

    // N joins: its script evicts A's stale entry, emptying the line.
    let wn = {
        let l = n.fair_lock(NAME);
        tokio::spawn(async move { l.lock().await.map(|g| g.fencing_token()) })
    };
    wait_until(
        Duration::from_secs(3),
        "N to join in place of A",
        || async {
            let line = fair_line(&server, NAME);
            line.len() == 1 && line[0] != a_field
        },
    )
    .await
    .unwrap();
    let n_field = fair_line(&server, NAME)[0].clone();

    // A's connection recovers: it finds itself out of line and rejoins with its old ticket.
    proxy.heal();
    wait_until(Duration::from_secs(5), "A to rejoin", || async {
        fair_line(&server, NAME).len() == 2
    })
    .await
    .unwrap();
    let line = fair_line(&server, NAME);
    let tickets: Vec<i64> = line.iter().map(|f| ticket(&server, f)).collect();

    holder.unlock().await.unwrap();
    let ta = bounded(Duration::from_secs(10), "waiter A", wa)
        .await
        .unwrap()
        .unwrap();
    let tn = bounded(Duration::from_secs(10), "newcomer N", wn)
        .await
        .unwrap()
        .unwrap();
    assert!(
        ta < tn,
        "A (waiting since before N came) must be served first: token A {ta}, token N {tn}; \
         line before release {line:?} (N = {n_field}) with tickets {tickets:?}"
    );
    assert_nothing_left(&server).await;
}
