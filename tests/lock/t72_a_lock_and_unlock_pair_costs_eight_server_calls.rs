//! The uncontended hot path's server cost, counted by `INFO commandstats` (which counts the
//! commands scripts run): a lock+unlock pair is two EVALSHAs, `EXISTS`, `HSET`, `PEXPIRE`
//! and `INCR` to acquire, `HDEL` and `PUBLISH` to release: 8 calls. The fencing counter is
//! seeded (`TIME` + `SET`) at most once per grace period (1 s), and nothing extends it.

use std::time::Instant;

use relock_tests::*;

const PAIRS: u64 = 50;

#[tokio::test]
async fn a_lock_and_unlock_pair_costs_eight_server_calls() {
    let server = server();
    let c = client(&server).await;
    let lock = c.lock("t72");
    // Warm up: the script cache and the connections.
    lock.lock().await.unwrap().unlock().await.unwrap();
    server.reset_stats().unwrap();

    let started = Instant::now();
    let mut last = 0;
    for _ in 0..PAIRS {
        let g = lock.lock().await.unwrap();
        assert!(g.fencing_token() > last, "tokens rise");
        last = g.fencing_token();
        g.unlock().await.unwrap();
    }
    let seconds = started.elapsed().as_secs() + 1;

    let calls = |cmd: &str| server.command_calls(cmd).unwrap();
    for (cmd, per_pair) in [
        ("evalsha", 2),
        ("exists", 1),
        ("hset", 1),
        ("pexpire", 1),
        ("incr", 1),
        ("hdel", 1),
        ("publish", 1),
    ] {
        assert_eq!(calls(cmd), per_pair * PAIRS, "{cmd}");
    }
    // Seeding the counter: one TIME and one SET each time, at most once a second.
    let seeds = calls("time");
    assert_eq!(calls("set"), seeds);
    assert!(seeds <= seconds, "{seeds} seeds in {seconds} s");
    // Nothing else: no HEXISTS, HLEN, DEL, PTTL or counter PEXPIRE on the hot path.
    for cmd in ["hexists", "hlen", "del", "pttl", "eval", "hincrby"] {
        assert_eq!(calls(cmd), 0, "{cmd}");
    }
    c.shutdown().await;
    assert_nothing_left(&server).await;
}
