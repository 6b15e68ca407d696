//! The client's own cost of the commonest call: an uncontended plain lock taken and released
//! (`lock().await` then `unlock().await`) makes at most a stated number of allocations in the
//! whole process (relock, fred and tokio together), averaged over many pairs after a warm-up.
//! A change that adds work per operation (a record, a string, a tracing field built when
//! nobody listens) shows here before it shows as CPU time in a benchmark.

use relock::fred::interfaces::{ClientLike, LuaInterface};
use relock_tests::*;

/// Pairs measured, after as many to warm up.
const PAIRS: i64 = 500;

/// Allocations per pair that the calls may make: 60 measured (70 when each key and argument was
/// a value of its own), beside 51 for the same two script calls made with fred alone.
const MOST: f64 = 66.0;

async fn per_pair(c: &relock::Client, try_lock: bool) -> f64 {
    let lock = c.lock("h20");
    let pair = || async {
        let guard = if try_lock {
            lock.try_lock().await.unwrap().expect("uncontended")
        } else {
            lock.lock().await.unwrap()
        };
        guard.unlock().await.unwrap();
    };
    for _ in 0..PAIRS {
        pair().await;
    }
    let before = crate::allocations_made();
    for _ in 0..PAIRS {
        pair().await;
    }
    (crate::allocations_made() - before) as f64 / PAIRS as f64
}

/// The floor: the same two script calls (acquire, then release, with the same keys and
/// arguments) made with fred alone, on a fred client of its own.
async fn bare_fred_per_pair(server: &relock_testkit::RedisServer) -> f64 {
    let config = relock::fred::types::config::Config::from_url(&server.url()).unwrap();
    let fred = relock::fred::types::Builder::from_config(config)
        .build()
        .unwrap();
    fred.init().await.unwrap();
    let acquire: String = fred.script_load(relock::lua::ACQUIRE).await.unwrap();
    let release: String = fred.script_load(relock::lua::RELEASE).await.unwrap();
    let mut n = 0u64;
    let mut pair = || {
        n += 1;
        let field = format!("0123456789abcdef0123456789abcdef:{n}");
        let (fred, acquire, release) = (fred.clone(), acquire.clone(), release.clone());
        async move {
            let granted: Vec<i64> = fred
                .evalsha(
                    &acquire,
                    vec!["h20f", "redisson_lock_token:{h20f}"],
                    vec!["30000", field.as_str(), "1000"],
                )
                .await
                .unwrap();
            assert_eq!(granted[0], 1);
            let released: Option<i64> = fred
                .evalsha(
                    &release,
                    vec!["h20f"],
                    vec![
                        field.as_str(),
                        "all",
                        "publish",
                        "redisson_lock__channel:{h20f}",
                    ],
                )
                .await
                .unwrap();
            assert_eq!(released, Some(1));
        }
    };
    for _ in 0..PAIRS {
        pair().await;
    }
    let before = crate::allocations_made();
    for _ in 0..PAIRS {
        pair().await;
    }
    let made = (crate::allocations_made() - before) as f64 / PAIRS as f64;
    fred.quit().await.unwrap();
    made
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncontended_lock_and_unlock_allocate_a_bounded_number_of_times() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let server = server();
    let c = client(&server).await;
    let lock = per_pair(&c, false).await;
    let try_lock = per_pair(&c, true).await;
    let floor = bare_fred_per_pair(&server).await;
    eprintln!(
        "allocations per pair: lock {lock:.1}, try_lock {try_lock:.1}; the same two script \
         calls with fred alone {floor:.1} ({:.2} x)",
        lock / floor
    );
    assert!(
        lock <= MOST && try_lock <= MOST,
        "allocations per uncontended pair: lock {lock:.1}, try_lock {try_lock:.1}; at most {MOST}"
    );
    c.shutdown().await;
}
