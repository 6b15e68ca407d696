//! A fair waiter whose attempt's outcome was unknown retires its field and rejoins under a new
//! one with the same ticket, while the old field's leave is still on its way (it is sent in the
//! background). The old field, with the same ticket, must not stand first ahead of the waiter
//! itself: when the lock is free, the rejoining attempt takes it, and the retired field is
//! gone from the line (not handed nor told the lock). Before, the retired field was found
//! first, so the waiter was told to wait behind itself until the leave landed: under load a
//! fair waiter whose replies were held took seconds to get a free lock (`x99` once timed
//! out). Driven at the script level, with the script as relock sends it.

use relock_tests::*;

const KEYS: [&str; 6] = [
    "f101",
    "redisson_lock_token:{f101}",
    "relock_fair_queue:{f101}",
    "relock_fair_alive:{f101}",
    "relock_fair_seq:{f101}",
    "relock_fair_handoff:{f101}",
];

/// `fair_acquire.lua` in "wait" mode for `field` with `ticket`, asking for a 5 s first lease;
/// its reply.
fn wait(server: &RedisServer, field: &str, ticket: &str) -> Vec<i64> {
    let mut args = vec!["EVAL", relock::lua::FAIR_ACQUIRE, "6"];
    args.extend(KEYS);
    args.extend([
        "30000",
        field,
        "60000",
        "10000",
        "wait",
        ticket,
        "publish",
        "5000",
        "0",
        "relock_fair_channel:{f101}",
    ]);
    match server.cmd(&args).unwrap() {
        relock_testkit::Value::Array(Some(items)) => {
            items.iter().map(|v| v.as_int().unwrap()).collect()
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_waiter_that_rejoins_under_a_new_field_is_not_put_behind_its_own_retired_field() {
    let server = server();
    // Someone holds it; the waiter joins under W:1 and gets its ticket.
    server.cmd(&["HSET", "f101", "H:1", "1"]).unwrap();
    server.cmd(&["PEXPIRE", "f101", "30000"]).unwrap();
    let joined = wait(&server, "W:1", "0");
    assert_eq!(joined[0], 0, "held: {joined:?}");
    let ticket = joined[2].to_string();
    // The holder goes (its release's message is beside the point here).
    server.cmd(&["DEL", "f101"]).unwrap();
    // W:1's attempt had no reply: the waiter rejoins as W:2 with its ticket, before W:1's
    // leave lands.
    let r = wait(&server, "W:2", &ticket);
    assert_eq!(r[0], 1, "the free lock goes to the rejoining waiter: {r:?}");
    let fields = server.cmd(&["HKEYS", "f101"]).unwrap();
    assert_eq!(
        fields,
        relock_testkit::Value::Array(Some(vec![relock_testkit::Value::Bulk(Some(
            b"W:2".to_vec()
        ))])),
        "only the rejoined field holds it"
    );
    assert!(
        fair_line(&server, "f101").is_empty(),
        "{:?}",
        fair_line(&server, "f101")
    );
    assert_eq!(
        server.cmd(&["HGET", KEYS[5], "W:1"]).unwrap().as_string(),
        None,
        "the retired field was neither handed the lock nor kept a first lease"
    );
}
