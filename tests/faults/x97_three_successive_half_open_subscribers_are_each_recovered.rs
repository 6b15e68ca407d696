//! The subscriber connection dies silently (half-open) three times in a row: each time the
//! keep-alive notices it, forces one reconnect, and the waiter takes the released lock promptly;
//! a forced reconnect that completed never keeps the next one from happening. (From review 5:
//! 3.4-4.2 ms after each release, one new subscriber connection per round.)

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_successive_half_open_subscribers_are_both_recovered() {
    let s = server();
    let (proxy, waiter_client, mut sub) =
        crate::support::proxied_waiter(&s, Duration::from_secs(2)).await;
    let holder = client_with_lease(&s, Duration::from_secs(12)).await;
    for round in 0..3 {
        let name = format!("rv5-{round}");
        let before: Vec<_> = proxy.conns();
        let waited = crate::support::waited_behind_a_silent_subscriber(
            &s,
            &proxy,
            sub,
            &holder,
            &waiter_client,
            &name,
        )
        .await;
        eprintln!("round {round}: waited {waited:?}");
        assert!(
            waited < Duration::from_secs(4),
            "round {round}: waited {waited:?}"
        );
        // The new subscriber connection: the one accepted since `before` that is still open.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let new: Vec<_> = proxy
            .conns()
            .into_iter()
            .filter(|c| !before.contains(c))
            .collect();
        eprintln!("round {round}: new conns {new:?}");
        assert_eq!(new.len(), 1, "round {round}: new conns {new:?}");
        sub = new[0];
    }
}
