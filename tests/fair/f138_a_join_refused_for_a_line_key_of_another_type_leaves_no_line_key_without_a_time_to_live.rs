//! A waiter joins the line of a held fair lock whose queue key holds a value of another type (a
//! string written under `relock_fair_queue:{name}`). The join is refused with WRONGTYPE, and
//! must leave no key of the line behind that lives forever: before it reads the queue it must
//! not create the ticket sequence (nor anything else) without a time to live.

use std::time::Duration;

use relock_testkit::Value;
use relock_tests::*;

const NAME: &str = "f138";

fn pttl(server: &RedisServer, key: &str) -> i64 {
    match server.cmd(&["PTTL", key]).unwrap() {
        Value::Int(n) => n,
        other => panic!("PTTL {key} replied {other:?}"),
    }
}

#[tokio::test]
#[ignore = "reproduces a bug: the join INCRs/SETs relock_fair_seq (and ZADDs the queue) before a line key's WRONGTYPE, leaving keys without a TTL"]
async fn a_join_refused_for_a_line_key_of_another_type_leaves_no_line_key_without_a_time_to_live() {
    let server = server();
    let heartbeat = Duration::from_secs(2);
    let h = fair_client(&server, heartbeat).await;
    let w = fair_client(&server, heartbeat).await;
    let _held = h.fair_lock(NAME).lock().await.unwrap();
    server
        .cmd(&["SET", "relock_fair_queue:{f138}", "x", "PX", "600000"])
        .unwrap();

    let l = w.fair_lock(NAME);
    let r = bounded(Duration::from_secs(10), "the refused join", async move {
        l.lock().await.map(|g| g.fencing_token())
    })
    .await;
    assert!(r.is_err(), "the join must be refused: {r:?}");

    for key in [
        "relock_fair_seq:{f138}",
        "relock_fair_alive:{f138}",
        "relock_fair_handoff:{f138}",
    ] {
        assert_ne!(
            pttl(&server, key),
            -1,
            "{key} was left without a time to live by a refused join"
        );
    }
}
