//! A run-at-most-once job: one client runs the occurrence and the others skip (without
//! waiting); after an early finish the lock stays taken (as a plain lock's hold, which a
//! Redisson client sees held) until `at_least_for` after the run started, then frees itself;
//! with nothing left of `at_least_for` the run releases at once; a run dropped mid-way is
//! finished (kept) in the background; bad durations and names get typed errors.

use std::time::{Duration, Instant};

use relock::Error;
use relock_tests::*;

#[tokio::test]
async fn a_job_runs_once_per_occurrence_and_keeps_its_lock_for_at_least_for_after_an_early_finish()
{
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let at_least = Duration::from_millis(800);
    let job = |c: &relock::Client| c.job("t96", Duration::from_secs(10)).at_least_for(at_least);

    let started = Instant::now();
    let ran = job(&a)
        .run(async |run| {
            assert!(run.fencing_token() > 0);
            7
        })
        .await
        .unwrap();
    assert_eq!(ran, Some(7));
    // The other node's scheduler fires a little later: it skips, at once.
    let t = Instant::now();
    assert_eq!(job(&b).run(async |_| 8).await.unwrap(), None);
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    // Kept as a plain lock's hold (one field, count 1), with what is left of at_least_for.
    let pttl = server.cmd(&["PTTL", "t96"]).unwrap().as_int().unwrap();
    assert!(pttl > 0 && pttl <= 800, "{pttl}");
    assert_eq!(server.cmd(&["HLEN", "t96"]).unwrap().as_int(), Some(1));
    assert!(b.lock("t96").is_locked().await.unwrap());
    // Free once at_least_for has passed since the run started, not before.
    wait_until(
        Duration::from_secs(3),
        "the kept lock to expire",
        || async { server.cmd(&["EXISTS", "t96"]).unwrap().as_int() == Some(0) },
    )
    .await
    .unwrap();
    assert!(
        started.elapsed() >= at_least - Duration::from_millis(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(job(&b).run(async |_| 9).await.unwrap(), Some(9));

    // Nothing left of at_least_for: released at once.
    let quick = a.job("t96:none", Duration::from_secs(10));
    assert_eq!(quick.run(async |_| ()).await.unwrap(), Some(()));
    assert_eq!(
        server.cmd(&["EXISTS", "t96:none"]).unwrap().as_int(),
        Some(0)
    );

    // A run whose guard is dropped (cancelled) is kept in the background as an early finish.
    let dropped = |c: &relock::Client| {
        c.job("t96:drop", Duration::from_secs(10))
            .at_least_for(at_least)
    };
    let g = dropped(&a).try_start().await.unwrap().expect("free");
    let name = g.name().to_string();
    drop(g);
    wait_until(
        Duration::from_secs(2),
        "the dropped run to be kept",
        || async {
            let p = server.cmd(&["PTTL", &name]).unwrap().as_int().unwrap();
            p > 0 && p <= 800
        },
    )
    .await
    .unwrap();
    assert_eq!(dropped(&b).run(async |_| ()).await.unwrap(), None);

    // Bad input: typed errors naming the argument, before anything is sent.
    let invalid = |r: relock::Result<Option<()>>| match r {
        Err(Error::InvalidArgument { name, .. }) => name,
        other => panic!("expected InvalidArgument, got {other:?}"),
    };
    assert_eq!(
        invalid(a.job("", Duration::from_secs(1)).run(async |_| ()).await),
        "name"
    );
    assert_eq!(
        invalid(a.job("t96:z", Duration::ZERO).run(async |_| ()).await),
        "at_most_for"
    );
    assert_eq!(
        invalid(
            a.job("t96:inv", Duration::from_secs(1))
                .at_least_for(Duration::from_secs(2))
                .run(async |_| ())
                .await
        ),
        "at_least_for"
    );
    a.shutdown().await;
    b.shutdown().await;
}
