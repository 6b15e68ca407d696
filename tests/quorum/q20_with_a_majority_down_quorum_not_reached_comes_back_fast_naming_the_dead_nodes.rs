//! With 3 of 5 masters killed, `try_lock`, `try_lock_for` and `lock` all return
//! `QuorumNotReached` within a few node timeouts, naming each node and its answer (the
//! live nodes may not even be asked once the dead ones are known); anything granted on the
//! live nodes is released. Connecting then fails fast, naming the unreachable nodes.

use std::time::{Duration, Instant};

use relock::{Error, Vote};
use relock_tests::*;

#[tokio::test]
async fn with_a_majority_down_quorum_not_reached_comes_back_fast_naming_the_dead_nodes() {
    let m = masters(5);
    let client = quorum_client(&m, Duration::from_secs(30), Duration::ZERO).await;
    for i in 2..5 {
        m[i].kill().unwrap();
    }
    let lock = client.lock("q20");
    for (how, r, took) in [
        {
            let t = Instant::now();
            (
                "try_lock",
                lock.try_lock().await.map(|g| g.is_some()),
                t.elapsed(),
            )
        },
        {
            let t = Instant::now();
            let r = lock.try_lock_for(Duration::from_secs(5)).await;
            ("try_lock_for", r.map(|g| g.is_some()), t.elapsed())
        },
        {
            let t = Instant::now();
            let r = bounded(Duration::from_secs(2), "lock", lock.lock()).await;
            ("lock", r.map(|_| true), t.elapsed())
        },
    ] {
        // A few node timeouts (50 ms each) at most: far below what waiting out try_lock_for's
        // bound (5 s) or retrying lock until its bound (2 s) would take, with room for a
        // loaded machine's scheduling.
        assert!(took < Duration::from_secs(1), "{how} took {took:?}");
        let Err(Error::QuorumNotReached {
            needed,
            granted,
            votes,
            ..
        }) = r
        else {
            panic!("{how}: {r:?}")
        };
        assert_eq!(needed, 3, "{how}");
        assert!(granted <= 2, "{how}");
        assert_eq!(votes.len(), 5);
        for (i, v) in votes.iter().enumerate() {
            assert_eq!(v.node, m[i].url());
            if i < 2 {
                assert!(
                    matches!(v.vote, Vote::Granted | Vote::NotAwaited),
                    "{how}: {v}"
                );
            } else {
                assert!(
                    matches!(v.vote, Vote::Error(_) | Vote::Timeout(_)),
                    "{how}: {v}"
                );
            }
        }
        let text = Error::QuorumNotReached {
            name: "q20".into(),
            needed,
            granted,
            votes,
            hint: None,
        }
        .to_string();
        assert!(text.contains(&m[4].url()), "{text}");
    }
    // Connecting with a majority down fails fast, naming the unreachable nodes.
    let r = relock::QuorumClient::builder()
        .urls(m.urls())
        .connect_timeout(Duration::from_millis(500))
        .build()
        .await;
    let Err(Error::Connection { cause, .. }) = r else {
        panic!("{r:?}")
    };
    for i in 2..5 {
        assert!(cause.contains(&m[i].url()), "{cause}");
    }
    assert!(
        cause.contains("2 of 5 nodes reachable, 3 needed"),
        "{cause}"
    );
    assert_nothing_left_on(&[&m[0], &m[1]]).await;
}
