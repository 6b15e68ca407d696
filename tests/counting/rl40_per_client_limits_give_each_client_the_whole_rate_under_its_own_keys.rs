//! A `PerClient` limit gives each client the whole rate, under keys of its own named by its
//! client id (Redisson's `PER_CLIENT`, keyed by a Redisson instance's id): two clients each
//! get R of R + 2, each reads its own available permits, and the shared value and records
//! keys are never written.

use std::time::Duration;

use relock::RateType;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_client_limits_give_each_client_the_whole_rate_under_its_own_keys() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    assert_ne!(a.client_id(), b.client_id());
    let (la, lb) = (a.rate_limiter("rl40"), b.rate_limiter("rl40"));
    assert!(la
        .try_set_rate(RateType::PerClient, 3, Duration::from_secs(60))
        .await
        .unwrap());
    for l in [&la, &lb] {
        let mut granted = 0;
        for _ in 0..5 {
            granted += u64::from(l.try_acquire(1).await.unwrap());
        }
        assert_eq!(granted, 3);
        assert_eq!(l.available_permits().await.unwrap(), 0);
    }
    let c = client(&server).await;
    assert_eq!(c.rate_limiter("rl40").available_permits().await.unwrap(), 3);
    let mut keys = server.keys().unwrap();
    keys.sort();
    let mut expected = vec!["rl40".to_string()];
    for id in [a.client_id(), b.client_id()] {
        expected.push(format!("{{rl40}}:permits:{id}"));
        expected.push(format!("{{rl40}}:value:{id}"));
        // relock's own: the rate the client's value was written under.
        expected.push(format!("{{rl40}}:rate:{id}"));
    }
    expected.sort();
    assert_eq!(keys, expected);
    for id in [a.client_id(), b.client_id()] {
        let key = format!("{{rl40}}:value:{id}");
        assert_eq!(server.cmd(&["GET", &key]).unwrap().as_int(), Some(0));
    }
    // delete takes the config and the deleting client's own keys.
    assert!(la.delete().await.unwrap());
    assert!(lb.delete().await.unwrap());
    for c in [a, b, c] {
        c.shutdown().await;
    }
    assert_nothing_left(&server).await;
}
