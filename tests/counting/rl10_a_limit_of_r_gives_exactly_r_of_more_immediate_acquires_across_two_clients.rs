//! A limit of R permits per interval grants exactly R of R + k immediate `try_acquire`s,
//! taken in turn and all at once from two clients; `available_permits` reads R before, the
//! exact rest between, 0 after; a request for more than is left takes nothing.

use std::time::Duration;

use relock::RateType;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_of_r_gives_exactly_r_of_more_immediate_acquires_across_two_clients() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let (la, lb) = (a.rate_limiter("rl10"), b.rate_limiter("rl10"));
    let minute = Duration::from_secs(60);
    assert!(la.try_set_rate(RateType::Overall, 5, minute).await.unwrap());
    assert_eq!(la.available_permits().await.unwrap(), 5);
    assert_eq!(lb.available_permits().await.unwrap(), 5);

    // In turn: 5 of 8, the count going down by one each time.
    let mut granted = 0;
    for i in 0..8 {
        let l = if i % 2 == 0 { &la } else { &lb };
        if l.try_acquire(1).await.unwrap() {
            granted += 1;
            assert_eq!(la.available_permits().await.unwrap(), 5 - granted);
        }
    }
    assert_eq!(granted, 5);
    assert_eq!(lb.available_permits().await.unwrap(), 0);
    assert_eq!(
        server.cmd(&["ZCARD", "{rl10}:permits"]).unwrap().as_int(),
        Some(5)
    );

    // All at once: 7 of 16 concurrent tries on two clients, 2 permits each when 1 is left
    // takes nothing.
    let name = "rl10:burst";
    assert!(a
        .rate_limiter(name)
        .try_set_rate(RateType::Overall, 7, minute)
        .await
        .unwrap());
    let mut tries = Vec::new();
    for i in 0..16 {
        let l = if i % 2 == 0 {
            a.rate_limiter(name)
        } else {
            b.rate_limiter(name)
        };
        tries.push(tokio::spawn(async move { l.try_acquire(1).await.unwrap() }));
    }
    let mut granted = 0;
    for t in tries {
        granted += u64::from(t.await.unwrap());
    }
    assert_eq!(granted, 7);
    assert_eq!(a.rate_limiter(name).available_permits().await.unwrap(), 0);
    let l = a.rate_limiter("rl10:two");
    assert!(l.try_set_rate(RateType::Overall, 3, minute).await.unwrap());
    assert!(l.try_acquire(2).await.unwrap());
    assert!(
        !l.try_acquire(2).await.unwrap(),
        "one left: two are refused"
    );
    assert_eq!(l.available_permits().await.unwrap(), 1);
    assert!(l.try_acquire(1).await.unwrap());
    assert_eq!(l.available_permits().await.unwrap(), 0);

    let mut keys = server.keys().unwrap();
    keys.sort();
    assert_eq!(
        keys,
        [
            "rl10",
            "rl10:burst",
            "rl10:two",
            "{rl10:burst}:permits",
            "{rl10:burst}:value",
            "{rl10:two}:permits",
            "{rl10:two}:value",
            "{rl10}:permits",
            "{rl10}:value"
        ]
    );
    for name in ["rl10", "rl10:burst", "rl10:two"] {
        assert!(a.rate_limiter(name).delete().await.unwrap());
        assert!(!a.rate_limiter(name).delete().await.unwrap());
    }
    a.shutdown().await;
    b.shutdown().await;
    assert_nothing_left(&server).await;
}
