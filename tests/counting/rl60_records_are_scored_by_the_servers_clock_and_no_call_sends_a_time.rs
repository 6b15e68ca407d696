//! "Now" is the server's clock: the acquire script reads `TIME` itself, and what a client
//! sends (seen in the server's SLOWLOG, which logs every command's arguments) is the permits
//! and a 16-byte random id, never a time. Each grant's record is scored by the server's time
//! of the grant, in ms, and holds Redisson's bytes: a length byte, the 16-byte id and the
//! permits in 4 bytes.

use std::time::Duration;

use relock::RateType;
use relock_testkit::Value;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_are_scored_by_the_servers_clock_and_no_call_sends_a_time() {
    let server = server();
    let c = client(&server).await;
    let l = c.rate_limiter("rl60");
    assert!(l
        .try_set_rate(RateType::Overall, 10, Duration::from_secs(60))
        .await
        .unwrap());
    assert!(relock::lua::RATE_ACQUIRE.contains("redis.call('time')"));

    server
        .cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"])
        .unwrap();
    server.cmd(&["SLOWLOG", "RESET"]).unwrap();
    let before = server_ms(&server);
    assert!(l.try_acquire(3).await.unwrap());
    let after = server_ms(&server);
    let Value::Array(Some(entries)) = server.cmd(&["SLOWLOG", "GET", "100"]).unwrap() else {
        panic!("SLOWLOG GET")
    };
    let calls: Vec<Vec<String>> = entries
        .iter()
        .filter_map(|e| match e {
            Value::Array(Some(fields)) => match &fields[3] {
                Value::Array(Some(args)) => {
                    Some(args.iter().map(|a| a.as_string().unwrap()).collect())
                }
                _ => None,
            },
            _ => None,
        })
        .filter(|args: &Vec<String>| args[0].eq_ignore_ascii_case("evalsha"))
        .collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    let args = &calls[0];
    // EVALSHA sha 6 <Redisson's five keys, relock's one> n id
    assert_eq!(args.len(), 2 + 1 + 6 + 2, "{args:?}");
    assert_eq!(args[2], "6");
    assert_eq!(args[9], "3");
    assert!(
        args[10].len() == 32 && args[10].bytes().all(|b| b.is_ascii_hexdigit()),
        "{args:?}"
    );
    // Nothing sent reads as a time in ms or s near the server's.
    for a in &args[2..] {
        if let Ok(n) = a.parse::<i64>() {
            assert!(
                (n - before).abs() > 86_400_000 && (n - before / 1000).abs() > 86_400,
                "{a}"
            );
        }
    }

    // The record: scored by the server's time of the grant, in Redisson's bytes.
    let Value::Array(Some(scored)) = server
        .cmd(&["ZRANGE", "{rl60}:permits", "0", "-1", "WITHSCORES"])
        .unwrap()
    else {
        panic!("ZRANGE")
    };
    let score: i64 = scored[1].as_string().unwrap().parse().unwrap();
    assert!(
        before <= score && score <= after,
        "{before} <= {score} <= {after}"
    );
    let decoded = server
        .cmd(&[
            "EVAL",
            "local m = redis.call('zrange', KEYS[1], 0, 0) local id, n = struct.unpack('Bc0I', m[1]) return {string.len(m[1]), string.len(id), n, string.byte(m[1], 1)}",
            "1",
            "{rl60}:permits",
        ])
        .unwrap();
    assert_eq!(
        decoded,
        Value::Array(Some(vec![
            Value::Int(21),
            Value::Int(16),
            Value::Int(3),
            Value::Int(16)
        ]))
    );
    assert!(l.delete().await.unwrap());
    c.shutdown().await;
    assert_nothing_left(&server).await;
}
