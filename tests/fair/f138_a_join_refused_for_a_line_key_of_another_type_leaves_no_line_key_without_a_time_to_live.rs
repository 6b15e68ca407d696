//! A waiter joins the line of a held fair lock while one of the line's keys (the queue, the
//! heartbeats, the handoff hash) holds a value of another type, written by someone else under
//! relock's own key name. The join is refused with an error, and leaves nothing of its own
//! behind: no key of the line without a time to live, no entry for the waiter, and the other
//! type's key as it was.

use std::time::Duration;

use relock_testkit::Value;
use relock_tests::*;

const LINE: [&str; 4] = [
    "relock_fair_queue:{f138}",
    "relock_fair_alive:{f138}",
    "relock_fair_seq:{f138}",
    "relock_fair_handoff:{f138}",
];

fn int(server: &RedisServer, args: &[&str]) -> i64 {
    match server.cmd(args).unwrap() {
        Value::Int(n) => n,
        other => panic!("{args:?} replied {other:?}"),
    }
}

#[tokio::test]
async fn a_join_refused_for_a_line_key_of_another_type_leaves_no_line_key_without_a_time_to_live() {
    let server = server();
    let heartbeat = Duration::from_secs(2);
    let h = fair_client(&server, heartbeat).await;
    let w = fair_client(&server, heartbeat).await;
    let held = h.fair_lock("f138").lock().await.unwrap();
    for foreign in [
        "relock_fair_queue:{f138}",
        "relock_fair_alive:{f138}",
        "relock_fair_handoff:{f138}",
    ] {
        server.cmd(&["SET", foreign, "x", "PX", "600000"]).unwrap();
        let l = w.fair_lock("f138");
        let r = bounded(Duration::from_secs(10), "the refused join", async move {
            l.lock().await.map(|g| g.fencing_token())
        })
        .await;
        assert!(
            r.is_err(),
            "the join must be refused with {foreign} a string: {r:?}"
        );
        for key in LINE.iter().filter(|k| **k != foreign) {
            assert_ne!(
                int(&server, &["PTTL", key]),
                -1,
                "{key} was left without a time to live by a join refused for {foreign}"
            );
        }
        for zset in ["relock_fair_queue:{f138}", "relock_fair_alive:{f138}"] {
            if zset != foreign {
                assert_eq!(
                    int(&server, &["EXISTS", zset]),
                    0,
                    "{zset} holds an entry of a join refused for {foreign}"
                );
            }
        }
        assert_eq!(
            server.cmd(&["GET", foreign]).unwrap(),
            Value::Bulk(Some(b"x".to_vec())),
            "{foreign} was changed"
        );
        assert!(
            int(&server, &["PTTL", foreign]) > 590_000,
            "{foreign}'s TTL was changed"
        );
        server.cmd(&["DEL", foreign]).unwrap();
        for key in LINE {
            server.cmd(&["DEL", key]).unwrap();
        }
    }
    held.unlock().await.unwrap();
    h.shutdown().await;
    w.shutdown().await;
    server.cmd(&["DEL", "redisson_lock_token:{f138}"]).unwrap();
    assert_nothing_left(&server).await;
}
