//! `try_set_rate` sets the config only if the limiter has none; `set_rate` overwrites it and
//! starts the limit afresh (the records and value deleted). A keep-alive is the config's TTL
//! when it is set, and every acquire and release sets it again on the config, value and
//! records, as Redisson's scripts do; without one, the value and records follow a TTL the
//! config was given. A limiter unused for its keep-alive disappears.

use std::time::Duration;

use relock::{RateConfig, RateType};
use relock_tests::*;

fn pttl(server: &RedisServer, key: &str) -> i64 {
    server.cmd(&["PTTL", key]).unwrap().as_int().unwrap()
}

fn field(server: &RedisServer, key: &str, field: &str) -> Option<String> {
    server.cmd(&["HGET", key, field]).unwrap().as_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_set_rate_sets_only_if_absent_set_rate_starts_afresh_and_keep_alive_expires_the_keys() {
    let server = server();
    let c = client(&server).await;
    let second = Duration::from_secs(1);
    let l = c.rate_limiter("rl30");
    assert_eq!(l.config().await.unwrap(), None);
    assert!(l.try_set_rate(RateType::Overall, 3, second).await.unwrap());
    assert!(!l
        .try_set_rate(RateType::PerClient, 5, second * 2)
        .await
        .unwrap());
    assert_eq!(
        l.config().await.unwrap(),
        Some(RateConfig::new(RateType::Overall, 3, second))
    );
    // Redisson's four fields, as it writes them, and no TTL.
    for (f, v) in [
        ("rate", "3"),
        ("interval", "1000"),
        ("type", "0"),
        ("keepAliveTime", "0"),
    ] {
        assert_eq!(field(&server, "rl30", f).as_deref(), Some(v), "{f}");
    }
    assert_eq!(pttl(&server, "rl30"), -1);

    // set_rate overwrites and starts afresh.
    assert!(l.try_acquire(2).await.unwrap());
    assert_eq!(l.available_permits().await.unwrap(), 1);
    l.set_rate(RateType::Overall, 4, second).await.unwrap();
    assert_eq!(l.config().await.unwrap().unwrap().rate(), 4);
    assert_eq!(
        server
            .cmd(&["EXISTS", "{rl30}:value", "{rl30}:permits"])
            .unwrap()
            .as_int(),
        Some(0)
    );
    assert_eq!(l.available_permits().await.unwrap(), 4);
    assert!(l.try_acquire(4).await.unwrap());

    // A keep-alive: the config's TTL when set; each acquire sets it on all three keys.
    let k = c.rate_limiter("rl30:keep");
    let keep = Duration::from_secs(5);
    let config = RateConfig::new(RateType::Overall, 2, second).with_keep_alive(keep);
    assert!(k.try_set(config).await.unwrap());
    assert_eq!(
        field(&server, "rl30:keep", "keepAliveTime").as_deref(),
        Some("5000")
    );
    let t = pttl(&server, "rl30:keep");
    assert!(t > 4000 && t <= 5000, "{t}");
    assert_eq!(k.config().await.unwrap(), Some(config));
    // Setting again when set changes nothing, TTL included.
    server.cmd(&["PEXPIRE", "rl30:keep", "4000"]).unwrap();
    assert!(!k.try_set(config).await.unwrap());
    assert!(pttl(&server, "rl30:keep") <= 4000);
    assert!(k.try_acquire(1).await.unwrap());
    for key in ["rl30:keep", "{rl30:keep}:value", "{rl30:keep}:permits"] {
        let t = pttl(&server, key);
        assert!(t > 4000 && t <= 5000, "{key}: {t}");
    }
    server.cmd(&["PEXPIRE", "rl30:keep", "3000"]).unwrap();
    k.release(1).await.unwrap();
    // (The release took the one record away, and its key with it.)
    assert_eq!(pttl(&server, "{rl30:keep}:permits"), -2);
    for key in ["rl30:keep", "{rl30:keep}:value"] {
        let t = pttl(&server, key);
        assert!(t > 4000 && t <= 5000, "{key}: {t}");
    }

    // Without a keep-alive, the value and records follow the config's TTL.
    server.cmd(&["PEXPIRE", "rl30", "60000"]).unwrap();
    l.set_rate(RateType::Overall, 4, second).await.unwrap();
    // (set_rate without a keep-alive removes the config's TTL: the keys live until deleted.)
    assert_eq!(pttl(&server, "rl30"), -1);
    server.cmd(&["PEXPIRE", "rl30", "60000"]).unwrap();
    assert!(l.try_acquire(1).await.unwrap());
    let config_ttl = pttl(&server, "rl30");
    for key in ["{rl30}:value", "{rl30}:permits"] {
        let t = pttl(&server, key);
        // The script copies the config's PTTL, counted in whole ms: the copy may end up to
        // a ms after the config.
        assert!(
            t > 58000 && t <= config_ttl + 1,
            "{key}: {t} (config {config_ttl})"
        );
    }

    // A limiter unused for its keep-alive disappears; a keep-alive below the interval is
    // refused.
    let short = c.rate_limiter("rl30:short");
    let ms = Duration::from_millis;
    assert!(short
        .try_set(RateConfig::new(RateType::Overall, 1, ms(100)).with_keep_alive(ms(300)))
        .await
        .unwrap());
    assert!(short.try_acquire(1).await.unwrap());
    wait_until(Duration::from_secs(3), "the keys to expire", || async {
        server
            .cmd(&[
                "EXISTS",
                "rl30:short",
                "{rl30:short}:value",
                "{rl30:short}:permits",
            ])
            .unwrap()
            .as_int()
            == Some(0)
    })
    .await
    .unwrap();
    assert_eq!(short.config().await.unwrap(), None);
    assert_invalid_saying(
        short
            .try_set(RateConfig::new(RateType::Overall, 1, ms(100)).with_keep_alive(ms(99)))
            .await,
        "keep_alive",
        "at least the interval",
    );

    for l in [l, k] {
        assert!(l.delete().await.unwrap());
    }
    c.shutdown().await;
    assert_nothing_left(&server).await;
}
