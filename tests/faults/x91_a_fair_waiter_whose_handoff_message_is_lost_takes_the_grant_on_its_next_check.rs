//! A fair waiter's subscriber connection drops everything (the handoff message that tells it
//! it holds the lock is lost). The release still hands it the lock; the waiter finds out on
//! its next check (the keep-alive or the heartbeat wakes it, and its acquire reports "this
//! field was handed the lock"): it returns that grant, with the token minted for it, as a
//! fresh hold (count 1, not a re-entry), well before the grant's 5 s first lease would end.
//! Without that report it would wait for the first lease to run out and take the lock again
//! under a new field and token.

use std::time::{Duration, Instant};

use relock_testkit::{Direction, Mode};
use relock_tests::*;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fair_waiter_whose_handoff_message_is_lost_takes_the_grant_on_its_next_check() {
    let s = server();
    let name = "x91";
    let (proxy, waiter_client, sub) = proxied_waiter(&s, Duration::from_secs(1)).await;
    let (holder_client, holder, waiter, field) =
        fair_waiter_behind_a_holder(&s, name, &waiter_client).await;
    let held_token = holder.fencing_token();

    // Messages to the waiter's subscriber are dropped from here on.
    proxy.set_conn(sub, Direction::Down, Some(Mode::Blackhole));
    let released = Instant::now();
    holder.unlock().await.unwrap();
    assert_eq!(hgetall(&s, name), vec![(field.clone(), "1".to_string())]);
    let (recorded, handed) = fair_grant(&s, name).expect("the grant record");
    assert_eq!(recorded, field);
    let handed: u64 = handed.parse().unwrap();
    assert!(handed > held_token);

    let (at, g) = bounded(Duration::from_secs(10), "the waiter", waiter)
        .await
        .unwrap();
    let waited = at - released;
    assert!(
        waited < Duration::from_secs(4),
        "the waiter took its grant {waited:?} after the release (first lease 5 s)"
    );
    assert_eq!(g.owner(), field);
    assert_eq!(g.fencing_token(), handed);
    assert_eq!(hgetall(&s, name), vec![(field.clone(), "1".to_string())]);
    // No second grant was minted (the counter expires 1 s after it was seeded, so it may be
    // gone; a later grant would have seeded it again).
    let c = counter(&s, name);
    assert!(c == 0 || c == handed, "counter {c}, handed {handed}");
    assert!(!g.is_lost());
    assert!(g.remaining() <= Duration::from_secs(5));
    println!("lost handoff message: the waiter took its grant {waited:?} after the release");
    proxy.clear_overrides();
    g.unlock().await.unwrap();
    waiter_client.shutdown().await;
    holder_client.shutdown().await;
    assert_nothing_left(&s).await;
}
