//! Bad input gets a typed error naming the argument, before anything is sent; a key of another
//! type is reported as `WrongType` and left untouched.

use std::time::Duration;

use relock::Error;
use relock_tests::*;

fn is_invalid(r: &Result<impl std::fmt::Debug, Error>, arg: &str) -> bool {
    matches!(r, Err(Error::InvalidArgument { name, .. }) if *name == arg)
}

#[tokio::test]
async fn bad_input_gets_typed_errors() {
    let server = server();
    let c = client(&server).await;
    server.reset_stats().unwrap();
    for name in ["", "a{b", "x{}y"] {
        assert!(
            is_invalid(&c.lock(name).try_lock().await, "name"),
            "{name:?}"
        );
        assert!(
            is_invalid(&c.lock(name).is_locked().await, "name"),
            "{name:?}"
        );
        assert!(
            is_invalid(&c.lock(name).force_unlock().await, "name"),
            "{name:?}"
        );
    }
    for lease in [
        Duration::ZERO,
        Duration::from_micros(500),
        Duration::from_secs(u64::MAX / 4),
    ] {
        let r = c.lock("t60").with_lease(lease).try_lock().await;
        assert!(is_invalid(&r, "lease"), "{lease:?}: {r:?}");
    }
    let info = server
        .cmd(&["INFO", "commandstats"])
        .unwrap()
        .as_string()
        .unwrap();
    assert!(
        !info.contains("cmdstat_evalsha") && !info.contains("cmdstat_exists"),
        "sent commands: {info}"
    );

    // Builder settings.
    let b = || relock::Client::builder().url(server.url());
    assert!(is_invalid(
        &b().watchdog_lease(Duration::ZERO).build().await,
        "watchdog_lease"
    ));
    assert!(is_invalid(
        &b().watchdog_lease(Duration::from_millis(5)).build().await,
        "watchdog_lease"
    ));
    assert!(is_invalid(&b().client_id("a:b").build().await, "client_id"));
    assert!(is_invalid(&b().client_id("").build().await, "client_id"));
    assert!(is_invalid(&b().connections(0).build().await, "connections"));
    assert!(is_invalid(
        &b().command_timeout(Duration::ZERO).build().await,
        "command_timeout"
    ));
    assert!(is_invalid(
        &relock::Client::connect("http://nope").await,
        "url"
    ));
    assert!(is_invalid(
        &relock::Client::connect("not a url").await,
        "url"
    ));
    let msg = relock::Client::connect("not a url")
        .await
        .unwrap_err()
        .to_string();
    assert!(msg.contains("url") && msg.contains("not a url"), "{msg}");
    // A sentinel user name without a sentinel password would reach no sentinel: refused.
    let e = relock::Client::connect(
        "redis-sentinel://app:pw@127.0.0.1:1?sentinelServiceName=m&sentinelUsername=s",
    )
    .await;
    assert!(is_invalid(&e, "url"));
    let msg = e.unwrap_err().to_string();
    assert!(
        msg.contains("sentinelPassword") && !msg.contains(":pw@"),
        "{msg}"
    );

    // A string at the lock's name.
    // A held lock whose key is overwritten by a string: the release names the key.
    let g = c.lock("t60:overwritten").lock().await.unwrap();
    server.cmd(&["SET", "t60:overwritten", "foreign"]).unwrap();
    let r = g.unlock().await;
    assert!(
        matches!(&r, Err(Error::WrongType { key }) if key == "t60:overwritten"),
        "{r:?}"
    );
    // The counter lives a grace period (crates/relock/docs/data-layout.md); the test clobbered
    // the lock.
    server
        .cmd(&[
            "DEL",
            "t60:overwritten",
            "redisson_lock_token:{t60:overwritten}",
        ])
        .unwrap();

    server.cmd(&["SET", "t60:string", "precious"]).unwrap();
    let r = c.lock("t60:string").try_lock().await;
    assert!(
        matches!(&r, Err(Error::WrongType { key }) if key == "t60:string"),
        "{r:?}"
    );
    let r = c.lock("t60:string").hold_count().await;
    assert!(matches!(&r, Err(Error::WrongType { .. })), "{r:?}");
    // force_unlock leaves foreign keys alone, and says so (as `relock force-unlock` does).
    let r = c.lock("t60:string").force_unlock().await;
    assert!(
        matches!(&r, Err(Error::WrongType { key }) if key == "t60:string"),
        "{r:?}"
    );
    assert_eq!(
        server
            .cmd(&["GET", "t60:string"])
            .unwrap()
            .as_string()
            .unwrap(),
        "precious"
    );
    server.cmd(&["DEL", "t60:string"]).unwrap();

    // A fencing counter of another type: refused before anything is written, so the lock is
    // not left held by nobody for a lease.
    server
        .cmd(&["HSET", "redisson_lock_token:{t60:counter}", "a", "b"])
        .unwrap();
    for fair in [false, true] {
        let lock = if fair {
            c.fair_lock("t60:counter")
        } else {
            c.lock("t60:counter")
        };
        let r = lock.try_lock().await;
        assert!(matches!(&r, Err(Error::WrongType { .. })), "{r:?}");
        assert_eq!(
            server.cmd(&["EXISTS", "t60:counter"]).unwrap().as_int(),
            Some(0),
            "fair: {fair}"
        );
    }
    server
        .cmd(&["DEL", "redisson_lock_token:{t60:counter}"])
        .unwrap();
    assert_nothing_left(&server).await;
}
