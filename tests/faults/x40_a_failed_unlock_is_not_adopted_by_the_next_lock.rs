//! `unlock()` times out because the server holds back writes (`CLIENT PAUSE 1500 WRITE`, the
//! command timeout is 300 ms). After the pause, the same task's next `lock()` must be a new
//! hold: a new fencing token strictly larger than the old one, the old field gone from the lock
//! hash (exactly one field, the new hold's), and a second client cannot acquire while it is
//! held.

use std::time::Duration;

use fred::interfaces::{ClientLike, KeysInterface};
use relock_tests::*;

use crate::support::*;

#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    /// The next hold's token is strictly larger than the old hold's.
    new_token_is_larger: bool,
    /// The old hold's field is gone from the hash once the next hold is granted.
    old_field_gone: bool,
    /// A second client's try_lock() got the lock while the next hold was held.
    second_client_got_it: bool,
}

const EXPECTED: Outcome = Outcome {
    new_token_is_larger: true,
    old_field_gone: true,
    second_client_got_it: false,
};

const PAUSE_MS: &str = "1500";
const COMMAND_TIMEOUT: Duration = Duration::from_millis(300);
const LEASE: Duration = Duration::from_secs(6);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_unlock_is_not_adopted_by_the_next_lock() {
    let server = server();
    let a = relock::Client::builder()
        .url(server.url())
        .client_id("x40a")
        .watchdog_lease(LEASE)
        .command_timeout(COMMAND_TIMEOUT)
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();
    let b = client(&server).await;
    // A plain connection without a command timeout, to learn when writes go through again.
    let probe = fred::clients::Client::new(
        fred::types::config::Config::from_url(&server.url()).unwrap(),
        None,
        None,
        None,
    );
    probe.init().await.unwrap();
    let lock = a.lock("x40");
    // Warm up: the server has relock's scripts cached.
    lock.lock().await.unwrap().unlock().await.unwrap();

    let g1 = lock.lock().await.unwrap();
    let t1 = g1.fencing_token();
    let before = hgetall(&server, "x40");
    assert_eq!(before.len(), 1, "{before:?}");
    let old_field = before[0].0.clone();

    server.cmd(&["CLIENT", "PAUSE", PAUSE_MS, "WRITE"]).unwrap();
    let unlocked = bounded(
        Duration::from_secs(1),
        "unlock() during the pause",
        g1.unlock(),
    )
    .await;
    assert!(
        matches!(
            unlocked,
            Err(relock::Error::Timeout { .. } | relock::Error::Connection { .. })
        ),
        "unlock() while writes are paused returned {unlocked:?}"
    );
    // The old hold is still on the server: the release did not run.
    assert_eq!(hgetall(&server, "x40"), before);

    // Wait (bounded) until writes go through again: the pause is over.
    let _: () = bounded(
        Duration::from_secs(5),
        "the pause to end",
        probe.set("x40:probe", 1, None, None, false),
    )
    .await
    .unwrap();
    let _: i64 = probe.del("x40:probe").await.unwrap();

    let g2 = bounded(
        Duration::from_secs(10),
        "the same task's next lock()",
        lock.lock(),
    )
    .await
    .expect("the next lock() after the pause");
    let t2 = g2.fencing_token();
    let after = hgetall(&server, "x40");
    let intruder = b.lock("x40").try_lock().await.unwrap();
    eprintln!(
        "x40: unlock {unlocked:?}; old {old_field} token {t1}; next token {t2}, hash {after:?}"
    );
    let outcome = Outcome {
        new_token_is_larger: t2 > t1,
        old_field_gone: !after.iter().any(|(f, _)| *f == old_field),
        second_client_got_it: intruder.is_some(),
    };
    assert_eq!(
        outcome, EXPECTED,
        "old hold {old_field} token {t1}; next token {t2}; hash {after:?}"
    );
    // Exactly one field, the new hold's, with one count; it stays while g2 lives.
    assert_eq!(after.len(), 1, "{after:?}");
    assert!(after[0].0.starts_with("x40a:"), "{after:?}");
    assert_eq!(after[0].1, "1");
    let lost = tokio::time::timeout(LEASE / 3 + Duration::from_millis(700), g2.lost())
        .await
        .is_ok();
    assert!(!lost, "the next hold was lost");
    assert_eq!(hgetall(&server, "x40"), after);

    g2.unlock().await.unwrap();
    let g3 = b
        .lock("x40")
        .try_lock()
        .await
        .unwrap()
        .expect("free after g2");
    assert!(g3.fencing_token() > t2);
    g3.unlock().await.unwrap();
    probe.quit().await.unwrap();
    assert_nothing_left(&server).await;
}
