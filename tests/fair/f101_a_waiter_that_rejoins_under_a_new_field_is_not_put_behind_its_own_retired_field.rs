//! A fair waiter whose attempt's outcome was unknown retires its field and rejoins under a new
//! one with the same ticket, while the old field's leave is still on its way (it is sent in the
//! background). The old field, with the same ticket, must not stand first ahead of the waiter
//! itself (the waiter would be told to wait behind itself until the leave landed): when the
//! lock is free, the rejoining attempt takes it, the retired field is gone from the line (its
//! ticket, heartbeat deadline and first lease), and it was not handed the lock.
//! Driven at the script level, with the script as relock sends it.

use relock_tests::*;

const KEYS: [&str; 4] = [
    "f101",
    "redisson_lock_token:{f101}",
    "relock_fair_line:{f101}",
    "relock_fair_grant:{f101}",
];

/// `fair_acquire.lua` in "wait" mode for `field` with `ticket`, asking for a 5 s first lease,
/// `joined` ("1": a reply already showed it in line) and replacing `retired` (""): none); its
/// reply.
fn wait_as(
    server: &RedisServer,
    field: &str,
    ticket: &str,
    joined: &str,
    retired: &str,
) -> Vec<i64> {
    let mut args = vec!["EVAL", relock::lua::FAIR_ACQUIRE, "4"];
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
        joined,
        "relock_fair_channel:{f101}",
        retired,
    ]);
    match server.cmd(&args).unwrap() {
        relock_testkit::Value::Array(Some(items)) => {
            items.iter().map(|v| v.as_int().unwrap()).collect()
        }
        other => panic!("{other:?}"),
    }
}

fn wait(server: &RedisServer, field: &str, ticket: &str) -> Vec<i64> {
    wait_as(server, field, ticket, "0", "")
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
    let r = wait_as(&server, "W:2", &ticket, "0", "W:1");
    assert_eq!(r[0], 1, "the free lock goes to the rejoining waiter: {r:?}");
    let fields = server.cmd(&["HKEYS", "f101"]).unwrap();
    assert_eq!(
        fields,
        relock_testkit::Value::Array(Some(vec![relock_testkit::Value::Bulk(Some(
            b"W:2".to_vec()
        ))])),
        "only the rejoined field holds it"
    );
    assert_eq!(
        server.cmd(&["ZRANGE", KEYS[2], "0", "-1"]).unwrap(),
        relock_testkit::Value::Array(Some(Vec::new())),
        "nothing of either field is left in the line"
    );
    assert_eq!(
        fair_grant(&server, "f101"),
        None,
        "the retired field was not handed the lock"
    );
}

/// A late script of the retired field (its attempt timed out in the client but ran later) does
/// not remove the rejoined entry, and the waiter behind does not take a free lock while the
/// rejoining waiter stands first.
#[tokio::test]
async fn neither_a_late_script_of_the_retired_field_nor_the_waiter_behind_takes_the_rejoined_place()
{
    let server = server();
    server.cmd(&["HSET", "f101", "H:1", "1"]).unwrap();
    server.cmd(&["PEXPIRE", "f101", "30000"]).unwrap();
    let ticket = wait(&server, "W:1", "0")[2].to_string();
    let behind = wait(&server, "C:1", "0");
    assert_eq!(behind[3], 0, "C is in line: {behind:?}");
    assert_eq!(fair_line(&server, "f101"), ["W:1", "C:1"], "C is second");
    // W rejoins as W:2 while the lock is held; then W:1's late attempt lands.
    let r = wait_as(&server, "W:2", &ticket, "0", "W:1");
    assert_eq!((r[0], r[3]), (0, 0), "W:2 is in line: {r:?}");
    assert_eq!(
        fair_line(&server, "f101"),
        ["W:2", "C:1"],
        "W:2 stands first"
    );
    for member in ["W:1", "alive:W:1", "lease:W:1"] {
        assert_eq!(
            server
                .cmd(&["ZSCORE", KEYS[2], member])
                .unwrap()
                .as_string(),
            None,
            "{member} is left in the line"
        );
    }
    let late = wait_as(&server, "W:1", &ticket, "1", "");
    assert_eq!(late[3], -2, "the retired field stays out of line: {late:?}");
    assert_eq!(fair_line(&server, "f101"), ["W:2", "C:1"]);
    // The holder's lease ends without a release: C's next attempt finds W:2 first.
    server.cmd(&["DEL", "f101"]).unwrap();
    let c = wait(&server, "C:1", "0");
    assert_ne!(c[0], 1, "C does not jump the rejoined waiter: {c:?}");
    let w = wait_as(&server, "W:2", &ticket, "1", "");
    assert!(
        w[0] == 1 || w[0] == 3,
        "W:2 takes it (or was handed it): {w:?}"
    );
}
