//! Peer lock libraries measured beside relock on the same servers, in the same run.
//!
//! Invocations (hand-parsed argv; every output is one line on stdout, fields space-separated):
//!
//! - `relock-peer-bench <seconds> <url>...`: the original form, kept as it was for
//!   `relock-bench quorum --rslock-bin ...`. Scenario Q with `rslock` on the given masters.
//!   Prints `rslock <pairs> <p50_ms> <p99_ms> <pairs_per_s> <stuck>`.
//! - `relock-peer-bench q <lib> <seconds> <url>...`: scenario Q (one worker, serial
//!   acquire+release of the one key `bench:q:<lib>` on N masters; the latency is that of the
//!   acquire alone). `<lib>`: `rslock` or `redis-lock` (both Redlock over N masters;
//!   `async-redis-lock` is single-instance only and so has no Q).
//!   Prints `<lib> q <pairs> <p50_ms> <p99_ms> <pairs_per_s> <stuck>`.
//! - `relock-peer-bench u <lib> <seconds> <tasks> <url>`: scenario U (uncontended throughput):
//!   `<tasks>` tokio tasks, each looping acquire+release of its own key `bench:u:<lib>:<task>`
//!   on one server. `<lib>`: `rslock`, `redis-lock` or `async-redis-lock`.
//!   Prints `<lib> u <pairs> <pairs_per_s> <errors>`.
//!
//! Fields: `pairs` = acquisitions that succeeded (Q) / acquire+release pairs that both succeeded
//! (U); `pairs_per_s` = that over the wall time of the run; `stuck` (Q) = acquisitions that did
//! not finish within 3 s; `errors` (U) = loop iterations that were not a clean pair (acquire
//! refused or failed, acquire or release past 3 s, release failed). Q, as in the original
//! form, counts neither a refused acquisition nor a release error or timeout.
//!
//! Every acquisition and every release is bounded by `tokio::time::timeout` (3 s). Each lock is
//! taken with a 30 s lease; everything else is each library's default. A run that ends
//! normally holds nothing: every loop iteration releases what it acquired before the next.
//!
//! Runtime: tokio's multi-thread runtime with its default worker count (one per core).
//!
//! Libraries and the calls used:
//! - `rslock` 0.10.0: one `LockManager` (cloned into the tasks; it shares one multiplexed
//!   connection per server), `LockManager::lock` / `LockManager::unlock`.
//! - `redis-lock` 0.5.1: `redis_lock::lock_across`, which its docs name as the efficient
//!   single-resource path (Redlock `SET NX PX`, release by a compare-and-delete `EVAL`), rather
//!   than `MultiResourceLock` (a Lua library, and a `SCAN` of all `lock:*` keys on every
//!   release). It runs a closure under the lock, so acquire and release are one call; the time
//!   of the acquisition is taken inside the closure, and the 3 s bounds are applied to each
//!   phase in turn. `lock_across` serialises commands on each `Arc<Mutex<connection>>` it is
//!   given, so every task gets its own mutex around a clone of one multiplexed connection per
//!   server (the same sharing as rslock's), not one mutex shared by all tasks.
//!   `LockAcrossOptions { ttl: 30 s, ..Default::default() }` (its default ttl is 10 ms).
//! - `async-redis-lock` 0.4.0: one `Locker::from_redis_url` (cloned into the tasks; clones share
//!   one `ConnectionManager`), `Locker::acquire_with_options(&Options::new().ttl(30 s), key)`
//!   and `Lock::release`. It also starts (and on release stops) a TTL-extension task per lock.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Mutex;
use tokio::time::timeout;

/// Bound on each acquisition and each release.
const BOUND: Duration = Duration::from_secs(3);
/// Lease of every lock taken.
const LEASE: Duration = Duration::from_secs(30);

const USAGE: &str = concat!(
    "usage: relock-peer-bench <seconds> <url>...\n",
    "       relock-peer-bench q <rslock|redis-lock> <seconds> <url>...\n",
    "       relock-peer-bench u <rslock|redis-lock|async-redis-lock> <seconds> <tasks> <url>",
);

fn usage() -> ! {
    eprintln!("{USAGE}");
    std::process::exit(2)
}

fn fail(what: &str) -> ! {
    eprintln!("relock-peer-bench: {what}");
    std::process::exit(1)
}

/// What one bounded acquire+release came to.
struct Pair {
    /// Time from the call to the acquisition, when the lock was acquired.
    acquired: Option<Duration>,
    /// The acquisition did not finish within `BOUND`.
    acquire_stuck: bool,
    /// The release failed or did not finish within `BOUND`.
    release_failed: bool,
}

impl Pair {
    fn refused() -> Self {
        Pair {
            acquired: None,
            acquire_stuck: false,
            release_failed: false,
        }
    }
    fn stuck() -> Self {
        Pair {
            acquired: None,
            acquire_stuck: true,
            release_failed: false,
        }
    }
    fn held(lat: Duration, release_ok: bool) -> Self {
        Pair {
            acquired: Some(lat),
            acquire_stuck: false,
            release_failed: !release_ok,
        }
    }
}

type RedisLockConn = redis027::aio::MultiplexedConnection;

/// One library, set up against its server(s).
enum Lib {
    Rslock(rslock::LockManager),
    RedisLock {
        /// One multiplexed connection per server.
        raw: Vec<RedisLockConn>,
        /// This user's own mutex around a clone of each.
        conns: Vec<Arc<Mutex<RedisLockConn>>>,
    },
    AsyncRedisLock(async_redis_lock::Locker),
}

impl Lib {
    async fn connect(name: &str, urls: &[String]) -> Lib {
        match name {
            "rslock" => Lib::Rslock(rslock::LockManager::new(urls.to_vec())),
            "redis-lock" => {
                let mut raw = Vec::with_capacity(urls.len());
                for url in urls {
                    let client = redis027::Client::open(url.as_str())
                        .unwrap_or_else(|e| fail(&format!("{url}: {e}")));
                    match timeout(BOUND, client.get_multiplexed_async_connection()).await {
                        Ok(Ok(c)) => raw.push(c),
                        Ok(Err(e)) => fail(&format!("{url}: {e}")),
                        Err(_) => fail(&format!("{url}: connect timed out")),
                    }
                }
                let conns = wrap(&raw);
                Lib::RedisLock { raw, conns }
            }
            "async-redis-lock" => {
                let [url] = urls else {
                    fail("async-redis-lock takes exactly one url")
                };
                match timeout(BOUND, async_redis_lock::Locker::from_redis_url(url)).await {
                    Ok(Ok(l)) => Lib::AsyncRedisLock(l),
                    Ok(Err(e)) => fail(&format!("{url}: {e}")),
                    Err(_) => fail(&format!("{url}: connect timed out")),
                }
            }
            _ => usage(),
        }
    }

    /// A handle for one more task: shares the connections.
    fn for_task(&self) -> Lib {
        match self {
            Lib::Rslock(m) => Lib::Rslock(m.clone()),
            Lib::RedisLock { raw, .. } => Lib::RedisLock {
                raw: raw.clone(),
                conns: wrap(raw),
            },
            Lib::AsyncRedisLock(l) => Lib::AsyncRedisLock(l.clone()),
        }
    }

    /// Acquires `key` and releases it, each step bounded by `BOUND`.
    async fn pair(&self, key: &str) -> Pair {
        let t0 = Instant::now();
        match self {
            Lib::Rslock(m) => match timeout(BOUND, m.lock(key, LEASE)).await {
                Ok(Ok(lock)) => {
                    let lat = t0.elapsed();
                    // `unlock` is best effort and reports nothing; only a timeout is seen.
                    let ok = timeout(BOUND, m.unlock(&lock)).await.is_ok();
                    Pair::held(lat, ok)
                }
                Ok(Err(_)) => Pair::refused(),
                Err(_) => Pair::stuck(),
            },
            Lib::AsyncRedisLock(l) => {
                let opts = async_redis_lock::Options::new().ttl(LEASE);
                match timeout(BOUND, l.acquire_with_options(&opts, key)).await {
                    Ok(Ok(lock)) => {
                        let lat = t0.elapsed();
                        let ok = matches!(timeout(BOUND, lock.release()).await, Ok(Ok(())));
                        Pair::held(lat, ok)
                    }
                    Ok(Err(_)) => Pair::refused(),
                    Err(_) => Pair::stuck(),
                }
            }
            Lib::RedisLock { conns, .. } => redis_lock_pair(conns, key, t0).await,
        }
    }
}

fn wrap(raw: &[RedisLockConn]) -> Vec<Arc<Mutex<RedisLockConn>>> {
    raw.iter()
        .map(|c| Arc::new(Mutex::new(c.clone())))
        .collect()
}

/// `redis_lock::lock_across` with an empty critical section that reports when it ran, so the
/// acquisition and the release can each be bounded and the acquisition timed.
async fn redis_lock_pair(conns: &[Arc<Mutex<RedisLockConn>>], key: &str, t0: Instant) -> Pair {
    let opts = redis_lock::LockAcrossOptions {
        ttl: LEASE,
        ..Default::default()
    };
    let (tx, mut rx) = tokio::sync::oneshot::channel::<Instant>();
    let call = redis_lock::lock_across(
        conns,
        key,
        async move {
            let _ = tx.send(Instant::now());
        },
        opts,
    );
    tokio::pin!(call);
    // Phase 1: until the critical section runs (or the call ends without running it).
    let first = timeout(BOUND, async {
        tokio::select! {
            biased;
            r = &mut call => Err(r),
            t = &mut rx => Ok(t),
        }
    })
    .await;
    match first {
        Err(_) => Pair::stuck(),
        // The whole call ended in one poll; the section ran if it sent its instant.
        Ok(Err(r)) => match rx.try_recv() {
            Ok(at) => Pair::held(at - t0, r.is_ok()),
            Err(_) => Pair::refused(),
        },
        Ok(Ok(Ok(at))) => {
            // Phase 2: the release.
            let ok = matches!(timeout(BOUND, &mut call).await, Ok(Ok(())));
            Pair::held(at - t0, ok)
        }
        // The section was dropped unrun: the acquisition failed.
        Ok(Ok(Err(_))) => Pair::refused(),
    }
}

fn secs_arg(s: Option<&String>) -> Duration {
    Duration::from_secs(s.and_then(|s| s.parse().ok()).unwrap_or_else(|| usage()))
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("u") => {
            let [_, lib, _, tasks, url] = &args[..] else {
                usage()
            };
            let secs = secs_arg(args.get(2));
            let tasks: usize = tasks.parse().unwrap_or_else(|_| usage());
            let name = lib_name(lib);
            let lib = Lib::connect(name, std::slice::from_ref(url)).await;
            let (pairs, rate, errors) = scenario_u(&lib, name, secs, tasks).await;
            println!("{name} u {pairs} {rate:.0} {errors}");
        }
        Some("q") => {
            if args.len() < 4 {
                usage()
            }
            let name = lib_name(&args[1]);
            if name == "async-redis-lock" {
                fail("async-redis-lock has no multi-master (Redlock) API, so no scenario q");
            }
            let secs = secs_arg(args.get(2));
            let lib = Lib::connect(name, &args[3..]).await;
            let q = scenario_q(&lib, &format!("bench:q:{name}"), secs).await;
            println!("{name} q {}", q.fields());
        }
        Some(_) => {
            // The original form: `<seconds> <url>...`, rslock only, no scenario field.
            if args.len() < 2 {
                usage()
            }
            let secs = secs_arg(args.first());
            let lib = Lib::connect("rslock", &args[1..]).await;
            let q = scenario_q(&lib, "bench:q:rslock", secs).await;
            println!("rslock {}", q.fields());
        }
        None => usage(),
    }
}

fn lib_name(s: &str) -> &'static str {
    match s {
        "rslock" => "rslock",
        "redis-lock" => "redis-lock",
        "async-redis-lock" => "async-redis-lock",
        _ => usage(),
    }
}

/// Scenario U: `tasks` tasks, each acquiring and releasing its own key until `secs` is up.
/// Returns (clean pairs, pairs per second, errors).
async fn scenario_u(lib: &Lib, name: &str, secs: Duration, tasks: usize) -> (u64, f64, u64) {
    let start = Instant::now();
    let deadline = start + secs;
    let handles: Vec<_> = (0..tasks)
        .map(|i| {
            let lib = lib.for_task();
            let key = format!("bench:u:{name}:{i}");
            tokio::spawn(async move {
                let (mut pairs, mut errors) = (0u64, 0u64);
                while Instant::now() < deadline {
                    let p = lib.pair(&key).await;
                    if p.acquired.is_some() && !p.release_failed {
                        pairs += 1;
                    } else {
                        errors += 1;
                    }
                }
                (pairs, errors)
            })
        })
        .collect();
    let (mut pairs, mut errors) = (0, 0);
    for h in handles {
        let (p, e) = h
            .await
            .unwrap_or_else(|e| fail(&format!("task failed: {e}")));
        pairs += p;
        errors += e;
    }
    (pairs, pairs as f64 / start.elapsed().as_secs_f64(), errors)
}

struct Q {
    lat: Vec<Duration>,
    stuck: u64,
    rate: f64,
}

impl Q {
    /// `<pairs> <p50_ms> <p99_ms> <pairs_per_s> <stuck>`
    fn fields(mut self) -> String {
        self.lat.sort();
        let lat = &self.lat;
        let pct = |p: f64| {
            lat.get(((lat.len() as f64 * p / 100.0) as usize).min(lat.len().saturating_sub(1)))
                .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
        };
        format!(
            "{} {:.3} {:.3} {:.0} {}",
            lat.len(),
            pct(50.0),
            pct(99.0),
            self.rate,
            self.stuck
        )
    }
}

/// Scenario Q: one worker, serial acquire+release of `key`, timing the acquire alone.
async fn scenario_q(lib: &Lib, key: &str, secs: Duration) -> Q {
    let start = Instant::now();
    let deadline = start + secs;
    let mut lat = Vec::new();
    let mut stuck = 0;
    while Instant::now() < deadline {
        let p = lib.pair(key).await;
        if let Some(d) = p.acquired {
            lat.push(d);
        }
        if p.acquire_stuck {
            stuck += 1;
        }
    }
    let rate = lat.len() as f64 / start.elapsed().as_secs_f64();
    Q { lat, stuck, rate }
}
