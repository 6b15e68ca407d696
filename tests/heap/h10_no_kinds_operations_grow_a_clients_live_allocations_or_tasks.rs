//! Every kind, under contention (two clients, so waiters, messages and handoffs run too):
//! after a warm-up, six rounds of operations; the live allocations and the runtime's live
//! tasks must come back to their level. A released or forgotten semaphore guard once leaked
//! its client handle, its names and its request key (four allocations per acquire, about
//! 150 bytes): a client's memory rose in a straight line under a steady load.

use std::time::Duration;

use relock_testkit::wait_until;
use relock_tests::*;

/// Operations per client per round.
const OPS: usize = 100;
const ROUNDS: usize = 4;
/// The most the floor of live allocations may rise from the first two samples to the last
/// two: a leak of one allocation per operation raises it by at least 2 × OPS × 2 = 400.
const TOLERANCE: i64 = 100;

/// One operation of `kind` by client `i`, its `j`th.
async fn op(kind: &str, c: &relock::Client, i: usize, j: usize) {
    match kind {
        "lock" => c
            .lock("h10:lock")
            .lock()
            .await
            .unwrap()
            .unlock()
            .await
            .unwrap(),
        "try_lock" => {
            if let Some(g) = c.lock("h10:try").try_lock().await.unwrap() {
                g.unlock().await.unwrap()
            }
        }
        "reentry" => {
            let lock = c.lock("h10:reentry");
            let outer = lock.lock().await.unwrap();
            outer
                .scope(async { lock.lock().await.unwrap().unlock().await.unwrap() })
                .await;
            outer.unlock().await.unwrap()
        }
        "timeout" => {
            // Half the attempts give up while the other client holds it.
            let _ = c
                .lock("h10:timeout")
                .try_lock_for(Duration::from_micros(300))
                .await
                .unwrap()
                .map(drop);
        }
        "fair" => c
            .fair_lock("h10:fair")
            .lock()
            .await
            .unwrap()
            .unlock()
            .await
            .unwrap(),
        "rw" => {
            let rw = c.read_write_lock("h10:rw");
            if j % 3 == 0 {
                rw.write_lock()
                    .lock()
                    .await
                    .unwrap()
                    .unlock()
                    .await
                    .unwrap()
            } else {
                rw.read_lock().lock().await.unwrap().unlock().await.unwrap()
            }
        }
        "semaphore" => {
            let s = c.semaphore("h10:sem");
            let _ = s.try_set_permits(1).await.unwrap();
            let permits = s.acquire(1).await.unwrap();
            match j % 3 {
                0 => permits.release().await.unwrap(),
                1 => {
                    let n = permits.forget();
                    s.release(n).await.unwrap()
                }
                // Dropped: given back in the background (waited for by the next acquire).
                _ => drop(permits),
            }
        }
        "permits" => {
            let s = c.permit_expirable_semaphore("h10:permits");
            let _ = s.try_set_permits(1).await.unwrap();
            s.acquire(None).await.unwrap().release().await.unwrap()
        }
        "latch" => {
            let l = c.count_down_latch(format!("h10:latch:{i}"));
            let _ = l.try_set_count(1).await.unwrap();
            l.count_down().await.unwrap()
        }
        "election" => {
            let e = c.election("h10:election");
            e.campaign(format!("v{i}"))
                .await
                .unwrap()
                .resign()
                .await
                .unwrap()
        }
        "job" => {
            let job = c.job(format!("h10:job:{}", j % 4), Duration::from_secs(5));
            if let Some(run) = job.try_start().await.unwrap() {
                run.finish().await.unwrap()
            }
        }
        "guarded" => {
            let g = c.lock("h10:guarded").lock().await.unwrap();
            g.write(relock::Commands::new().cmd("INCR").key("{h10:guarded}:n"))
                .await
                .unwrap();
            g.unlock().await.unwrap()
        }
        other => unreachable!("{other}"),
    }
}

async fn round(kind: &'static str, clients: &[relock::Client]) {
    let tasks: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let c = c.clone();
            tokio::spawn(async move {
                for j in 0..OPS {
                    op(kind, &c, i, j).await
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
}

/// (live allocations, live tasks) once background work is done: the runtime is back to
/// `idle` tasks or fewer (a fair waiter's line clean-up runs for a second or two after its
/// acquire), and both numbers have not changed for `steady`.
async fn settled(idle: usize, steady: Duration) -> (i64, usize) {
    let now = || {
        (
            crate::live_allocations(),
            tokio::runtime::Handle::current()
                .metrics()
                .num_alive_tasks(),
        )
    };
    let mut last = now();
    let mut steady_since = tokio::time::Instant::now();
    let _ = wait_until(
        Duration::from_secs(8),
        "the client's background work to end",
        || {
            let n = now();
            if n != last {
                last = n;
                steady_since = tokio::time::Instant::now();
            }
            let done = n.1 <= idle && steady_since.elapsed() >= steady;
            async move { done }
        },
    )
    .await;
    last
}

/// Runs `kinds` on two clients of one server and fails if one grew the live allocations or
/// left tasks behind.
/// `linger`: how long a kind's background work may go on after its operations returned.
async fn no_growth(kinds: &[&'static str], data: &[&str], linger: Duration) {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let server = server();
    let clients = [client(&server).await, client(&server).await];
    let mut grew = Vec::new();
    // The tasks of two idle clients (their connections, subscriber, watchdog), once their
    // first locks have started them.
    round("lock", &clients).await;
    let short = Duration::from_millis(200);
    let idle = settled(usize::MAX, short).await.1;
    for &kind in kinds {
        round(kind, &clients).await;
        // A kind may start tasks that live as long as its client (the fair line's heartbeat):
        // its idle level is what is left once its first round's work has ended.
        let first = settled(usize::MAX, linger).await;
        let idle = first.1.max(idle);
        let mut seen = vec![first];
        for _ in 0..ROUNDS {
            round(kind, &clients).await;
            seen.push(settled(idle, short).await);
        }
        let floor = |s: &[(i64, usize)]| s.iter().map(|x| x.0).min().unwrap();
        let rise = floor(&seen[ROUNDS - 1..]) - floor(&seen[..2]);
        let tasks = seen[ROUNDS].1;
        eprintln!(
            "{kind:>9}: live allocations {:?}, rise {rise}; tasks {tasks}, idle {idle}",
            seen.iter().map(|x| x.0 - seen[0].0).collect::<Vec<_>>()
        );
        if rise > TOLERANCE || tasks > idle {
            grew.push(format!(
                "{kind}: allocations +{rise}, tasks {idle} -> {tasks}"
            ));
        }
    }
    assert!(grew.is_empty(), "grew with the operations: {grew:?}");
    for c in &clients {
        c.shutdown().await;
    }
    // The kinds whose keys are data (counts, a guarded write's key) leave them by design.
    for key in data {
        server.cmd(&["DEL", key]).unwrap();
    }
    assert_nothing_left(&server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_exclusive_locks_operations_do_not_grow_a_clients_heap_or_tasks() {
    let linger = Duration::from_millis(500);
    no_growth(
        &["lock", "try_lock", "reentry", "timeout", "rw"],
        &[],
        linger,
    )
    .await;
}

/// A fair waiter's clean-up of its line entry lingers for a second or two.
const FAIR_LINGER: Duration = Duration::from_millis(2500);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_locks_and_jobs_do_not_grow_a_clients_heap_or_tasks() {
    no_growth(&["fair", "job"], &[], FAIR_LINGER).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elections_do_not_grow_a_clients_heap_or_tasks() {
    // An election's record outlives its last resignation by a lease, by design.
    no_growth(
        &["election"],
        &["relock_election:{h10:election}"],
        FAIR_LINGER,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphores_latches_and_guarded_writes_do_not_grow_a_clients_heap_or_tasks() {
    no_growth(
        &["semaphore", "permits", "latch", "guarded"],
        &[
            "h10:sem",
            "h10:permits",
            "h10:latch:0",
            "h10:latch:1",
            "{h10:guarded}:n",
        ],
        Duration::from_millis(500),
    )
    .await;
}
