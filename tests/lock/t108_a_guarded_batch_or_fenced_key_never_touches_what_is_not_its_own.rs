//! What a guarded batch or a fenced key refuses before or instead of writing: a batch that
//! names the lock's own keys (its hash, its fencing counter) is refused before anything is
//! sent; a hash whose `fence` does not fit 64 bits is not a fenced key, for `set` as for
//! `get`, and is left as it was; a value that is not UTF-8 is reported as such; a fenced key
//! or a guarded batch by owner used after its client's shutdown is `Shutdown` (nothing was
//! sent), not an unknown outcome.

use relock::{Commands, Error};
use relock_tests::*;

#[tokio::test]
async fn a_guarded_batch_or_fenced_key_never_touches_what_is_not_its_own() {
    let server = server();
    let c = client(&server).await;

    let guard = c.lock("t108").lock().await.unwrap();
    for key in ["t108", "redisson_lock_token:{t108}"] {
        let r = guard.write(Commands::new().cmd("DEL").key(key)).await;
        match r {
            Err(Error::InvalidArgument { reason, .. }) => {
                assert!(reason.contains("own keys"), "{reason}")
            }
            other => panic!("{key}: expected InvalidArgument, got {other:?}"),
        }
    }
    assert!(c.lock("t108").is_locked().await.unwrap(), "the lock stands");
    let token_key = server
        .cmd(&["EXISTS", "redisson_lock_token:{t108}"])
        .unwrap()
        .as_int();
    assert_eq!(token_key, Some(1), "the fencing counter stands");
    guard.unlock().await.unwrap();

    // A fence above u64::MAX: not a fenced key, for both calls, and left as it was.
    server
        .cmd(&[
            "HSET",
            "big",
            "value",
            "v",
            "fence",
            "99999999999999999999999",
        ])
        .unwrap();
    assert!(matches!(
        c.fenced_key("big").set(30, "w").await,
        Err(Error::WrongType { .. })
    ));
    assert!(matches!(
        c.fenced_key("big").get().await,
        Err(Error::WrongType { .. })
    ));
    let v = server.cmd(&["HGET", "big", "value"]).unwrap();
    assert_eq!(v.as_string().as_deref(), Some("v"));
    // u64::MAX itself is a fence.
    let max = u64::MAX.to_string();
    server
        .cmd(&["HSET", "max", "value", "v", "fence", &max])
        .unwrap();
    assert!(matches!(
        c.fenced_key("max").set(30, "w").await,
        Err(Error::StaleToken {
            highest: u64::MAX,
            ..
        })
    ));

    // A value another tool wrote that is not UTF-8: said so, not "another type".
    server
        .cmd(&[
            "EVAL",
            "redis.call('hset', KEYS[1], 'value', string.char(255, 254), 'fence', '7')",
            "1",
            "raw",
        ])
        .unwrap();
    match c.fenced_key("raw").get().await {
        Err(Error::InvalidArgument { reason, .. }) => {
            assert!(reason.contains("not UTF-8"), "{reason}")
        }
        other => panic!("expected InvalidArgument, got {other:?}"),
    }

    // After shutdown nothing is sent: `Shutdown`, and the key is not written.
    let fenced = c.fenced_key("after");
    let held = c.lock("t108-owner").lock().await.unwrap();
    let owner = held.owner().to_string();
    let lock = c.lock("t108-owner");
    c.shutdown().await;
    assert!(matches!(fenced.set(5, "x").await, Err(Error::Shutdown)));
    assert_eq!(server.cmd(&["EXISTS", "after"]).unwrap().as_int(), Some(0));
    let by_owner = lock
        .write_as(
            &owner,
            Commands::new().cmd("SET").key("{t108-owner}:row").arg(1),
        )
        .await;
    assert!(matches!(by_owner, Err(Error::Shutdown)), "{by_owner:?}");
    assert_eq!(
        server
            .cmd(&["EXISTS", "{t108-owner}:row"])
            .unwrap()
            .as_int(),
        Some(0)
    );
    drop(held);
    for key in ["big", "max", "raw"] {
        server.cmd(&["DEL", key]).unwrap();
    }
    assert_nothing_left(&server).await;
}
