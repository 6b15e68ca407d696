//! A final release that is held in the network (its connection frozen client → server) times
//! out; the same task locks again at once over other connections. The next hold must not be
//! granted while the old one is still on the server, and when the held release finally lands
//! it must not end the new hold: another client cannot get the lock while the new guard lives,
//! the new guard is not lost, and its fencing token is larger.

use std::time::Duration;

use relock_testkit::{Direction, FaultProxy};
use relock_tests::*;

use crate::support::*;

/// What the scenario observed; everything must be as in `EXPECTED`.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    /// The next hold's token is larger than the old hold's.
    next_token_is_larger: bool,
    /// When the next hold was granted, the old hold's field was gone from the lock hash.
    old_field_gone_at_grant: bool,
    /// After the held release landed, a second client's try_lock() got the lock.
    second_client_got_it: bool,
    /// The next hold was reported lost (within a renewal period after the release landed).
    next_hold_lost: bool,
}

const EXPECTED: Outcome = Outcome {
    next_token_is_larger: true,
    old_field_gone_at_grant: true,
    second_client_got_it: false,
    next_hold_lost: false,
};

const LEASE: Duration = Duration::from_secs(6);
const COMMAND_TIMEOUT: Duration = Duration::from_millis(500);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_final_release_cannot_end_the_same_tasks_next_hold() {
    let server = server();
    log_every_command(&server);
    let proxy = FaultProxy::start(&server.addr()).unwrap();
    let a = proxied_client(&proxy, "x10a", COMMAND_TIMEOUT, LEASE).await;
    let b = client(&server).await; // straight to the server, no faults
    let lock = a.lock("x10");
    // Warm up: the server has relock's scripts cached, as it has in a process that has been
    // running for a while (a held EVALSHA of an unknown script would only get NOSCRIPT).
    lock.lock().await.unwrap().unlock().await.unwrap();

    let g1 = lock.lock().await.unwrap();
    let t1 = g1.fencing_token();
    let fields = hgetall(&server, "x10");
    assert_eq!(fields.len(), 1, "{fields:?}");
    let old_field = fields[0].0.clone();

    // Every connection open now holds what it is sent from here on; connections opened later
    // (fred's reconnects) pass. Once the release is held on its connection, the others pass
    // again, so only the release is late.
    let frozen = proxy.freeze_existing(Direction::Up);
    let (unlocked, carriers) = tokio::join!(g1.unlock(), async {
        let carriers = conns_holding(&proxy, Direction::Up, "the release to be held").await;
        for id in &frozen {
            if !carriers.contains(id) {
                proxy.set_conn(*id, Direction::Up, None);
            }
        }
        carriers
    });
    assert!(
        matches!(
            unlocked,
            Err(relock::Error::Timeout { .. } | relock::Error::Connection { .. })
        ),
        "unlock() with its release held in the network returned {unlocked:?}"
    );
    assert!(
        carriers
            .iter()
            .all(|c| proxy.conn_held(*c, Direction::Up) > 0),
        "the release is no longer held: {carriers:?}"
    );

    // The same task locks again at once.
    let g2 = bounded(
        Duration::from_secs(10),
        "the same task's next lock()",
        lock.lock(),
    )
    .await
    .expect("the next lock() of the same task");
    let at_grant = hgetall(&server, "x10");
    let granted_at = last_logged(&server);
    let t2 = g2.fencing_token();

    // Now the held release lands.
    proxy.clear_overrides();
    let landed = eventually(
        Duration::from_secs(3),
        "the held release to run on the server",
        || async {
            let late = logged_after(&server, granted_at, &[&old_field, "all"]);
            (!late.is_empty()).then_some(late)
        },
    )
    .await;
    assert_eq!(proxy.held(Direction::Up), 0);

    let intruder = b.lock("x10").try_lock().await.unwrap();
    let second_client_got_it = intruder.is_some();
    // Longer than a renewal period (lease / 3): a hold whose field was deleted is found lost.
    let next_hold_lost = tokio::time::timeout(LEASE / 3 + Duration::from_millis(700), g2.lost())
        .await
        .is_ok();
    eprintln!(
        "x10: release held on {carriers:?}; unlock: {unlocked:?}; old {old_field} token {t1}; \
         next token {t2}, hash at grant {at_grant:?}; late release ran: {landed:?}"
    );
    let outcome = Outcome {
        next_token_is_larger: t2 > t1,
        old_field_gone_at_grant: !at_grant.iter().any(|(f, _)| *f == old_field),
        second_client_got_it,
        next_hold_lost,
    };
    assert_eq!(
        outcome, EXPECTED,
        "old hold {old_field} token {t1}; next hold token {t2}; hash when it was granted \
         {at_grant:?}; the late release: {landed:?}"
    );
    // Exactly the next hold is on the server, with one count.
    assert_eq!(at_grant.len(), 1, "{at_grant:?}");
    assert_eq!(hgetall(&server, "x10"), at_grant);
    assert_eq!(at_grant[0].1, "1");

    g2.unlock().await.unwrap();
    let g3 = b
        .lock("x10")
        .try_lock()
        .await
        .unwrap()
        .expect("free after g2");
    assert!(g3.fencing_token() > t2);
    g3.unlock().await.unwrap();
    drop(intruder);
    assert_nothing_left(&server).await;
}
