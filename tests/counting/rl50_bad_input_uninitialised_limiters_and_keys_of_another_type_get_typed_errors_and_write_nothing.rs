//! Bad input gets a typed error naming the argument (`n` 0 or above the rate, `rate` 0 or
//! above 2^32 - 1, `interval` below 1 ms, a keep-alive below the interval, a bad name); a
//! limiter without a rate gets `RateNotSet` from every call that needs one, `acquire`
//! included (at once, no wait); keys of another type get `WrongType` naming the key. No
//! refused call writes anything.

use std::time::Duration;

use relock::{Error, RateConfig, RateType};
use relock_tests::*;

fn sorted_keys(server: &RedisServer) -> Vec<String> {
    let mut k = server.keys().unwrap();
    k.sort();
    k
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_uninitialised_limiters_and_keys_of_another_type_get_typed_errors_and_write_nothing(
) {
    let server = server();
    let c = client(&server).await;
    let second = Duration::from_secs(1);

    // No rate: every call that needs one says so, and writes nothing.
    let l = c.rate_limiter("rl50");
    let not_set = |r: relock::Result<_>| match r {
        Err(Error::RateNotSet { name }) => assert_eq!(name, "rl50"),
        other => panic!("expected RateNotSet, got {other:?}"),
    };
    not_set(l.try_acquire(1).await.map(drop));
    not_set(l.try_acquire_for(1, second).await.map(drop));
    not_set(bounded(second * 2, "acquire", l.acquire(1)).await);
    not_set(l.available_permits().await.map(drop));
    not_set(l.release(1).await);
    assert_eq!(l.config().await.unwrap(), None);
    assert!(!l.delete().await.unwrap());
    assert_eq!(server.dbsize().unwrap(), 0);
    let msg = l.try_acquire(1).await.unwrap_err().to_string();
    assert!(
        msg.contains("rl50") && msg.contains("try_set_rate"),
        "{msg}"
    );

    // Bad settings and counts, refused before anything is sent.
    let ms = Duration::from_millis;
    let cfg = |rate, interval| RateConfig::new(RateType::Overall, rate, interval);
    assert_invalid_saying(
        l.try_set_rate(RateType::Overall, 0, second).await,
        "rate",
        "at least 1",
    );
    assert_invalid(l.set(cfg(u64::from(u32::MAX) + 1, second)).await, "rate");
    assert_invalid_saying(l.try_set(cfg(1, Duration::ZERO)).await, "interval", "1 ms");
    assert_invalid(l.set(cfg(1, Duration::from_micros(999))).await, "interval");
    assert_invalid(
        l.try_set(cfg(1, second).with_keep_alive(ms(999))).await,
        "keep_alive",
    );
    assert_eq!(server.dbsize().unwrap(), 0);
    assert_invalid(c.rate_limiter("a{b").try_acquire(1).await, "name");
    assert_invalid(
        c.rate_limiter("")
            .try_set_rate(RateType::Overall, 1, second)
            .await,
        "name",
    );

    // n: 0, and above the rate (Redisson's message), take nothing.
    assert!(l.try_set_rate(RateType::Overall, 3, second).await.unwrap());
    assert_invalid_saying(l.try_acquire(0).await, "n", "at least 1");
    assert_invalid(l.release(0).await, "n");
    assert_invalid(l.try_acquire(u64::from(u32::MAX) + 1).await, "n");
    assert_invalid_saying(
        l.try_acquire(4).await,
        "n",
        "requested permits amount cannot exceed defined rate",
    );
    assert_invalid(l.try_acquire_for(4, second).await, "n");
    assert_invalid(bounded(second * 2, "acquire", l.acquire(4)).await, "n");
    assert_eq!(sorted_keys(&server), ["rl50"]);
    assert_eq!(l.available_permits().await.unwrap(), 3);

    // Keys of another type: named, and left as they were.
    server.cmd(&["SET", "rl50:str", "x"]).unwrap();
    let s = c.rate_limiter("rl50:str");
    assert_wrong_type(
        s.try_set_rate(RateType::Overall, 1, second).await,
        "rl50:str",
    );
    assert_wrong_type(s.set_rate(RateType::Overall, 1, second).await, "rl50:str");
    assert_wrong_type(s.try_acquire(1).await, "rl50:str");
    assert_wrong_type(s.available_permits().await, "rl50:str");
    assert_wrong_type(s.config().await, "rl50:str");
    // A hash of data (or a lock) under the name: no field is added to it.
    server
        .cmd(&["HSET", "rl50:data", "status", "paid", "rate", "9"])
        .unwrap();
    let d = c.rate_limiter("rl50:data");
    assert_wrong_type(
        d.try_set_rate(RateType::Overall, 1, second).await,
        "rl50:data",
    );
    assert_wrong_type(d.set_rate(RateType::Overall, 1, second).await, "rl50:data");
    assert_wrong_type(d.try_acquire(1).await, "rl50:data");
    assert_eq!(
        server.cmd(&["HLEN", "rl50:data"]).unwrap().as_int(),
        Some(2)
    );
    // The value or the records of another type.
    assert!(c
        .rate_limiter("rl50:v")
        .try_set_rate(RateType::Overall, 1, second)
        .await
        .unwrap());
    server.cmd(&["RPUSH", "{rl50:v}:value", "x"]).unwrap();
    assert_wrong_type(
        c.rate_limiter("rl50:v").try_acquire(1).await,
        "{rl50:v}:value",
    );
    assert_wrong_type(c.rate_limiter("rl50:v").release(1).await, "{rl50:v}:value");
    assert!(c
        .rate_limiter("rl50:p")
        .try_set_rate(RateType::Overall, 1, second)
        .await
        .unwrap());
    server.cmd(&["SET", "{rl50:p}:permits", "x"]).unwrap();
    assert_wrong_type(
        c.rate_limiter("rl50:p").try_acquire(1).await,
        "{rl50:p}:permits",
    );
    assert_wrong_type(
        c.rate_limiter("rl50:p")
            .set_rate(RateType::Overall, 2, second)
            .await,
        "{rl50:p}:permits",
    );
    assert_eq!(
        sorted_keys(&server),
        [
            "rl50",
            "rl50:data",
            "rl50:p",
            "rl50:str",
            "rl50:v",
            "{rl50:p}:permits",
            "{rl50:v}:value"
        ]
    );
    assert_eq!(
        server
            .cmd(&["GET", "{rl50:p}:permits"])
            .unwrap()
            .as_string()
            .as_deref(),
        Some("x")
    );
    assert_eq!(
        server.cmd(&["LLEN", "{rl50:v}:value"]).unwrap().as_int(),
        Some(1)
    );
    assert_eq!(
        server
            .cmd(&["HGET", "rl50:p", "rate"])
            .unwrap()
            .as_string()
            .as_deref(),
        Some("1")
    );
    // `delete` refuses a name whose keys hold something else too, and deletes nothing.
    for (name, key) in [
        ("rl50:data", "rl50:data"),
        ("rl50:p", "{rl50:p}:permits"),
        ("rl50:str", "rl50:str"),
        ("rl50:v", "{rl50:v}:value"),
    ] {
        assert_wrong_type(c.rate_limiter(name).delete().await, key);
    }
    assert_eq!(
        sorted_keys(&server),
        [
            "rl50",
            "rl50:data",
            "rl50:p",
            "rl50:str",
            "rl50:v",
            "{rl50:p}:permits",
            "{rl50:v}:value"
        ]
    );
    assert!(c.rate_limiter("rl50").delete().await.unwrap());
    for key in [
        "rl50:data",
        "rl50:p",
        "rl50:str",
        "rl50:v",
        "{rl50:p}:permits",
        "{rl50:v}:value",
    ] {
        server.cmd(&["DEL", key]).unwrap();
    }
    c.shutdown().await;
    assert_nothing_left(&server).await;
}
