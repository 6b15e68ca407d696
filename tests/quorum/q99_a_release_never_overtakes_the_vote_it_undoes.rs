//! A quorum acquisition returns once a majority has voted, and its release may follow at once,
//! while the other nodes' votes are still on their way: a vote whose EVALSHA met NOSCRIPT (a
//! node whose script cache was flushed) sends its EVAL only when that reply arrives, and a
//! vote's task may not even have run yet on a busy machine. A node's release must not be sent
//! before such a vote: it would find nothing, and the vote would then make a hold that nobody
//! owns for a whole lease. (Under load `relock bench-quorum` left such a hold in about one run
//! in ten.) Here the release script is cached on node 1 and the acquire script is not, and
//! node 1's replies are slow: without the wait, the release runs there first.

use std::time::Duration;

use relock_testkit::{Direction, Mode};
use relock_tests::*;

/// How many times `command` ran on `s` (INFO commandstats).
fn calls(s: &RedisServer, command: &str) -> i64 {
    let info = s
        .cmd(&["INFO", "commandstats"])
        .unwrap()
        .as_string()
        .unwrap();
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .and_then(|v| v.split(',').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_release_never_overtakes_the_vote_it_undoes() {
    let m = masters(3);
    let (proxy, urls) = urls_with_proxy(&m, 0);
    let client = quorum_builder(urls, Duration::from_millis(1500))
        .build()
        .await
        .unwrap();
    warm_up(&client, "q99:warm-up").await;

    // Node 1 forgets its scripts but the release; its replies take 300 ms from now on.
    m[0].cmd(&["SCRIPT", "FLUSH"]).unwrap();
    m[0].cmd(&["SCRIPT", "LOAD", relock::lua::QUORUM_RELEASE])
        .unwrap();
    let evals = calls(&m[0], "eval");
    proxy.set(Direction::Down, Mode::Delay(Duration::from_millis(300)));

    let guard = client
        .lock("q99")
        .with_lease(Duration::from_secs(30))
        .lock()
        .await
        .unwrap();
    guard.unlock().await.unwrap();

    // The vote's EVAL reaches node 1 once its NOSCRIPT reply is back; the release must land
    // after it.
    wait_until(
        Duration::from_secs(5),
        "the vote's EVAL on node 1",
        || async { calls(&m[0], "eval") > evals },
    )
    .await
    .unwrap();
    let gone = wait_until(Duration::from_secs(5), "no hold left on node 1", || async {
        m[0].cmd(&["EXISTS", "q99"]).ok().and_then(|v| v.as_int()) == Some(0)
    })
    .await;
    let fields = m[0].cmd(&["HGETALL", "q99"]).unwrap();
    let pttl = m[0].cmd(&["PTTL", "q99"]).unwrap().as_int();
    proxy.set(Direction::Down, Mode::Pass);
    client.shutdown().await;
    assert!(
        gone.is_ok(),
        "node 1 keeps a hold nobody owns: {fields:?}, PTTL {pttl:?} ms"
    );
    assert_nothing_left_on(&[&m[1], &m[2]]).await;
}
