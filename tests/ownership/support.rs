//! Helpers shared by the ownership scenarios.

use relock_tests::RedisServer;

/// A plain Redis connection (not relock's), for the data the critical sections protect and for
/// publishing on a lock's channel.
pub async fn raw_redis(server: &RedisServer) -> fred::clients::Client {
    use fred::interfaces::ClientLike;
    let config = fred::types::config::Config::from_url(&server.url()).unwrap();
    let c = fred::types::Builder::from_config(config).build().unwrap();
    c.init().await.unwrap();
    c
}

/// A server reply as an integer (panics naming `what` otherwise).
pub fn int(server: &RedisServer, args: &[&str]) -> i64 {
    let v = server.cmd(args).unwrap();
    v.as_int()
        .unwrap_or_else(|| panic!("{args:?} replied {v:?}"))
}

/// `HGETALL key` as (field, value) pairs.
pub fn hgetall(server: &RedisServer, key: &str) -> Vec<(String, String)> {
    match server.cmd(&["HGETALL", key]).unwrap() {
        relock_testkit::Value::Array(Some(items)) => items
            .chunks(2)
            .map(|p| (p[0].as_string().unwrap(), p[1].as_string().unwrap()))
            .collect(),
        other => panic!("HGETALL {key} replied {other:?}"),
    }
}
