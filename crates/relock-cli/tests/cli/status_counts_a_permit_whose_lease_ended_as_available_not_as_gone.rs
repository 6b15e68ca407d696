//! `relock status` on a permit-expirable semaphore: a permit whose lease has ended (its holder
//! died) is available again (the next acquire or count gives it back, as Redisson's
//! `availablePermits` does), even before anything has reclaimed it. Status counts only the
//! leases that have not ended as held; it must count the ended ones as available, not drop
//! them from both numbers.

use std::process::Command;

use relock_testkit::RedisServer;

const RELOCK: &str = env!("CARGO_BIN_EXE_relock");

#[tokio::test]
async fn status_counts_a_permit_whose_lease_ended_as_available_not_as_gone() {
    let server = RedisServer::start().expect("start redis-server");
    // Two permits, one of them taken by a holder that died: its lease ended a second ago and
    // nothing has reclaimed it yet (Redisson's layout, written as a dead Java holder left it).
    let time = server.cmd(&["TIME"]).unwrap();
    let now_ms = match time {
        relock_testkit::Value::Array(Some(ref v)) => {
            v[0].as_string().unwrap().parse::<i64>().unwrap() * 1000
                + v[1].as_string().unwrap().parse::<i64>().unwrap() / 1000
        }
        other => panic!("{other:?}"),
    };
    server.cmd(&["SET", "st-ended", "1"]).unwrap();
    let ended = (now_ms - 1000).to_string();
    server
        .cmd(&["ZADD", "{st-ended}:timeout", &ended, "0123456789abcdef"])
        .unwrap();

    let out = Command::new(RELOCK)
        .args(["status", "--url", &server.url(), "st-ended"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();

    // What the library (and Redisson) report for the same keys.
    let client = relock::Client::connect(server.url()).await.unwrap();
    let permits = client.permit_expirable_semaphore("st-ended");
    let (available, acquired) = (
        permits.available().await.unwrap(),
        permits.acquired().await.unwrap(),
    );
    client.shutdown().await;
    assert_eq!((available, acquired), (2, 0));
    assert!(
        text.contains("st-ended: a permit-expirable semaphore, 2 available, 0 held"),
        "status: {text:?}; the semaphore itself says {available} available, {acquired} held"
    );
}
