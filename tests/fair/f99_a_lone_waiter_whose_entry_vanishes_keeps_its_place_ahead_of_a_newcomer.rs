//! A waiter alone in the line (behind a holder) whose entry vanishes while it keeps waiting
//! (its connection stalls past its heartbeat deadline, and the next script that touches the
//! line evicts it) rejoins with its old ticket. Meanwhile a newcomer joined the now empty
//! line. The waiter that never stopped waiting must still be served before the newcomer.
//! Tickets are the server clock in µs (one past the last ticket in line if that is later), so
//! the newcomer's ticket, even in a line emptied meanwhile, is above the one the waiter kept,
//! taken earlier; the waiter's ticket is not the first of its own line either (an earlier
//! waiter ahead of it left), so no tie decides the order.

use std::time::Duration;

use relock_testkit::{FaultProxy, Mode};
use relock_tests::*;

const NAME: &str = "f99";

fn ticket(server: &RedisServer, field: &str) -> i64 {
    let v = server
        .cmd(&["ZSCORE", "relock_fair_line:{f99}", field])
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
    // A's ticket is not the first of its line.
    let a_ticket = ticket(&server, &a_field);
    assert!(ticket(&server, &first_two[0]) < a_ticket);
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

    // N joins; A's stale entry is evicted (a join behind a holder evicts nobody, but every
    // heartbeat evicts every dead waiter), so N is alone in line.
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
    // N's ticket, the clock at its join (or one past the last in line), is above the one A
    // keeps.
    assert!(
        ticket(&server, &n_field) > a_ticket,
        "N's ticket {} is not above A's {a_ticket}",
        ticket(&server, &n_field)
    );

    // A's connection recovers: it finds itself out of line and rejoins with its old ticket.
    proxy.heal();
    wait_until(Duration::from_secs(5), "A to rejoin", || async {
        fair_line(&server, NAME).len() == 2
    })
    .await
    .unwrap();
    let line = fair_line(&server, NAME);
    let tickets: Vec<i64> = line.iter().map(|f| ticket(&server, f)).collect();
    assert_eq!(
        (line[1].as_str(), tickets[0]),
        (n_field.as_str(), a_ticket),
        "A rejoined ahead of N with its old ticket: {line:?} {tickets:?}"
    );

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
