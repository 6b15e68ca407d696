//! A config hash with values no limiter writes (a non-numeric interval, a type other than 0
//! or 1, a number Lua reads but no limiter writes: nan, inf, hex, a rate of 0, a negative
//! interval) is not a limiter's: every call is refused with `WrongType` naming it, and nothing is
//! written (no grant recorded before an error).

use relock::Error;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_with_values_a_limiter_never_writes_is_refused_and_nothing_is_granted() {
    let server = server();
    let c = client(&server).await;
    let mut seen = Vec::new();
    for (field, value) in [
        ("interval", "abc"),
        ("type", "7"),
        ("rate", "1.5e"),
        ("rate", "nan"),
        ("rate", "0"),
        ("interval", "inf"),
        ("interval", "-5"),
        ("keepAliveTime", "-inf"),
        ("keepAliveTime", "0x10"),
    ] {
        server.cmd(&["DEL", "rl109"]).unwrap();
        let mut config = vec![
            "HSET",
            "rl109",
            "rate",
            "5",
            "interval",
            "60000",
            "type",
            "0",
            "keepAliveTime",
            "0",
        ];
        let at = config.iter().position(|f| *f == field).unwrap();
        config[at + 1] = value;
        server.cmd(&config).unwrap();
        let l = c.rate_limiter("rl109");
        let acquire = l.try_acquire(1).await;
        let available = l.available_permits().await;
        let mut keys = server.keys().unwrap();
        keys.sort();
        seen.push((
            field,
            matches!(&acquire, Err(Error::WrongType { key }) if key == "rl109"),
            matches!(&available, Err(Error::WrongType { key }) if key == "rl109"),
            keys,
        ));
    }
    c.shutdown().await;
    for (field, acquire, available, keys) in seen {
        assert!(
            acquire && available && keys == ["rl109"],
            "{field}: try_acquire WrongType {acquire}, available_permits WrongType {available}, \
             keys left {keys:?}"
        );
    }
}
