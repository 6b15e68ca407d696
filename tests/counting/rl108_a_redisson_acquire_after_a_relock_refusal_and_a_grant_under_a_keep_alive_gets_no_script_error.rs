//! An `Overall` limiter with a keep-alive, shared with a Java client: after a relock acquire
//! refused with a delay (which keeps every key alive past the waiter's sleep) and a grant once
//! the oldest record expired (which makes the records key again), the value and the records
//! key must expire together, as Redisson's own scripts keep them. A records key that expires
//! alone leaves a value below the rate with no record: Redisson's `tryAcquire` then fails
//! with a script error ("attempt to perform arithmetic on a nil value") until the value
//! expires too.

use std::time::Duration;

use relock::{RateConfig, RateType};
use relock_tests::*;

// Redisson's `tryAcquireAsync(command, permits)`, as the sharing test runs it.
use crate::rl70_a_limit_is_shared_exactly_with_redissons_own_scripts_both_ways::TRY_ACQUIRE;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redisson_acquire_after_a_relock_refusal_and_a_grant_under_a_keep_alive_gets_no_script_error(
) {
    let server = server();
    let c = client(&server).await;
    let name = "rl108";
    let l = c.rate_limiter(name);
    let interval = Duration::from_millis(200);
    // The keep-alive Redisson allows at its shortest: the interval.
    l.set(RateConfig::new(RateType::Overall, 1, interval).with_keep_alive(interval))
        .await
        .unwrap();
    assert!(l.try_acquire(1).await.unwrap());
    let granted = server_ms(&server);
    // Refused: the keys now live the delay plus a second.
    assert!(!l.try_acquire(1).await.unwrap());
    let window = i64::try_from(interval.as_millis()).unwrap();
    wait_until(
        Duration::from_secs(3),
        "the first record's interval to end",
        || async { server_ms(&server) > granted + window + 5 },
    )
    .await
    .unwrap();
    // The first record expires (its key goes) and the grant makes the records key again.
    assert!(l.try_acquire(1).await.unwrap());
    let (value, records) = (format!("{{{name}}}:value"), format!("{{{name}}}:permits"));
    let pttl = |key: &str| server.cmd(&["PTTL", key]).unwrap().as_int().unwrap();
    let ttls = (pttl(&value), pttl(&records));
    // The second record's interval ends: its key may go, but not before the value.
    wait_until(
        Duration::from_secs(3),
        "the records key to expire",
        || async { pttl(&records) == -2 },
    )
    .await
    .unwrap();
    let left = crate::get(&server, &value);
    // A Java client of Redisson (clock in sync) asks for a permit.
    let now = server_ms(&server).to_string();
    let keys = [
        name.to_string(),
        value.clone(),
        format!("{{{name}}}:value:java"),
        records.clone(),
        format!("{{{name}}}:permits:java"),
    ];
    let mut cmd = vec!["EVAL", TRY_ACQUIRE, "5"];
    cmd.extend(keys.iter().map(String::as_str));
    cmd.extend(["1", now.as_str(), "java-random-0001"]);
    // The reply alone (the error names the whole command).
    let java = server.cmd(&cmd).map_err(|e| {
        let e = e.to_string();
        e[e.len().saturating_sub(200)..].to_string()
    });
    c.shutdown().await;
    // With the keys gone together the limiter is gone (its keep-alive ended): Redisson says
    // so. What must not happen is a value left alone, which its script cannot read.
    let answered = match &java {
        Ok(_) => true,
        Err(e) => e.contains("not initialized"),
    };
    assert!(
        left.is_none() && answered,
        "Redisson's tryAcquire answered {java:?} (value {left:?} left with no records key; value \
         and records key PTTLs after relock's last grant: {ttls:?} ms)"
    );
}
