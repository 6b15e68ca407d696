//! A waiter's first lease lives in the line (`lease:<field>`), and the grant record
//! (`relock_fair_grant:{name}`, `<field>=<token>`) names the field handed the lock last. A
//! field handed the lock can lose that hold without its own release (a client that knows
//! nothing of the grant record deletes the lock hash, and a plain client takes the free lock),
//! and then rejoin the line under the same field (its first join's reply was lost, so it still
//! says it never joined) while the grant record still names it. Its rejoin writes its first
//! lease again, and the grants that follow (a waiter ahead taking the free lock itself) must
//! leave it alone: each one takes only its own waiter out of the line and writes only the
//! grant record. The next release then hands that field the lock with the lease it asked for,
//! instead of only telling it to come. Driven at the script level, with the scripts as relock
//! sends them.

use relock_testkit::Value;
use relock_tests::*;

const LOCK: &str = "f96";
const COUNTER: &str = "redisson_lock_token:{f96}";
const LINE: &str = "relock_fair_line:{f96}";
const GRANT: &str = "relock_fair_grant:{f96}";
const CHANNEL: &str = "redisson_lock__channel:{f96}";
const FAIR_CHANNEL: &str = "relock_fair_channel:{f96}";

/// `fair_acquire.lua` in "wait" mode for `field` with `ticket`, asking for `first_lease` ms
/// if handed the lock; `joined`: a reply already showed it in line. Its reply.
fn acquire(
    server: &RedisServer,
    field: &str,
    ticket: &str,
    first_lease: &str,
    joined: &str,
) -> Vec<i64> {
    let mut args = vec!["EVAL", relock::lua::FAIR_ACQUIRE, "4"];
    args.extend([LOCK, COUNTER, LINE, GRANT]);
    args.extend([
        "30000",
        field,
        "60000",
        "10000",
        "wait",
        ticket,
        "publish",
        first_lease,
        joined,
        FAIR_CHANNEL,
    ]);
    match server.cmd(&args).unwrap() {
        Value::Array(Some(items)) => items.iter().map(|v| v.as_int().unwrap()).collect(),
        other => panic!("{other:?}"),
    }
}

/// `fair_release.lua` of `field`'s whole hold.
fn release(server: &RedisServer, field: &str) {
    let args = [
        "EVAL",
        relock::lua::FAIR_RELEASE,
        "4",
        LOCK,
        LINE,
        COUNTER,
        GRANT,
        field,
        "all",
        "publish",
        "60000",
        CHANNEL,
        FAIR_CHANNEL,
    ];
    assert_eq!(server.cmd(&args).unwrap().as_int(), Some(1), "{field}");
}

/// The first lease `field` asked for, as the line keeps it.
fn first_lease(server: &RedisServer, field: &str) -> Option<String> {
    server
        .cmd(&["ZSCORE", LINE, &format!("lease:{field}")])
        .unwrap()
        .as_string()
}

fn strings(v: Value) -> Vec<String> {
    match v {
        Value::Array(Some(items)) => items.iter().filter_map(|v| v.as_string()).collect(),
        _ => Vec::new(),
    }
}

fn holds(server: &RedisServer, field: &str) -> bool {
    server.cmd(&["HEXISTS", LOCK, field]).unwrap().as_int() == Some(1)
}

#[tokio::test]
async fn a_field_handed_the_lock_that_rejoins_the_line_keeps_its_first_lease() {
    let server = server();
    assert_eq!(acquire(&server, "H:1", "0", "0", "0")[0], 1, "H holds");
    // A waits (first ticket), first lease 30 s; W waits behind it, first lease 5 s.
    assert_eq!(acquire(&server, "A:1", "0", "30000", "0")[0], 0);
    let w = acquire(&server, "W:1", "0", "5000", "0");
    assert_eq!((w[0], w[3]), (0, 0), "W in line: {w:?}");
    assert_eq!(fair_line(&server, LOCK), ["A:1", "W:1"]);
    assert_eq!(first_lease(&server, "A:1").as_deref(), Some("30000"));

    // H releases: A is handed the lock; it is out of the line, its first lease with it, and
    // the grant record names it.
    release(&server, "H:1");
    assert!(holds(&server, "A:1"), "A was handed the lock");
    let (granted, a_token) = fair_grant(&server, LOCK).expect("the grant record");
    assert_eq!(granted, "A:1");
    assert_eq!(fair_line(&server, LOCK), ["W:1"]);
    assert_eq!(first_lease(&server, "A:1"), None);

    // A never takes it: its hold goes without a release (the lock hash deleted by a client
    // that knows nothing of the grant record), and a plain client takes the free lock (the
    // lock hash as a plain acquire writes it), touching neither the line nor the record.
    server.cmd(&["DEL", LOCK]).unwrap();
    server.cmd(&["HSET", LOCK, "P:1", "1"]).unwrap();
    server.cmd(&["PEXPIRE", LOCK, "30000"]).unwrap();
    // A's first join reply was lost, so it asks again as if it never joined: it rejoins under
    // the same field (behind W), asking for a first lease again, while the grant record still
    // names it.
    let a = acquire(&server, "A:1", "0", "5000", "0");
    assert_eq!((a[0], a[3]), (0, 0), "A in line again: {a:?}");
    assert_eq!(fair_line(&server, LOCK), ["W:1", "A:1"]);
    assert_eq!(first_lease(&server, "A:1").as_deref(), Some("5000"));
    assert_eq!(
        fair_grant(&server, LOCK),
        Some(("A:1".to_owned(), a_token.clone()))
    );

    // P's hold ends; W, first in line, takes the free lock itself.
    server.cmd(&["DEL", LOCK]).unwrap();
    assert_eq!(
        acquire(&server, "W:1", &w[2].to_string(), "5000", "1")[0],
        1
    );
    assert!(holds(&server, "W:1"), "W holds");
    assert_eq!(fair_line(&server, LOCK), ["A:1"]);
    assert_eq!(
        first_lease(&server, "A:1").as_deref(),
        Some("5000"),
        "the grant to W dropped the first lease of A, which is waiting again"
    );

    // W releases: A is handed the lock, for the first lease it asked for when it rejoined.
    release(&server, "W:1");
    assert!(
        holds(&server, "A:1"),
        "the release only told A instead of handing it the lock: lock {:?}, line {:?}",
        strings(server.cmd(&["HGETALL", LOCK]).unwrap()),
        strings(
            server
                .cmd(&["ZRANGE", LINE, "0", "-1", "WITHSCORES"])
                .unwrap()
        )
    );
    let pttl = server.cmd(&["PTTL", LOCK]).unwrap().as_int().unwrap();
    assert!(pttl > 4000 && pttl <= 5000, "A's lease: {pttl} ms");
    let (granted, token) = fair_grant(&server, LOCK).expect("the grant record");
    assert_eq!(granted, "A:1");
    assert!(
        token.parse::<u64>().unwrap() > a_token.parse::<u64>().unwrap(),
        "{token} after {a_token}"
    );
    assert!(fair_line(&server, LOCK).is_empty());
}
