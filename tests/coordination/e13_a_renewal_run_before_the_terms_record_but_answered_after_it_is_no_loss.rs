//! A watchdog round's renewal of a leadership's record that the server ran before the term's
//! record was written (it found none) but whose reply came after the record's (it went on
//! another pool connection) is not a loss: the fresh leader keeps leading. Only a renewal
//! sent after the record was written can find it gone.

use std::time::Duration;

use relock_testkit::{Direction, FaultProxy, Mode};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_run_before_the_terms_record_but_answered_after_it_is_no_loss() {
    let server = server();
    // Every script this test's calls send, in the server's cache: each call is one command.
    for lua in [
        relock::lua::FAIR_ACQUIRE,
        relock::lua::FAIR_RELEASE,
        relock::lua::RENEW,
        relock::lua::ELECTION_BEGIN,
        relock::lua::ELECTION_RENEW,
        relock::lua::ELECTION_RESIGN,
    ] {
        server.cmd(&["SCRIPT", "LOAD", lua]).unwrap();
    }
    let proxy = FaultProxy::start(&server.addr()).unwrap();
    let a = relock::Client::builder()
        .url(proxy.url())
        .watch_holds(false)
        // A watchdog round every second.
        .watchdog_lease(Duration::from_secs(3))
        .command_timeout(Duration::from_secs(5))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .await
        .unwrap();

    // A value of 4000 bytes tells the record's write apart from every other command.
    let big = "v".repeat(4000);
    proxy.freeze_existing(Direction::Up);
    let election = a.election("e13");
    let campaign = tokio::spawn(async move { election.try_campaign(big).await });
    // The grant passes (every small command held so far); the record's write is held.
    wait_until(Duration::from_secs(5), "the grant", || async {
        for c in proxy.conns_holding(Direction::Up) {
            if proxy.conn_held(c, Direction::Up) < 3000 {
                proxy.set_conn(c, Direction::Up, Some(Mode::Pass));
            }
        }
        server.cmd(&["EXISTS", "e13"]).unwrap().as_int() == Some(1)
    })
    .await
    .unwrap();
    proxy.freeze_existing(Direction::Up);
    let begin = eventually(
        Duration::from_secs(5),
        "the record's write held",
        || async {
            proxy
                .conns_holding(Direction::Up)
                .into_iter()
                .find(|c| proxy.conn_held(*c, Direction::Up) > 3000)
        },
    )
    .await;
    // A watchdog round while the write is held: the lock's renewal and the record's.
    let round = eventually(Duration::from_secs(5), "a watchdog round", || async {
        let others: Vec<_> = proxy
            .conns_holding(Direction::Up)
            .into_iter()
            .filter(|c| *c != begin)
            .collect();
        (others.len() >= 2).then_some(others)
    })
    .await;
    // The round runs on the server (no record yet); its replies are held.
    let before = server.command_calls("evalsha").unwrap();
    for c in &round {
        proxy.set_conn(*c, Direction::Down, Some(Mode::Freeze));
        proxy.set_conn(*c, Direction::Up, Some(Mode::Pass));
    }
    wait_until(
        Duration::from_secs(5),
        "the round run on the server",
        || async { server.command_calls("evalsha").unwrap() >= before + 2 },
    )
    .await
    .unwrap();
    // Then the record is written and answered, and only then the round's replies come.
    proxy.set_conn(begin, Direction::Up, Some(Mode::Pass));
    let leading = bounded(Duration::from_secs(5), "the campaign", campaign)
        .await
        .unwrap()
        .unwrap()
        .expect("the campaign leads");
    assert!(!leading.is_lost());
    proxy.clear_overrides();
    wait_until(
        Duration::from_secs(5),
        "the round's replies delivered",
        || async { proxy.conns_holding(Direction::Down).is_empty() },
    )
    .await
    .unwrap();
    let lost = wait_until(Duration::from_secs(1), "a false loss", || async {
        leading.is_lost()
    })
    .await;
    assert!(
        lost.is_err(),
        "the leader was told it lost a leadership it holds"
    );
    let now = a.election("e13").leader().await.unwrap().unwrap();
    assert_eq!(now.term, leading.term());
    leading.resign().await.unwrap();
    a.shutdown().await;
}
