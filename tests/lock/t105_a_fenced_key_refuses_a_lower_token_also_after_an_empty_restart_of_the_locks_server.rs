//! A fenced key on another server refuses a write under a token lower than one it accepted,
//! naming both tokens, and keeps the later holder's value; tokens keep rising across an empty
//! restart of the lock's server, so the next holder after the restart still writes. A key
//! that holds something else is `WrongType` and left as it was.

use relock::Error;
use relock_tests::*;

#[tokio::test]
async fn a_fenced_key_refuses_a_lower_token_also_after_an_empty_restart_of_the_locks_server() {
    let locks = server();
    let data = server();
    let c = client(&locks).await;
    let store = client(&data).await;
    let stock = store.fenced_key("stock:7");
    assert_eq!(stock.get().await.unwrap(), None);

    let first = c.lock("t105").lock().await.unwrap();
    let t1 = first.fencing_token();
    first.unlock().await.unwrap();
    let second = c.lock("t105").lock().await.unwrap();
    let t2 = second.fencing_token();
    assert!(t2 > t1);
    stock.set(t2, "12").await.unwrap();
    stock.set(t2, "11").await.unwrap(); // the same holder writes again
    match stock.set(t1, "99").await {
        Err(Error::StaleToken {
            key,
            token,
            highest,
        }) => {
            assert_eq!((key.as_str(), token, highest), ("stock:7", t1, t2));
        }
        other => panic!("expected StaleToken, got {other:?}"),
    }
    assert_eq!(stock.get().await.unwrap(), Some(("11".to_string(), t2)));
    second.unlock().await.unwrap();

    // The lock's server loses everything; the next holder's token is still higher.
    locks.restart_empty().unwrap();
    // `lock()` waits through the client's reconnect.
    let g = bounded(
        std::time::Duration::from_secs(15),
        "the lock after the restart",
        c.lock("t105").lock(),
    )
    .await
    .unwrap();
    let t3 = g.fencing_token();
    assert!(t3 > t2, "{t3} after {t2}");
    stock.set(t3, "10").await.unwrap();
    assert!(matches!(
        stock.set(t2, "x").await,
        Err(Error::StaleToken { .. })
    ));
    assert_eq!(stock.get().await.unwrap(), Some(("10".to_string(), t3)));
    g.unlock().await.unwrap();

    // Not a fenced key: refused, left as it was.
    data.cmd(&["SET", "plain", "v"]).unwrap();
    assert!(matches!(
        store.fenced_key("plain").set(t3, "x").await,
        Err(Error::WrongType { .. })
    ));
    assert!(matches!(
        store.fenced_key("plain").get().await,
        Err(Error::WrongType { .. })
    ));
    assert_eq!(
        data.cmd(&["GET", "plain"]).unwrap().as_string().as_deref(),
        Some("v")
    );
    assert!(matches!(
        stock.set(0, "x").await,
        Err(Error::InvalidArgument { .. })
    ));
    // A data hash with a `fence` field of its own (a row kept in Redis), or a fence that is
    // not a token: not taken over.
    data.cmd(&["HSET", "row", "status", "paid", "fence", "5"])
        .unwrap();
    data.cmd(&["HSET", "odd", "value", "v", "fence", "007"])
        .unwrap();
    for key in ["row", "odd"] {
        let k = store.fenced_key(key);
        assert!(
            matches!(k.set(t3, "x").await, Err(Error::WrongType { .. })),
            "{key}"
        );
        assert!(
            matches!(k.get().await, Err(Error::WrongType { .. })),
            "{key}"
        );
    }
    assert_eq!(
        data.cmd(&["HGET", "row", "fence"])
            .unwrap()
            .as_string()
            .as_deref(),
        Some("5")
    );
    assert_eq!(data.cmd(&["HLEN", "row"]).unwrap().as_int(), Some(2));
    c.shutdown().await;
    store.shutdown().await;
}
