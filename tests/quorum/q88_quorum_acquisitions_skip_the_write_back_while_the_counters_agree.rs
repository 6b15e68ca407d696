//! The token write-back is a round of its own, sent only when the granting majority minted
//! different tokens. The first acquisition finds no counters: each node seeds its own from its
//! clock, so they differ and the token is written back, to every node. From then on every
//! node mints the same next token, and acquisitions cost one round, until the counters expire
//! (a grace period after the write-back) and the next one aligns them again. Tokens rise
//! throughout. Write-backs are counted on the servers: `quorum_fence.lua` sends one `GET` per
//! node, and so does each node's release (`quorum_release.lua` raises the counter to the
//! hold's token, q103), whose `GET`s are subtracted: one per node and release.

use std::time::{Duration, Instant};

use relock_tests::*;

const PAIRS: u64 = 40;

#[tokio::test]
async fn quorum_acquisitions_skip_the_write_back_while_the_counters_agree() {
    let m = masters(5);
    let client = quorum_client(&m, Duration::from_secs(30), Duration::ZERO).await;
    let lock = client.lock("q88");
    let gets = || -> u64 {
        m.servers()
            .iter()
            .map(|s| s.command_calls("get").unwrap())
            .sum()
    };

    // First acquisition: five counters that differ (as five clocks would seed them), so a
    // write-back, to all five.
    let now_us = server_ms(&m[0]) * 1000;
    for (i, s) in m.servers().iter().enumerate() {
        let seed = (now_us + 1000 * i as i64).to_string();
        s.cmd(&["SET", "redisson_lock_token:{q88}", &seed, "PX", "1000"])
            .unwrap();
    }
    let first = lock.lock().await.unwrap();
    let mut last = first.fencing_token();
    first.unlock().await.unwrap();
    // The write-back on every node (5), and the release on every node (5).
    wait_until(
        Duration::from_secs(2),
        "the write-back on every node",
        || async { gets() == 10 },
    )
    .await
    .unwrap();

    // Then the counters agree: no write-back while they live (a grace period, 1 s, from the
    // write-back). When they expire, each node seeds again from its clock and the next
    // acquisition aligns them with one write-back (or two, if the nodes expire a moment apart).
    let started = Instant::now();
    let before = gets();
    for _ in 0..PAIRS {
        let g = lock.lock().await.unwrap();
        assert!(g.fencing_token() > last, "tokens rise");
        last = g.fencing_token();
        g.unlock().await.unwrap();
    }
    let seconds = started.elapsed().as_secs() + 1;
    // Every node's release has run (an unlock returns at a majority's answer).
    let releases = 5 * PAIRS;
    wait_until(Duration::from_secs(2), "every node's release", || async {
        gets() >= before + releases
    })
    .await
    .unwrap();
    // Without the skip, every acquisition would write back (40 here).
    let write_backs = (gets() - before - releases).div_ceil(5);
    assert!(
        write_backs <= 2 * seconds,
        "{write_backs} write-backs for {PAIRS} acquisitions in {seconds} s"
    );
    client.shutdown().await;
    assert_nothing_left_on(&m.servers().iter().collect::<Vec<_>>()).await;
}
