//! Two clients, each behind its own fault proxy, with two workers each, loop
//! `lock → fenced write → drop(guard) → lock` on one lock, while a schedule per proxy flips
//! each direction every 50–200 ms among Pass, Delay (5–30 ms) and a brief Freeze (at most
//! 200 ms, never twice in a row: below the 1 s command timeout), and now and then resets every
//! connection. Nothing may overlap and no token may repeat:
//! - at most one holder at any time, across both clients, counting a hold from `lock()`
//!   returning to the guard's drop;
//! - every token is new, and tokens rise in the order the critical sections ran (so each
//!   client's rise too); the fenced resource (a Redis hash updated by a script that accepts
//!   a write only with a token ≥ the largest it has seen) rejects none;
//! - the resource's count equals the number of completed critical sections, and no hold was
//!   lost (the lease is far longer than any fault).
//!
//! A seed is printed; `X30_SEED=<n>` replays a schedule's choices (not its timing).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fred::interfaces::{ClientLike, KeysInterface, LuaInterface};
use relock_testkit::{Direction, FaultProxy, Mode};
use relock_tests::*;

use crate::support::*;

const NAME: &str = "x30";
const RESOURCE: &str = "x30:resource";
const WORKERS_PER_CLIENT: usize = 2;
const COMMAND_TIMEOUT: Duration = Duration::from_secs(1);
const LEASE: Duration = Duration::from_secs(2);

/// The fenced resource: accepts a write only with a token ≥ the largest seen so far; counts
/// accepted writes. Returns 1 (accepted) or 0 (rejected).
const FENCED_WRITE: &str = r"
local max = tonumber(redis.call('hget', KEYS[1], 'max') or '0')
local token = tonumber(ARGV[1])
if token < max then
  redis.call('hincrby', KEYS[1], 'rejected', 1)
  return 0
end
redis.call('hset', KEYS[1], 'max', ARGV[1])
redis.call('hincrby', KEYS[1], 'count', 1)
return 1
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_then_lock_again_at_once_under_delay_freeze_and_reset_never_overlaps() {
    run(1_000, Duration::from_secs(60)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow tier: scripts/test --slow"]
async fn ten_thousand_drop_then_lock_cycles_under_faults_never_overlap() {
    run(10_000, Duration::from_secs(900)).await;
}

/// xorshift64*: enough for a fault schedule, and reproducible from its seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

#[derive(Debug, Default)]
struct FaultCounts {
    flips: u64,
    freezes: u64,
    delays: u64,
    resets: u64,
}

/// Runs the schedule on its own thread (the proxy is moved there and handed back when `stop`
/// is set, healed).
fn schedule(
    proxy: FaultProxy,
    seed: u64,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<(FaultProxy, FaultCounts)> {
    std::thread::spawn(move || {
        let mut rng = Rng(seed | 1);
        let mut counts = FaultCounts::default();
        let mut frozen = [false, false];
        while !stop.load(Ordering::SeqCst) {
            if rng.below(100) < 8 {
                proxy.reset();
                counts.resets += 1;
            } else {
                for (i, dir) in [Direction::Up, Direction::Down].into_iter().enumerate() {
                    let roll = rng.below(100);
                    let mode = if roll < 15 && !frozen[i] {
                        counts.freezes += 1;
                        Mode::Freeze
                    } else if roll < 55 {
                        counts.delays += 1;
                        Mode::Delay(Duration::from_millis(5 + rng.below(26)))
                    } else {
                        Mode::Pass
                    };
                    frozen[i] = mode == Mode::Freeze;
                    proxy.set(dir, mode);
                }
                counts.flips += 1;
            }
            std::thread::sleep(Duration::from_millis(50 + rng.below(151)));
        }
        proxy.heal();
        (proxy, counts)
    })
}

/// What a run observed; everything must be as expected.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    completed: u64,
    max_holders_at_once: usize,
    overlapping_sections: u64,
    repeated_tokens: u64,
    tokens_out_of_order: u64,
    client_tokens_rise: bool,
    rejected_writes: u64,
    /// The fenced resource's count of accepted writes.
    increments: u64,
    lost: u64,
}

/// What the critical sections saw, under one mutex (so in the order they ran).
#[derive(Debug, Default)]
struct Log {
    /// (client, token) per critical section, in the order they ran.
    tokens: Vec<(usize, u64)>,
}

#[derive(Default)]
struct Tally {
    claimed: AtomicU64,
    completed: AtomicU64,
    inside: AtomicUsize,
    max_inside: AtomicUsize,
    /// Critical sections that began while another was running.
    overlaps: AtomicU64,
    lost: AtomicU64,
    lock_errors: Mutex<Vec<String>>,
    log: Mutex<Log>,
}

async fn run(cycles: u64, limit: Duration) {
    let seed = std::env::var("X30_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("x30: seed {seed} (X30_SEED={seed} replays the schedule's choices)");
    let server = server();
    let resource = fred::clients::Client::new(
        fred::types::config::Config::from_url(&server.url()).unwrap(),
        None,
        None,
        None,
    );
    resource.init().await.unwrap();
    let proxies = [
        FaultProxy::start(&server.addr()).unwrap(),
        FaultProxy::start(&server.addr()).unwrap(),
    ];
    let mut clients = Vec::new();
    for (i, p) in proxies.iter().enumerate() {
        clients.push(proxied_client(p, &format!("x30c{i}"), COMMAND_TIMEOUT, LEASE).await);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let schedules: Vec<_> = proxies
        .into_iter()
        .enumerate()
        .map(|(i, p)| schedule(p, seed.wrapping_add(i as u64 * 0x9e37_79b9), stop.clone()))
        .collect();

    let tally = Arc::new(Tally::default());
    let started = Instant::now();
    let mut workers = Vec::new();
    for (c, client) in clients.iter().enumerate() {
        for _ in 0..WORKERS_PER_CLIENT {
            let (lock, tally, resource) = (client.lock(NAME), tally.clone(), resource.clone());
            workers.push(tokio::spawn(async move {
                while tally.claimed.fetch_add(1, Ordering::SeqCst) < cycles {
                    let guard = loop {
                        match lock.lock().await {
                            Ok(g) => break g,
                            Err(e) if e.is_transient() => {
                                tally.lock_errors.lock().unwrap().push(format!("{e}"));
                            }
                            Err(e) => panic!("lock() failed for good: {e:?}"),
                        }
                    };
                    let now = tally.inside.fetch_add(1, Ordering::SeqCst) + 1;
                    tally.max_inside.fetch_max(now, Ordering::SeqCst);
                    if now > 1 {
                        tally.overlaps.fetch_add(1, Ordering::SeqCst);
                    }
                    let token = guard.fencing_token();
                    tally.log.lock().unwrap().tokens.push((c, token));
                    let accepted: i64 = resource
                        .eval(FENCED_WRITE, vec![RESOURCE], vec![token.to_string()])
                        .await
                        .expect("the fenced write (no faults on this connection)");
                    assert!(accepted == 0 || accepted == 1);
                    tally.inside.fetch_sub(1, Ordering::SeqCst);
                    if guard.is_lost() {
                        tally.lost.fetch_add(1, Ordering::SeqCst);
                    }
                    drop(guard);
                    tally.completed.fetch_add(1, Ordering::SeqCst);
                }
            }));
        }
    }
    bounded(limit, "the workers' cycles", async {
        for w in workers {
            w.await.unwrap();
        }
    })
    .await;
    let took = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    let mut faults = Vec::new();
    let mut kept = Vec::new();
    for s in schedules {
        let (proxy, counts) = s.join().unwrap();
        faults.push(counts);
        kept.push(proxy);
    }

    let completed = tally.completed.load(Ordering::SeqCst);
    let log = std::mem::take(&mut *tally.log.lock().unwrap());
    let errors = std::mem::take(&mut *tally.lock_errors.lock().unwrap());
    let count = int(&server, &["HGET", RESOURCE, "count"]) as u64;
    let rejected = match server
        .cmd(&["HGET", RESOURCE, "rejected"])
        .unwrap()
        .as_string()
    {
        Some(n) => n.parse::<u64>().unwrap(),
        None => 0,
    };
    let mut per_client = [0u64; 2];
    for (c, _) in &log.tokens {
        per_client[*c] += 1;
    }
    let mut distinct: Vec<u64> = log.tokens.iter().map(|(_, t)| *t).collect();
    distinct.sort_unstable();
    distinct.dedup();
    // Tokens must rise in the order the critical sections ran: none repeats, none goes back.
    let out_of_order: Vec<_> = log
        .tokens
        .windows(2)
        .filter(|w| w[1].1 <= w[0].1)
        .map(|w| (w[0], w[1]))
        .collect();
    let client_tokens_rise = (0..2).all(|c| {
        let mine: Vec<u64> = log
            .tokens
            .iter()
            .filter(|(k, _)| *k == c)
            .map(|(_, t)| *t)
            .collect();
        mine.windows(2).all(|w| w[1] > w[0])
    });
    let outcome = Outcome {
        completed,
        max_holders_at_once: tally.max_inside.load(Ordering::SeqCst),
        overlapping_sections: tally.overlaps.load(Ordering::SeqCst),
        repeated_tokens: log.tokens.len() as u64 - distinct.len() as u64,
        tokens_out_of_order: out_of_order.len() as u64,
        client_tokens_rise,
        rejected_writes: rejected,
        increments: count,
        lost: tally.lost.load(Ordering::SeqCst),
    };
    eprintln!(
        "x30: {completed} cycles in {took:?} ({per_client:?} per client); faults {faults:?}; \
         {} lock() errors retried (first: {:?}); {outcome:?}",
        errors.len(),
        errors.first(),
    );
    assert_eq!(
        outcome,
        Outcome {
            completed: cycles,
            max_holders_at_once: 1,
            overlapping_sections: 0,
            repeated_tokens: 0,
            tokens_out_of_order: 0,
            client_tokens_rise: true,
            rejected_writes: 0,
            increments: cycles,
            lost: 0,
        },
        "first tokens out of order (client, token): {:?}",
        &out_of_order[..out_of_order.len().min(5)]
    );
    assert!(per_client.iter().all(|&n| n > 0), "{per_client:?}");

    let _: i64 = resource.del(RESOURCE).await.unwrap();
    resource.quit().await.unwrap();
    for c in &clients {
        assert_eq!(c.held_locks(), 0);
    }
    assert_nothing_left(&server).await;
    drop(kept);
}
