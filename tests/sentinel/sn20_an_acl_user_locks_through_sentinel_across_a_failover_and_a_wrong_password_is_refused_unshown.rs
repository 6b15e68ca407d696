//! Master, replica and sentinels all refuse unauthenticated clients (default user with an admin
//! password; the replica syncs and the sentinels monitor and fail over as an ACL user, which
//! the sentinels also know): a client with `redis-sentinel://user:pass@…` (the same
//! credentials for the sentinels and the master) locks on the master, a waiter of another
//! client is woken by the release, and after `SENTINEL FAILOVER` both follow the new master
//! (locks there, tokens still rising, waiters woken). A wrong password, the user's password
//! without the user name, and no credentials are refused with `Error::Connection` showing no
//! secret. Separate sentinel credentials (`sentinelUsername`, `sentinelPassword`) reach the
//! sentinels while the URL's user reaches the master; a wrong one is refused, unshown.

use std::time::Duration;

use relock::Error;
use relock_testkit::{RedisSentinel, ServerOptions};
use relock_tests::*;

const ADMIN_PASSWORD: &str = "s20-admin-Pw-61c4";
const USER: &str = "relock-app";
const PASSWORD: &str = "s20-app-Pw-0e9d";
const WRONG_PASSWORD: &str = "s20-wrong-Pw-27bb";

/// fred reports only that no sentinel could be used; relock adds what to check.
const SENTINEL_HINT: &str = "no sentinel accepted the connection and the credentials";

fn builder(url: String) -> relock::ClientBuilder {
    relock::Client::builder()
        .url(url)
        .connect_timeout(Duration::from_secs(2))
        .command_timeout(Duration::from_secs(1))
}

fn assert_no_secret(what: &str, text: &str) {
    for secret in [PASSWORD, WRONG_PASSWORD, ADMIN_PASSWORD] {
        assert!(!text.contains(secret), "{what} shows a secret: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acl_user_locks_through_sentinel_across_a_failover_and_a_wrong_password_is_refused_unshown(
) {
    let set = RedisSentinel::start_with(ServerOptions {
        password: Some(ADMIN_PASSWORD.into()),
        acl_user: Some((USER.into(), PASSWORD.into())),
        ..ServerOptions::default()
    })
    .expect("start a password-protected sentinel set-up");
    let url = set.url_with_acl_user();
    assert!(url.starts_with(&format!("redis-sentinel://{USER}:{PASSWORD}@")));
    let (a, b) = (
        builder(url.clone())
            .build()
            .await
            .expect("connect as the ACL user"),
        builder(url.clone())
            .build()
            .await
            .expect("connect as the ACL user"),
    );
    assert_no_secret("Client Debug", &format!("{a:?}"));

    // On the master; a waiter of the other client is woken by the release.
    let first = set.master().unwrap().port();
    let g = a.lock("s20").lock().await.unwrap();
    let t0 = g.fencing_token();
    assert_eq!(
        set.master()
            .unwrap()
            .cmd(&["EXISTS", "s20"])
            .unwrap()
            .as_int(),
        Some(1)
    );
    let g = assert_release_wakes(&b, b.lock("s20"), g).await;
    let t1 = g.fencing_token();
    assert!(t1 > t0);
    g.unlock().await.unwrap();

    // The sentinels fail over (as the ACL user); both clients follow.
    let new_master = tokio::task::block_in_place(|| set.failover()).unwrap();
    assert_ne!(new_master.port(), first);
    let g = eventually(Duration::from_secs(10), "a lock after the failover", || {
        let l = a.lock("s20");
        async move { l.try_lock().await.ok().flatten() }
    })
    .await;
    assert_eq!(
        new_master.cmd(&["EXISTS", "s20"]).unwrap().as_int(),
        Some(1),
        "on the new master"
    );
    assert!(g.fencing_token() > t1, "tokens still rise");
    let g = assert_release_wakes(&b, b.lock("s20"), g).await;
    g.unlock().await.unwrap();

    // Refused without showing any secret.
    let sentinels = set.url().replacen("redis-sentinel://", "", 1);
    acl::assert_refused_unshown(
        vec![
            (
                "wrong password",
                format!("redis-sentinel://{USER}:{WRONG_PASSWORD}@{sentinels}"),
                SENTINEL_HINT,
            ),
            (
                "no user name",
                format!("redis-sentinel://:{PASSWORD}@{sentinels}"),
                SENTINEL_HINT,
            ),
            ("no credentials", set.url(), "NOAUTH"),
        ],
        builder,
        // A sentinel's own refusal is not reported by fred (the hint says so); the master's is
        // typed, and not transient.
        |e, cause| {
            matches!(e, Error::Connection { url, cause: c }
                if url.starts_with("redis-sentinel://") && c.contains(cause))
                || matches!(e, Error::Authentication { url, source }
                if url.starts_with("redis-sentinel://") && source.details().contains(cause)
                    && !e.is_transient())
        },
        &[PASSWORD, WRONG_PASSWORD, ADMIN_PASSWORD],
    )
    .await;
    // Separate credentials for the sentinels (`sentinelUsername`, `sentinelPassword`): here
    // their default user's admin password, while the master is reached as the ACL user.
    let c = builder(format!(
        "{url}&sentinelUsername=default&sentinelPassword={ADMIN_PASSWORD}"
    ))
    .build()
    .await
    .expect("separate sentinel credentials");
    assert_no_secret("Client Debug with sentinel credentials", &format!("{c:?}"));
    let g = c.lock("s20:separate").lock().await.unwrap();
    assert_eq!(
        new_master
            .cmd(&["EXISTS", "s20:separate"])
            .unwrap()
            .as_int(),
        Some(1)
    );
    g.unlock().await.unwrap();
    c.shutdown().await;
    // A wrong sentinel password is refused, and not shown.
    let e = bounded(
        Duration::from_secs(10),
        "wrong sentinel password",
        builder(format!(
            "{url}&sentinelUsername={USER}&sentinelPassword={WRONG_PASSWORD}"
        ))
        .build(),
    )
    .await
    .unwrap_err();
    let text = format!("{e} {e:?}");
    assert!(matches!(&e, Error::Connection { .. }), "{text}");
    assert_no_secret("wrong sentinel password", &text);

    a.shutdown().await;
    b.shutdown().await;
    // The sentinels keep their own `__sentinel__:hello` channel; ours must be gone.
    wait_until(
        Duration::from_secs(5),
        "no keys and no lock channels left",
        || async {
            new_master.dbsize().unwrap() == 0
                && new_master
                    .pubsub_channels()
                    .unwrap()
                    .iter()
                    .all(|c| c.starts_with("__sentinel__"))
        },
    )
    .await
    .unwrap();
}
