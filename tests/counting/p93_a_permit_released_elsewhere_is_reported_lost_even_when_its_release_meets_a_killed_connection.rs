//! A permit whose id was released by another client is gone: its guard's `release()` must say
//! `PermitLost`, and a second `release_id` must say `false`, even when the call meets a
//! connection that was just killed (fred then fails it with "Failed to route command", or an
//! I/O error, and relock sends it again). A resend that finds nothing is not a release
//! (review of issue #14: such a 0 was counted as "given back" after any transient error).

use std::time::Duration;

use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_released_elsewhere_is_reported_lost_even_when_its_release_meets_a_killed_connection(
) {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let (sem_a, sem_b) = (
        a.permit_expirable_semaphore("p93"),
        b.permit_expirable_semaphore("p93"),
    );
    assert!(sem_a.try_set_permits(2).await.unwrap());
    let rounds = 20;
    let (mut reported_released, mut id_released_twice) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let permit = sem_a.acquire(Some(Duration::from_secs(30))).await.unwrap();
        let id = permit.id().to_string();
        assert!(sem_b.release_id(&id).await.unwrap(), "round {round}");
        // Both clients' command connections die; their next calls are resent.
        assert!(server.client_kill_type("normal").unwrap() >= 2);
        let (mine, again) = tokio::join!(permit.release(), sem_b.release_id(&id));
        match mine {
            Err(relock::Error::PermitLost { id: lost, .. }) => assert_eq!(lost, id),
            Ok(()) => reported_released.push(round),
            Err(e) => panic!("round {round}: release failed with {e}"),
        }
        if again.unwrap() {
            id_released_twice.push(round);
        }
    }
    assert!(
        reported_released.is_empty(),
        "a permit released elsewhere was reported given back in rounds {reported_released:?}"
    );
    assert!(
        id_released_twice.is_empty(),
        "release_id said true for an id released already in rounds {id_released_twice:?}"
    );
    assert_eq!(sem_a.available().await.unwrap(), 2, "permits conserved");
    a.shutdown().await;
    b.shutdown().await;
    server.cmd(&["DEL", "p93"]).unwrap();
    // Request keys of releases whose outcome was unknown expire by themselves.
    crate::only_expiring_request_keys_left(&server, "p93").await;
}
