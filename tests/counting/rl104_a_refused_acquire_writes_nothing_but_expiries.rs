//! A refused acquire (the waiter's poll) writes no key: its value is unchanged, so it is not
//! written again (a write is replicated and logged to the AOF, and a `SET` removes the key's
//! time to live).
//! (Counted with `INFO commandstats`, which counts the commands scripts run.)

use std::time::Duration;

use relock::RateType;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_acquire_writes_nothing_but_expiries() {
    let server = server();
    let c = client(&server).await;
    let minute = Duration::from_secs(60);
    let mut sets = Vec::new();
    for (name, kind) in [
        ("rl104-overall", RateType::Overall),
        ("rl104-client", RateType::PerClient),
    ] {
        let l = c.rate_limiter(name);
        l.set_rate(kind, 1, minute).await.unwrap();
        assert!(l.try_acquire(1).await.unwrap());
        let before = server.command_calls("set").unwrap();
        assert!(!l.try_acquire(1).await.unwrap());
        sets.push(server.command_calls("set").unwrap() - before);
    }
    c.shutdown().await;
    assert_eq!(
        sets,
        [0, 0],
        "SETs run by one refused acquire (Overall, PerClient): the value was unchanged"
    );
}
