//! `relock status` on a rate limiter's name shows its config (rate, interval, type,
//! keep-alive) and, for an overall limit, the permits available now; in text and in
//! `--json`. The exit code stays the locks' (0: no lock named is free), and a hash of data
//! under a name is still "not a lock" (exit 2).

use std::process::Command;
use std::time::Duration;

use relock::{RateConfig, RateType};
use relock_testkit::RedisServer;

const RELOCK: &str = env!("CARGO_BIN_EXE_relock");

fn status(server: &RedisServer, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(RELOCK)
        .args(["status", "--url", &server.url()])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[tokio::test]
async fn status_shows_a_rate_limiters_config_and_available_permits() {
    let server = RedisServer::start().expect("start redis-server");
    let client = relock::Client::connect(server.url()).await.unwrap();
    let api = client.rate_limiter("st-api");
    let minute = Duration::from_secs(60);
    assert!(api
        .try_set_rate(RateType::Overall, 5, minute)
        .await
        .unwrap());
    assert!(api.try_acquire(2).await.unwrap());
    let mail = client.rate_limiter("st-mail");
    assert!(mail
        .try_set(
            RateConfig::new(RateType::PerClient, 10, Duration::from_secs(1))
                .with_keep_alive(Duration::from_secs(3600))
        )
        .await
        .unwrap());

    let (code, text) = status(&server, &["st-api", "st-mail"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("st-api: a rate limiter, 3 of 5 permits available per 60000 ms (overall)"),
        "{text}"
    );
    assert!(
        text.contains(
            "st-mail: a rate limiter, 10 permits per 1000 ms for each client (per client, keep-alive 3600000 ms)"
        ),
        "{text}"
    );
    let (code, json) = status(&server, &["--json", "st-api", "st-mail"]);
    assert_eq!(code, Some(0));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v[0]["kind"], "rate_limiter", "{v}");
    assert_eq!(v[0]["type"], "overall", "{v}");
    assert_eq!(v[0]["rate"], 5, "{v}");
    assert_eq!(v[0]["interval_ms"], 60000, "{v}");
    assert_eq!(v[0]["available"], 3, "{v}");
    assert!(v[0].get("keep_alive_ms").is_none(), "{v}");
    assert_eq!(v[1]["type"], "per_client", "{v}");
    assert_eq!(v[1]["keep_alive_ms"], 3600000, "{v}");
    assert!(v[1].get("available").is_none(), "{v}");

    // A hash of data is not taken for a limiter.
    server
        .cmd(&["HSET", "st-data", "rate", "5", "status", "paid"])
        .unwrap();
    let (code, _) = status(&server, &["st-data"]);
    assert_eq!(code, Some(2));
    // Nothing was written by reading.
    assert_eq!(server.cmd(&["HLEN", "st-data"]).unwrap().as_int(), Some(2));
    assert_eq!(
        server.cmd(&["ZCARD", "{st-api}:permits"]).unwrap().as_int(),
        Some(1)
    );

    assert!(api.delete().await.unwrap());
    assert!(mail.delete().await.unwrap());
    client.shutdown().await;
}
