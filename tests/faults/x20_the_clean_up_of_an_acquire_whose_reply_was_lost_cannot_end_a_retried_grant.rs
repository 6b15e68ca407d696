//! An acquire runs on the server but its reply is lost (its connection frozen server →
//! client); after the command timeout relock sends the clean-up for that attempt, and that
//! clean-up is held in the network too (its connection frozen client → server). The lock is
//! then retried over connections that pass, and granted. When the held clean-up finally lands
//! it must not end the retried grant: another client cannot get the lock while the retried
//! guard lives, and that guard is not lost.
//!
//! What may be left behind meanwhile: exactly the lost-reply acquisition's own hold (one
//! field, count 1, no renewals), until the clean-up's background retry (over a connection that
//! passes) removes it or its lease ends; after the retried guard is released nothing is left
//! (the fencing counter goes 1 s later).

use std::time::{Duration, Instant};

use relock_testkit::{Direction, FaultProxy, Mode};
use relock_tests::*;

use crate::support::*;

#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    /// The retried guard's token is larger than the lost-reply acquisition's.
    retried_token_is_larger: bool,
    /// When the retried guard was granted, the lost-reply acquisition's field was gone.
    orphan_gone_at_grant: bool,
    /// After the held clean-up landed, a second client's try_lock() got the lock.
    second_client_got_it: bool,
    /// The retried guard was reported lost (within a renewal period after the clean-up).
    retried_hold_lost: bool,
}

const EXPECTED: Outcome = Outcome {
    retried_token_is_larger: true,
    orphan_gone_at_grant: true,
    second_client_got_it: false,
    retried_hold_lost: false,
};

const LEASE: Duration = Duration::from_secs(2);
const COMMAND_TIMEOUT: Duration = Duration::from_millis(500);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clean_up_of_an_acquire_whose_reply_was_lost_cannot_end_a_retried_grant() {
    let server = server();
    log_every_command(&server);
    let proxy = FaultProxy::start(&server.addr()).unwrap();
    let a = proxied_client(&proxy, "x20a", COMMAND_TIMEOUT, LEASE).await;
    let b = client(&server).await; // straight to the server, no faults
    let lock = a.lock("x20");
    // Warm up: the server has relock's scripts cached (a held EVALSHA of an unknown script
    // would only get NOSCRIPT).
    lock.lock().await.unwrap().unlock().await.unwrap();

    let frozen = proxy.freeze_existing(Direction::Up);
    let started = Instant::now();
    // The same task acquires and, if lock() gives up, retries (as an application would).
    let acquire = async {
        let mut errors = Vec::new();
        loop {
            match lock.lock().await {
                Ok(g) => break (g, errors),
                Err(e) if e.is_transient() && errors.len() < 5 => errors.push(e),
                Err(e) => panic!("lock() failed: {e:?} after {errors:?}"),
            }
        }
    };
    let faults = async {
        // 1. The acquire is on one connection: let it reach the server, hold its reply.
        let carrier = conns_holding(&proxy, Direction::Up, "the acquire to be held").await;
        assert_eq!(carrier.len(), 1, "{carrier:?}");
        let carrier = carrier[0];
        proxy.set_conn(carrier, Direction::Down, Some(Mode::Freeze));
        proxy.set_conn(carrier, Direction::Up, None);
        let orphan = eventually(
            Duration::from_secs(2),
            "the acquire to run on the server",
            || async {
                let f = hgetall(&server, "x20");
                (!f.is_empty()).then_some(f)
            },
        )
        .await;
        let orphan_token = counter(&server, "x20");
        let orphan_pttl = int(&server, &["PTTL", "x20"]);
        // 2. After the command timeout the clean-up goes out on another connection: hold it.
        let cleanup_conn = eventually(
            Duration::from_secs(3),
            "the clean-up to be held",
            || async {
                let c: Vec<_> = proxy
                    .conns_holding(Direction::Up)
                    .into_iter()
                    .filter(|c| *c != carrier)
                    .collect();
                (!c.is_empty()).then_some(c)
            },
        )
        .await;
        // 3. Everything else passes again, so the retry goes through.
        for id in &frozen {
            if *id != carrier && !cleanup_conn.contains(id) {
                proxy.set_conn(*id, Direction::Up, None);
            }
        }
        (orphan, orphan_token, orphan_pttl, cleanup_conn)
    };
    let ((g, errors), (orphan, orphan_token, orphan_pttl, cleanup_conn)) =
        bounded(Duration::from_secs(15), "acquire with faults", async {
            tokio::join!(acquire, faults)
        })
        .await;
    let granted_after = started.elapsed();
    let at_grant = hgetall(&server, "x20");
    let granted_at = last_logged(&server);
    let t2 = g.fencing_token();

    // The lost-reply acquisition left exactly its own hold: one field, count 1, a lease
    // of at most `LEASE`.
    assert_eq!(orphan.len(), 1, "{orphan:?}");
    let orphan_field = orphan[0].0.clone();
    assert_eq!(orphan[0].1, "1", "{orphan:?}");
    assert!(orphan_field.starts_with("x20a:"), "{orphan_field}");
    assert!(
        orphan_pttl > 0 && orphan_pttl <= LEASE.as_millis() as i64,
        "pttl {orphan_pttl}"
    );
    assert!(
        cleanup_conn
            .iter()
            .all(|c| proxy.conn_held(*c, Direction::Up) > 0),
        "the clean-up is no longer held"
    );

    // Now the held clean-up lands.
    proxy.clear_overrides();
    let landed = eventually(
        Duration::from_secs(3),
        "the held clean-up to run on the server",
        || async {
            let late = logged_after(&server, granted_at, &[&orphan_field, "all"]);
            (!late.is_empty()).then_some(late)
        },
    )
    .await;

    let intruder = b.lock("x20").try_lock().await.unwrap();
    let second_client_got_it = intruder.is_some();
    let retried_hold_lost = tokio::time::timeout(LEASE / 3 + Duration::from_millis(700), g.lost())
        .await
        .is_ok();
    eprintln!(
        "x20: orphan {orphan:?} token {orphan_token} pttl {orphan_pttl}; clean-up held on \
         {cleanup_conn:?}; retried grant after {granted_after:?} (errors {errors:?}) token {t2}, \
         hash at grant {at_grant:?}; late clean-up ran: {landed:?}"
    );
    let outcome = Outcome {
        retried_token_is_larger: t2 > orphan_token,
        orphan_gone_at_grant: !at_grant.iter().any(|(f, _)| *f == orphan_field),
        second_client_got_it,
        retried_hold_lost,
    };
    assert_eq!(
        outcome, EXPECTED,
        "orphan {orphan:?} token {orphan_token}; retried token {t2}, hash at grant {at_grant:?}; \
         the late clean-up: {landed:?}"
    );
    // The retried hold is the only one, count 1. The orphan went before the grant: removed by
    // the clean-up's background retry (on a connection that passes; logged before the grant),
    // or ended with its lease (nobody renewed it).
    assert_eq!(at_grant.len(), 1, "{at_grant:?}");
    assert_eq!(at_grant[0].1, "1");
    assert_eq!(hgetall(&server, "x20"), at_grant);
    let retried_clean_up = logged_after(&server, -1, &[&orphan_field, "all"])
        .into_iter()
        .any(|l| l.id < granted_at);
    assert!(
        retried_clean_up
            || granted_after + Duration::from_millis(5)
                >= Duration::from_millis(orphan_pttl as u64),
        "granted {granted_after:?} after the start, but the orphan had {orphan_pttl} ms left \
         and no clean-up of it ran before"
    );

    g.unlock().await.unwrap();
    drop(intruder);
    assert_nothing_left(&server).await;
}
