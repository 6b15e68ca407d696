//! Re-entry is explicit: inside `guard.scope`, nested `lock()` calls re-enter the hold three
//! deep (count 1, 2, 3, one token), also from a task spawned with the scope; a re-entry
//! through a scope whose hold was released fails with `LockLost` instead of acquiring afresh.
//! `Lock::with` runs its closure inside the scope and releases before it returns, also when
//! the closure returns an error or panics.

use std::time::Duration;

use relock_tests::*;

use crate::support::int;

#[tokio::test]
async fn nested_calls_reenter_inside_a_scope_and_with_releases_before_it_returns() {
    let server = server();
    let c = client(&server).await;
    let lock = c.lock("o30");
    let limit = Duration::from_secs(5);

    // Three deep, through nested scopes.
    let g1 = lock.lock().await.unwrap();
    assert_eq!(lock.hold_count().await.unwrap(), 1);
    let t1 = g1.fencing_token();
    let inner_tokens = bounded(
        limit,
        "nested re-entry",
        g1.scope(async {
            let g2 = lock.lock().await.unwrap();
            assert_eq!(lock.hold_count().await.unwrap(), 2);
            let t3 = g2
                .scope(async {
                    let g3 = lock.lock().await.unwrap();
                    assert_eq!(lock.hold_count().await.unwrap(), 3);
                    let t = g3.fencing_token();
                    g3.unlock().await.unwrap();
                    t
                })
                .await;
            assert_eq!(lock.hold_count().await.unwrap(), 2);
            let t2 = g2.fencing_token();
            g2.unlock().await.unwrap();
            (t2, t3)
        }),
    )
    .await;
    assert_eq!(inner_tokens, (t1, t1), "one token per hold");
    assert_eq!(lock.hold_count().await.unwrap(), 1);

    // A task spawned with the scope re-enters too; a task without it is refused.
    let spawned = tokio::spawn(g1.scope({
        let lock = lock.clone();
        async move {
            let g = lock.lock().await.unwrap();
            let r = (g.fencing_token(), lock.hold_count().await.unwrap());
            g.unlock().await.unwrap();
            r
        }
    }));
    assert_eq!(
        bounded(limit, "spawned re-entry", spawned).await.unwrap(),
        (t1, 2)
    );
    let outsider = tokio::spawn({
        let lock = lock.clone();
        async move { lock.try_lock().await.unwrap().map(|g| g.fencing_token()) }
    });
    assert_eq!(outsider.await.unwrap(), None);

    // A scope that outlives its hold: the re-entry fails, it does not acquire afresh.
    let late = g1.scope({
        let lock = lock.clone();
        async move { lock.lock().await.map(|g| g.fencing_token()) }
    });
    g1.unlock().await.unwrap();
    assert_eq!(int(&server, &["EXISTS", "o30"]), 0);
    let late = bounded(limit, "late re-entry", tokio::spawn(late))
        .await
        .unwrap();
    assert!(
        matches!(late, Err(relock::Error::LockLost { ref name }) if name == "o30"),
        "re-entry after the release: {late:?}"
    );
    assert_eq!(int(&server, &["EXISTS", "o30"]), 0);
    assert_eq!(c.held_locks(), 0);

    // with: an error value comes back, and the lock is already free when it does.
    let w = c.lock("o30:with");
    let r = bounded(
        limit,
        "with returning an error",
        w.with(async |g: &relock::LockGuard| -> Result<u64, String> {
            let again = w.lock().await.map_err(|e| e.to_string())?;
            assert_eq!(again.fencing_token(), g.fencing_token(), "re-entered");
            assert_eq!(w.hold_count().await.unwrap(), 2);
            drop(again);
            Err(format!("refused under token {}", g.fencing_token()))
        }),
    )
    .await;
    let msg = match r {
        Ok(Err(msg)) => msg,
        other => panic!("with returned {other:?}"),
    };
    assert!(msg.starts_with("refused under token "), "{msg}");
    assert_eq!(int(&server, &["EXISTS", "o30:with"]), 0, "held after with");
    assert_eq!(c.held_locks(), 0);

    // with: a panic is resumed, after the release.
    let panicking = tokio::spawn({
        let w = w.clone();
        async move {
            w.with(async |_g: &relock::LockGuard| -> u64 {
                tokio::task::yield_now().await;
                panic!("o30: a panic inside with");
            })
            .await
        }
    });
    let e = bounded(limit, "with that panics", panicking)
        .await
        .expect_err("the panic reaches the join");
    assert!(e.is_panic(), "{e:?}");
    assert_eq!(
        int(&server, &["EXISTS", "o30:with"]),
        0,
        "held after a panic in with"
    );
    assert_eq!(c.held_locks(), 0);
    let next = bounded(Duration::from_secs(1), "lock after with", w.lock())
        .await
        .unwrap();
    next.unlock().await.unwrap();
    assert_nothing_left(&server).await;
}
