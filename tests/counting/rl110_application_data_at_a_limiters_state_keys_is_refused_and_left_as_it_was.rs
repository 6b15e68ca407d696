//! Application data at a limiter's state keys (text at its value key, numbers written in a
//! form no limiter writes, members that are not permit records in its records key) is not the limiter's: every call that would read or
//! write it is refused with `WrongType` naming the key, and the data is left exactly as it
//! was (no value overwritten, no member removed, no key deleted).

use std::time::Duration;

use relock::{Error, RateType};
use relock_tests::*;

const VALUE: &str = "{rl110}:value";
const RECORDS: &str = "{rl110}:permits";

/// What the two state keys hold, as the server shows them.
fn state(server: &RedisServer) -> (String, String) {
    let value = server.cmd(&["GET", VALUE]).unwrap();
    let records = server
        .cmd(&["ZRANGE", RECORDS, "0", "-1", "WITHSCORES"])
        .unwrap();
    (format!("{value:?}"), format!("{records:?}"))
}

fn refused<T: std::fmt::Debug>(what: &str, r: relock::Result<T>, key: &str) {
    match r {
        Err(Error::WrongType { key: k }) if k == key => {}
        other => panic!("{what}: expected WrongType naming {key}, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn application_data_at_a_limiters_state_keys_is_refused_and_left_as_it_was() {
    let server = server();
    let c = client(&server).await;
    let l = c.rate_limiter("rl110");
    let minute = Duration::from_secs(60);

    // Text at the value key, also text that Lua reads as a number no limiter writes.
    l.set_rate(RateType::Overall, 5, minute).await.unwrap();
    for text in ["hello world", "nan", "inf", "-inf", "0x10", "1e3", "2.5"] {
        server.cmd(&["SET", VALUE, text]).unwrap();
        let before = state(&server);
        refused("try_acquire", l.try_acquire(1).await, VALUE);
        refused("available_permits", l.available_permits().await, VALUE);
        refused("release", l.release(1).await, VALUE);
        refused("delete", l.delete().await, VALUE);
        assert_eq!(state(&server), before, "{text}");
    }
    server.cmd(&["DEL", VALUE]).unwrap();

    // A member that is not a record, old enough to have expired were it one: with and without
    // a value beside it.
    for value in [Some("4"), None] {
        server.cmd(&["ZADD", RECORDS, "1", "x"]).unwrap();
        if let Some(v) = value {
            server.cmd(&["SET", VALUE, v]).unwrap();
        }
        let before = state(&server);
        refused("try_acquire", l.try_acquire(1).await, RECORDS);
        refused("available_permits", l.available_permits().await, RECORDS);
        refused("release", l.release(1).await, RECORDS);
        refused("delete", l.delete().await, RECORDS);
        refused(
            "set_rate",
            l.set_rate(RateType::Overall, 3, minute).await,
            RECORDS,
        );
        assert_eq!(state(&server), before, "value {value:?}");
        server.cmd(&["DEL", VALUE, RECORDS]).unwrap();
    }

    // A member that is not a record among live ones: a release (which reads them all) is
    // refused before it gives anything back; the grant made before it stands.
    assert!(l.try_acquire(2).await.unwrap());
    let far = (u64::MAX / 2).to_string();
    server
        .cmd(&["ZADD", RECORDS, &far, "not a record"])
        .unwrap();
    let before = state(&server);
    refused("release", l.release(1).await, RECORDS);
    assert_eq!(state(&server), before);
    server.cmd(&["ZREM", RECORDS, "not a record"]).unwrap();
    assert_eq!(l.available_permits().await.unwrap(), 3);
    assert!(l.delete().await.unwrap());
    c.shutdown().await;
    assert_eq!(server.dbsize().unwrap(), 0);
}
