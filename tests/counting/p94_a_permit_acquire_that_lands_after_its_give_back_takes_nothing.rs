//! A permit acquire held on its way past the command timeout has an unknown outcome, so its
//! id is given back in the background. That give-back may run first and find nothing; the
//! held acquire lands afterwards. It must then take nothing: before, it took a permit under an
//! id nobody holds, for its whole lease (found by review of issue #14). The give-back now
//! records itself under the id's request key, and the acquire script finds it there.

use std::time::Duration;

use relock_testkit::{Direction, Mode};
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_acquire_that_lands_after_its_give_back_takes_nothing() {
    let server = server();
    let (proxy, c) = client_behind_proxy(&server, Duration::from_millis(500)).await;
    let sem = c.permit_expirable_semaphore("p94");
    assert!(sem.try_set_permits(1).await.unwrap());
    // Load the scripts first.
    let warm = sem
        .try_acquire(Some(Duration::from_secs(60)))
        .await
        .unwrap()
        .unwrap();
    warm.release().await.unwrap();

    // The acquire is held on its connection; every other connection works.
    let frozen = proxy.freeze_existing(Direction::Up);
    let attempt = {
        let sem = sem.clone();
        tokio::spawn(async move {
            sem.try_acquire(Some(Duration::from_secs(60)))
                .await
                .map(|p| p.is_some())
        })
    };
    // The acquire's script call (a few hundred bytes; a keep-alive PING is a few dozen).
    let holding_the_acquire = || {
        proxy
            .conns_holding(Direction::Up)
            .into_iter()
            .filter(|id| proxy.conn_held(*id, Direction::Up) > 100)
            .collect::<Vec<_>>()
    };
    wait_until(Duration::from_secs(3), "the acquire held", || async {
        !holding_the_acquire().is_empty()
    })
    .await
    .unwrap();
    let held = holding_the_acquire();
    for id in frozen.iter().filter(|id| !held.contains(id)) {
        proxy.set_conn(*id, Direction::Up, Some(Mode::Pass));
    }
    let r = bounded(Duration::from_secs(5), "try_acquire", attempt)
        .await
        .unwrap();
    assert!(
        matches!(
            r,
            Err(relock::Error::Timeout { .. } | relock::Error::Connection { .. })
        ),
        "the acquire got no reply: {r:?}"
    );
    let request_keys = || {
        server
            .keys()
            .unwrap()
            .into_iter()
            .filter(|k| k.starts_with("relock_request:{p94}:"))
            .collect::<Vec<_>>()
    };
    // The background give-back ran (found nothing, and recorded a 0) before the acquire
    // lands. (A release's own request key holds 1 or 2.)
    wait_until(Duration::from_secs(5), "the give-back recorded", || async {
        request_keys()
            .iter()
            .any(|k| crate::get(&server, k).as_deref() == Some("0"))
    })
    .await
    .unwrap();
    assert_eq!(crate::get(&server, "p94").as_deref(), Some("1"));

    // The held acquire lands now: the server runs one more script.
    let scripts = || server.command_calls("evalsha").unwrap();
    let ran = scripts();
    for id in &held {
        proxy.set_conn(*id, Direction::Up, Some(Mode::Pass));
    }
    wait_until(
        Duration::from_secs(3),
        "the held acquire to run",
        || async { scripts() > ran },
    )
    .await
    .unwrap();
    let (count, holders) = (
        crate::get(&server, "p94"),
        server.cmd(&["ZCARD", "{p94}:timeout"]).unwrap().as_int(),
    );
    assert_eq!(
        (count.as_deref(), holders),
        (Some("1"), Some(0)),
        "the late acquire took a permit nobody holds"
    );
    assert_eq!(sem.available().await.unwrap(), 1);
    c.shutdown().await;
    server.cmd(&["DEL", "p94"]).unwrap();
    crate::only_expiring_request_keys_left(&server, "p94").await;
}
