//! Guarded writes from every kind whose holds live in a lock hash: the plain lock, the fair
//! lock, a read-write lock's write side (its read side may only read), a job's run and an
//! election's leader. A force-unlocked hold's write is refused by the server; a key outside
//! the lock's slot is refused before anything is sent, naming the key and its tagged form; a
//! quorum lock refuses, pointing to fenced keys.

use std::time::Duration;

use relock::fred::types::Value;
use relock::{Commands, Error};
use relock_tests::*;

fn set(key: &str, value: &str) -> Commands {
    Commands::new()
        .cmd("SET")
        .key(key)
        .arg(value)
        .cmd("GET")
        .key(key)
}

fn echoed(r: relock::Result<Vec<Value>>, value: &str) {
    let replies = r.unwrap();
    assert_eq!(replies.len(), 2);
    assert_eq!(replies[1].as_string().as_deref(), Some(value));
}

#[tokio::test]
async fn every_kind_held_in_a_lock_hash_writes_under_its_hold_and_a_key_outside_its_slot_is_refused(
) {
    let server = server();
    let c = client(&server).await;
    let other = client(&server).await;

    let g = c.lock("t104").lock().await.unwrap();
    echoed(g.write(set("{t104}:plain", "1")).await, "1");
    g.unlock().await.unwrap();

    let g = c.fair_lock("t104:fair").lock().await.unwrap();
    echoed(g.write(set("{t104:fair}:v", "2")).await, "2");
    g.unlock().await.unwrap();

    let rw = c.read_write_lock("t104:rw");
    let w = rw.write_lock().lock().await.unwrap();
    echoed(w.write(set("{t104:rw}:v", "3")).await, "3");
    w.unlock().await.unwrap();
    let r = rw.read_lock().lock().await.unwrap();
    let read = r
        .read(Commands::new().cmd("GET").key("{t104:rw}:v"))
        .await
        .unwrap();
    assert_eq!(read[0].as_string().as_deref(), Some("3"));
    assert!(matches!(
        r.write(set("{t104:rw}:v", "x")).await,
        Err(Error::InvalidArgument { .. })
    ));
    // A command that writes is refused by the server in a guarded read.
    assert!(matches!(
        r.read(set("{t104:rw}:v", "x")).await,
        Err(Error::Redis { .. })
    ));
    // A reader's field (or the hash's `mode`) handed to write_as: refused by the server.
    let reader = r.owner().to_string();
    assert!(matches!(
        c.lock("t104:rw")
            .write_as(&reader, set("{t104:rw}:v", "x"))
            .await,
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        c.lock("t104:rw")
            .write_as("mode", set("{t104:rw}:v", "x"))
            .await,
        Err(Error::LockLost { .. })
    ));
    r.unlock().await.unwrap();

    let job = c.job("t104:job", Duration::from_secs(10));
    let out = job
        .run(async |run| run.write(set("{t104:job}:v", "4")).await)
        .await
        .unwrap()
        .unwrap();
    echoed(out, "4");

    let leader = c.election("t104:el").campaign("me").await.unwrap();
    echoed(
        leader.lock_guard().write(set("{t104:el}:v", "5")).await,
        "5",
    );
    leader.resign().await.unwrap();
    // The election's record says how the term ended for a watchdog lease: not this test's.
    server.cmd(&["DEL", "relock_election:{t104:el}"]).unwrap();

    // A command that fails midway: the server's error, the lock's key not blamed; the
    // command before it stays applied. A command too long for one script call: refused.
    let g = c.lock("t104").lock().await.unwrap();
    server.cmd(&["HSET", "{t104}:h", "f", "1"]).unwrap();
    let r = g
        .write(
            Commands::new()
                .cmd("SET")
                .key("{t104}:before")
                .arg("1")
                .cmd("INCR")
                .key("{t104}:h"),
        )
        .await;
    assert!(matches!(&r, Err(Error::Redis { .. })), "{r:?}");
    assert_eq!(
        server
            .cmd(&["GET", "{t104}:before"])
            .unwrap()
            .as_string()
            .as_deref(),
        Some("1")
    );
    let mut long = Commands::new().cmd("SADD").key("{t104}:s");
    for i in 0..relock::MAX_COMMAND_WORDS {
        long = long.arg(i);
    }
    assert!(matches!(
        g.write(long).await,
        Err(Error::InvalidArgument { .. })
    ));
    assert_eq!(
        server.cmd(&["EXISTS", "{t104}:s"]).unwrap().as_int(),
        Some(0)
    );
    g.unlock().await.unwrap();
    server.cmd(&["DEL", "{t104}:h", "{t104}:before"]).unwrap();

    // Force-unlocked by someone else: the server refuses, nothing is written.
    let g = c.lock("t104").lock().await.unwrap();
    assert!(other.lock("t104").force_unlock().await.unwrap());
    let r = g.write(set("{t104}:plain", "stale")).await;
    assert!(
        matches!(&r, Err(Error::LockLost { name }) if name == "t104"),
        "{r:?}"
    );
    assert_eq!(
        server
            .cmd(&["GET", "{t104}:plain"])
            .unwrap()
            .as_string()
            .as_deref(),
        Some("1")
    );
    drop(g);

    // Another slot: refused before sending, naming the key and the tagged form.
    let g = c.lock("t104").lock().await.unwrap();
    let calls = server.command_calls("evalsha").unwrap();
    match g.write(set("t104:elsewhere", "x")).await {
        Err(Error::InvalidArgument { reason, .. }) => {
            assert!(reason.contains("`t104:elsewhere`"), "{reason}");
            assert!(reason.contains("`{t104}:t104:elsewhere`"), "{reason}");
        }
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    assert_eq!(server.command_calls("evalsha").unwrap(), calls);
    assert_eq!(
        server.cmd(&["EXISTS", "t104:elsewhere"]).unwrap().as_int(),
        Some(0)
    );
    assert!(matches!(
        g.write(Commands::new()).await,
        Err(Error::InvalidArgument { .. })
    ));
    g.unlock().await.unwrap();

    // A quorum lock has no single server: refused, pointing to fenced keys.
    let masters = masters(3);
    let q = quorum_client(&masters, Duration::from_secs(30), Duration::ZERO).await;
    let qg = q.lock("t104:q").lock().await.unwrap();
    match qg.write(set("{t104:q}:v", "x")).await {
        Err(Error::InvalidArgument { reason, .. }) => {
            assert!(reason.contains("FencedKey"), "{reason}")
        }
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    qg.unlock().await.unwrap();
    q.shutdown().await;

    server
        .cmd(&[
            "DEL",
            "{t104}:plain",
            "{t104:fair}:v",
            "{t104:rw}:v",
            "{t104:job}:v",
            "{t104:el}:v",
        ])
        .unwrap();
    c.shutdown().await;
    other.shutdown().await;
    assert_nothing_left(&server).await;
}
