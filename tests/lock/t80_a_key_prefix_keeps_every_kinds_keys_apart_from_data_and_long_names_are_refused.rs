//! `ClientBuilder::key_prefix` puts every kind's keys under a prefix, so that a lock named as
//! the data it guards (`orders:42`) never meets that data; a prefix that would break the hash
//! tag rule, and a name over `relock::MAX_NAME_LEN`, are refused with a typed error whose
//! message does not print the name whole.

use std::time::Duration;

use relock::Error;
use relock_tests::kinds::KINDS;
use relock_tests::*;

#[tokio::test]
async fn a_key_prefix_keeps_every_kinds_keys_apart_from_data_and_long_names_are_refused() {
    let server = server();
    server
        .cmd(&["HSET", "orders:42", "status", "paid", "amount", "10"])
        .unwrap();
    server.cmd(&["SET", "stock:7", "12"]).unwrap();
    let c = relock::Client::builder()
        .url(server.url())
        .key_prefix("locks:")
        .command_timeout(Duration::from_secs(1))
        .build()
        .await
        .unwrap();
    let g = c.lock("orders:42").lock().await.unwrap();
    assert_eq!(
        server
            .cmd(&["TYPE", "locks:orders:42"])
            .unwrap()
            .as_string()
            .as_deref(),
        Some("hash")
    );
    assert_eq!(
        server
            .cmd(&["EXISTS", "redisson_lock_token:{locks:orders:42}"])
            .unwrap()
            .as_int(),
        Some(1)
    );
    assert!(c.lock("orders:42").is_locked().await.unwrap());
    g.unlock().await.unwrap();
    let r = c
        .read_write_lock("orders:42")
        .write_lock()
        .lock()
        .await
        .unwrap();
    r.unlock().await.unwrap();
    let s = c.semaphore("stock:7");
    assert!(s.try_set_permits(1).await.unwrap());
    assert_eq!(
        server.cmd(&["GET", "locks:stock:7"]).unwrap().as_int(),
        Some(1)
    );
    assert_eq!(server.cmd(&["GET", "stock:7"]).unwrap().as_int(), Some(12));
    server.cmd(&["DEL", "locks:stock:7"]).unwrap();
    assert!(c.lock("orders:42").force_unlock().await.is_ok());
    // The data is as it was.
    assert_eq!(
        server
            .cmd(&["HGET", "orders:42", "status"])
            .unwrap()
            .as_string()
            .as_deref(),
        Some("paid")
    );
    assert_eq!(
        server.cmd(&["HLEN", "orders:42"]).unwrap().as_int(),
        Some(2)
    );
    // Every kind, taken on the name of a hash of data: all it writes is under the prefix, and
    // the data is as it was.
    for kind in KINDS {
        let name = format!("t80:{}", kind.name);
        server.cmd(&["HSET", &name, "status", "paid"]).unwrap();
        let taken = (kind.make)(&c, &name).take().await.unwrap();
        let ours = |k: &String| k.starts_with("locks:") || k.contains("{locks:");
        let keys = server.keys().unwrap();
        let data = [name.as_str(), "orders:42", "stock:7"];
        let outside: Vec<&String> = keys
            .iter()
            .filter(|k| !ours(k) && !data.contains(&k.as_str()))
            .collect();
        assert!(outside.is_empty(), "{}: {outside:?}", kind.name);
        let mine = format!("locks:{name}");
        assert!(
            keys.iter().any(|k| k.contains(&mine)),
            "{}: nothing under the prefix: {keys:?}",
            kind.name
        );
        taken.give_back().await.unwrap();
        assert_eq!(
            server
                .cmd(&["HGET", &name, "status"])
                .unwrap()
                .as_string()
                .as_deref(),
            Some("paid"),
            "{}",
            kind.name
        );
        assert_eq!(
            server.cmd(&["HLEN", &name]).unwrap().as_int(),
            Some(1),
            "{}",
            kind.name
        );
        // The counts a semaphore keeps, and the rest of the kind's keys.
        server.cmd(&["DEL", &name]).unwrap();
        for k in server.keys().unwrap() {
            if k.contains(&mine) {
                server.cmd(&["DEL", &k]).unwrap();
            }
        }
    }
    c.shutdown().await;

    // A prefix with a brace would make every lock share one slot, or none.
    for bad in ["a{b", "x}"] {
        let r = relock::Client::builder()
            .url(server.url())
            .key_prefix(bad)
            .build()
            .await;
        assert!(
            matches!(
                &r,
                Err(Error::InvalidArgument {
                    name: "key_prefix",
                    ..
                })
            ),
            "{bad}: {:?}",
            r.err()
        );
    }

    // A name over the cap is refused before anything is sent, and not printed whole.
    let c = client(&server).await;
    let long = "n".repeat(relock::MAX_NAME_LEN + 1);
    let r = c.lock(long.as_str()).try_lock().await;
    let Err(e @ Error::InvalidArgument { name: "name", .. }) = r else {
        panic!("{r:?}");
    };
    let msg = e.to_string();
    assert!(
        msg.len() < 400 && msg.contains("1024"),
        "{} bytes: {msg}",
        msg.len()
    );
    let ok = "n".repeat(relock::MAX_NAME_LEN);
    c.lock(ok.as_str())
        .lock()
        .await
        .unwrap()
        .unlock()
        .await
        .unwrap();
    c.shutdown().await;
    server.cmd(&["DEL", "orders:42", "stock:7"]).unwrap();
    assert_nothing_left(&server).await;
}
