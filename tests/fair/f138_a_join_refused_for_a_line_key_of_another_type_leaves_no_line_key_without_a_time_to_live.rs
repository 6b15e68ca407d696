//! A waiter joins the line of a held fair lock while one of the line's keys holds a value of
//! another type, written by someone else under relock's own key name.
//!
//! The line (`relock_fair_line:{name}`, a sorted set): the join is refused with an error, and
//! leaves nothing of its own behind: no key of the line's without a time to live, no entry for
//! the waiter, and the other type's key as it was.
//!
//! The grant record (`relock_fair_grant:{name}`, a string): a join reads it only when its own
//! field holds the lock (a handoff it has not heard of), so a join behind a holder never meets
//! it and is not refused. What holds instead: the join leaves that key as it was, puts the
//! waiter in line with the line's time to live, and the release hands the waiter the lock,
//! writing the grant record in place of the other type's key (a SET replaces a key of any
//! type), with the handed lease as its time to live. A join whose own field holds the lock
//! (handed it, the message not read yet) does read the record: a key of another type there holds
//! no record, so the join is refused as for a hold without its grant record, and changes nothing.

use std::time::Duration;

use relock_testkit::Value;
use relock_tests::*;

const LINE: &str = "relock_fair_line:{f138}";
const GRANT: &str = "relock_fair_grant:{f138}";

fn int(server: &RedisServer, args: &[&str]) -> i64 {
    match server.cmd(args).unwrap() {
        Value::Int(n) => n,
        other => panic!("{args:?} replied {other:?}"),
    }
}

/// Every key on the server has a time to live (the lock's lease, the fencing counter's grace,
/// the line's and the grant record's); says which does not.
fn assert_every_key_expires(server: &RedisServer, what: &str) {
    for key in server.keys().unwrap() {
        assert_ne!(
            int(server, &["PTTL", &key]),
            -1,
            "{key} was left without a time to live by {what}"
        );
    }
}

#[tokio::test]
async fn a_join_refused_for_a_line_key_of_another_type_leaves_no_line_key_without_a_time_to_live() {
    let server = server();
    let heartbeat = Duration::from_secs(2);
    let h = fair_client(&server, heartbeat).await;
    let w = fair_client(&server, heartbeat).await;
    let held = h.fair_lock("f138").lock().await.unwrap();

    // The line holds a string: the join is refused.
    server.cmd(&["SET", LINE, "x", "PX", "600000"]).unwrap();
    let l = w.fair_lock("f138");
    let r = bounded(Duration::from_secs(10), "the refused join", async move {
        l.lock().await.map(|g| g.fencing_token())
    })
    .await;
    assert!(
        r.is_err(),
        "the join must be refused with {LINE} a string: {r:?}"
    );
    assert_every_key_expires(&server, "a join refused for the line");
    assert_eq!(
        int(&server, &["EXISTS", GRANT]),
        0,
        "a join refused for the line wrote the grant record"
    );
    assert_eq!(
        server.cmd(&["GET", LINE]).unwrap(),
        Value::Bulk(Some(b"x".to_vec())),
        "the line's key was changed"
    );
    assert!(
        int(&server, &["PTTL", LINE]) > 590_000,
        "the line's key's TTL was changed"
    );
    server.cmd(&["DEL", LINE]).unwrap();

    // The grant record's key holds a hash: a join behind the holder never reads it.
    server.cmd(&["HSET", GRANT, "someone", "else"]).unwrap();
    server.cmd(&["PEXPIRE", GRANT, "600000"]).unwrap();
    let waiter = {
        let l = w.fair_lock("f138");
        spawn_in_line(&server, "f138", 1, async move { l.lock().await }).await
    };
    let field = fair_line(&server, "f138")[0].clone();
    assert_every_key_expires(&server, "a join beside a grant key of another type");
    let line_ttl = int(&server, &["PTTL", LINE]);
    assert!(
        line_ttl > 0 && line_ttl <= 3000,
        "the line lives its heartbeat deadline and a second: {line_ttl} ms"
    );
    assert_eq!(
        server.cmd(&["HGETALL", GRANT]).unwrap(),
        Value::Array(Some(vec![
            Value::Bulk(Some(b"someone".to_vec())),
            Value::Bulk(Some(b"else".to_vec())),
        ])),
        "the join changed the grant key"
    );
    assert!(
        int(&server, &["PTTL", GRANT]) > 590_000,
        "the join changed the grant key's TTL"
    );

    // The release hands the waiter the lock: its grant record replaces the hash.
    held.unlock().await.unwrap();
    let g = bounded(Duration::from_secs(10), "the waiter", waiter)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(g.owner(), field);
    assert_eq!(
        fair_grant(&server, "f138"),
        Some((field, g.fencing_token().to_string()))
    );
    // The handed lease is its first lease, at most its heartbeat deadline.
    let grant_ttl = int(&server, &["PTTL", GRANT]);
    assert!(
        grant_ttl > 0 && grant_ttl <= 2000,
        "the grant record lives the handed lease: {grant_ttl} ms"
    );
    g.unlock().await.unwrap();

    // A join whose field holds the lock reads the grant record: a hash there is no record, and
    // the join is refused.
    server.cmd(&["HSET", "f138", "F:1", "1"]).unwrap();
    server.cmd(&["PEXPIRE", "f138", "30000"]).unwrap();
    server.cmd(&["HSET", GRANT, "someone", "else"]).unwrap();
    server.cmd(&["PEXPIRE", GRANT, "600000"]).unwrap();
    let join = [
        "EVAL",
        relock::lua::FAIR_ACQUIRE,
        "4",
        "f138",
        "redisson_lock_token:{f138}",
        LINE,
        GRANT,
        "30000",
        "F:1",
        "60000",
        "2000",
        "wait",
        "0",
        "publish",
        "2000",
        "0",
        "relock_fair_channel:{f138}",
    ];
    match server.cmd(&join) {
        Err(relock_testkit::Error::Command { reply, .. }) => {
            assert!(reply.contains("without its handoff record"), "{reply}")
        }
        other => panic!("the join of the field holding the lock: {other:?}"),
    }
    assert_eq!(
        int(&server, &["EXISTS", LINE]),
        0,
        "the refused join joined"
    );
    assert_eq!(
        server.cmd(&["HGETALL", "f138"]).unwrap(),
        Value::Array(Some(vec![
            Value::Bulk(Some(b"F:1".to_vec())),
            Value::Bulk(Some(b"1".to_vec())),
        ])),
        "the refused join changed the lock"
    );
    assert_eq!(int(&server, &["HLEN", GRANT]), 1);
    assert!(int(&server, &["PTTL", GRANT]) > 590_000);
    assert_every_key_expires(&server, "a join refused for the grant record");
    // A late release of a hold that is gone looks for its grant record, finds none in the
    // hash, and answers as for any gone hold (nil), leaving that key as it was.
    let late_release = [
        "EVAL",
        relock::lua::FAIR_RELEASE,
        "4",
        "f138",
        LINE,
        "redisson_lock_token:{f138}",
        GRANT,
        "G:1",
        "all",
        "publish",
        "60000",
        "redisson_lock__channel:{f138}",
        "relock_fair_channel:{f138}",
    ];
    assert_eq!(server.cmd(&late_release).unwrap(), Value::Bulk(None));
    assert_eq!(int(&server, &["HLEN", GRANT]), 1);
    server.cmd(&["DEL", "f138", GRANT]).unwrap();

    h.shutdown().await;
    w.shutdown().await;
    server.cmd(&["DEL", "redisson_lock_token:{f138}"]).unwrap();
    assert_nothing_left(&server).await;
}
