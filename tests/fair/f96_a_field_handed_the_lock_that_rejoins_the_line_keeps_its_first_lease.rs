//! The handoff hash names the field handed the lock last (`relock:last-grant`), so that the
//! next grant drops that field's token record (f95). A plain (or older) client can take the
//! free lock without clearing that pointer, and the named field can rejoin the line under the
//! same field (its first join's reply was lost, so it still says it never joined). The next
//! grant must then leave its entry alone: it is a first lease again, not a token record.
//! Dropping it made a later release only tell that waiter instead of handing it the lock
//! (review of the handoff). Driven at the script level, with the scripts as relock sends them.

use std::time::Duration;

use relock_tests::*;

const KEYS: [&str; 6] = [
    "f96",
    "redisson_lock_token:{f96}",
    "relock_fair_queue:{f96}",
    "relock_fair_alive:{f96}",
    "relock_fair_seq:{f96}",
    "relock_fair_handoff:{f96}",
];

/// `fair_acquire.lua` in "wait" mode for `field` with `ticket`, asking for `first_lease` ms
/// if handed the lock; `joined`: a reply already showed it in line.
fn acquire(server: &RedisServer, field: &str, ticket: &str, first_lease: &str, joined: &str) {
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
        first_lease,
        joined,
        FAIR_CHANNEL,
    ]);
    server.cmd(&args).unwrap();
}

const CHANNEL: &str = "redisson_lock__channel:{f96}";
const FAIR_CHANNEL: &str = "relock_fair_channel:{f96}";

fn handoff(server: &RedisServer, field: &str) -> Option<String> {
    server.cmd(&["HGET", KEYS[5], field]).unwrap().as_string()
}

#[tokio::test]
async fn a_field_handed_the_lock_that_rejoins_the_line_keeps_its_first_lease() {
    let server = server();
    acquire(&server, "H:1", "0", "0", "0"); // H holds
    acquire(&server, "A:1", "0", "300", "0"); // A waits (first ticket), first lease 300 ms
    acquire(&server, "W:1", "0", "5000", "0"); // W waits (next ticket)
                                               // H releases: A is handed the lock for 300 ms.
    let (l, q, alive, seq, counter, h) = (KEYS[0], KEYS[2], KEYS[3], KEYS[4], KEYS[1], KEYS[5]);
    let release = [
        "EVAL",
        relock::lua::FAIR_RELEASE,
        "6",
        l,
        q,
        alive,
        seq,
        counter,
        h,
        "H:1",
        "all",
        "publish",
        "60000",
        CHANNEL,
        FAIR_CHANNEL,
    ];
    server.cmd(&release).unwrap();
    let token = handoff(&server, "A:1").expect("A's token record");
    assert!(token.parse::<f64>().unwrap() >= 1e15, "{token}");
    // A never takes it; its hold runs out. A plain client takes the free lock (the lock hash
    // as a plain acquire writes it), without touching the line.
    wait_until(
        Duration::from_secs(3),
        "A's handed hold to run out",
        || async { server.cmd(&["EXISTS", l]).unwrap().as_int() == Some(0) },
    )
    .await
    .unwrap();
    server.cmd(&["HSET", l, "P:1", "1"]).unwrap();
    server.cmd(&["PEXPIRE", l, "30000"]).unwrap();
    // A's first join reply was lost, so it asks again as if it never joined: it rejoins under
    // the same field, asking for a first lease again.
    acquire(&server, "A:1", "0", "5000", "0");
    assert_eq!(handoff(&server, "A:1").as_deref(), Some("5000"));
    // P leaves; W, first in line, takes the free lock itself.
    server.cmd(&["DEL", l]).unwrap();
    acquire(&server, "W:1", "2", "5000", "1");
    assert_eq!(
        server.cmd(&["HEXISTS", l, "W:1"]).unwrap().as_int(),
        Some(1),
        "W holds"
    );
    assert_eq!(
        handoff(&server, "A:1").as_deref(),
        Some("5000"),
        "the grant to W dropped the first lease of A, which is waiting again"
    );
}
