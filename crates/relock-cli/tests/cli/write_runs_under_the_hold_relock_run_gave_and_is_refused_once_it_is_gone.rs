//! `relock write` from the command `relock run` starts: the write lands while the run holds
//! the lock. Under a hold that is gone (force-unlocked), or an owner field that never held it,
//! it is refused with exit 76 and nothing is written; a key outside the lock's slot is
//! refused before anything is sent. `relock run --url` gives its command the URL, and
//! `relock write`'s own options after the command's words are refused, not written as data.

use std::process::Command;

use relock_testkit::RedisServer;

use crate::common::{relock_run, RELOCK};

fn write(url: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(RELOCK)
        .args(["write", "--url", url])
        .args(args)
        .env_remove("RELOCK_OWNER")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn write_runs_under_the_hold_relock_run_gave_and_is_refused_once_it_is_gone() {
    let server = RedisServer::start().expect("start redis-server");
    let url = server.url();

    // Under relock run: RELOCK_OWNER reaches relock write.
    let script = format!("{RELOCK} write --url {url} cli-write HSET {{cli-write}}:row status paid");
    let (code, out, err) = relock_run(&url, &["cli-write", "sh", "-c", &script]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.trim(), "1");
    let v = server.cmd(&["HGET", "{cli-write}:row", "status"]).unwrap();
    assert_eq!(v.as_string().as_deref(), Some("paid"));

    // A hold that is gone: refused, nothing written.
    let client = relock::Client::connect(url.clone()).await.unwrap();
    let guard = client.lock("cli-write").lock().await.unwrap();
    let owner = guard.owner().to_string();
    let (code, _, err) = write(
        &url,
        &["--owner", &owner, "cli-write", "SET", "{cli-write}:k", "1"],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(client.lock("cli-write").force_unlock().await.unwrap());
    let (code, _, err) = write(
        &url,
        &["--owner", &owner, "cli-write", "SET", "{cli-write}:k", "2"],
    );
    assert_eq!(code, Some(76), "{err}");
    assert!(err.contains("nothing was written"), "{err}");
    assert_eq!(
        server
            .cmd(&["GET", "{cli-write}:k"])
            .unwrap()
            .as_string()
            .as_deref(),
        Some("1")
    );
    // Another slot: refused before sending, naming the tagged form.
    let (code, _, err) = write(
        &url,
        &["--owner", &owner, "cli-write", "SET", "elsewhere", "1"],
    );
    assert_eq!(code, Some(1));
    assert!(err.contains("{cli-write}:elsewhere"), "{err}");
    // No hold given at all: said so.
    let (code, _, err) = write(&url, &["cli-write", "SET", "{cli-write}:k", "3"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("RELOCK_OWNER"), "{err}");
    // Under a shared (read) hold: refused, nothing written.
    let script = format!("{RELOCK} write --url {url} cli-write-s SET {{cli-write-s}}:k x");
    let (code, _, err) = relock_run(&url, &["-s", "cli-write-s", "sh", "-c", &script]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("exclusive hold"), "{err}");
    assert_eq!(
        server.cmd(&["EXISTS", "{cli-write-s}:k"]).unwrap().as_int(),
        Some(0)
    );
    // `relock run --url` passes its URL on: a `relock write` without one reaches the same
    // server (the test's `relock_run` gives `--url`; nothing else names the server).
    let script = format!("{RELOCK} write cli-write-u SET {{cli-write-u}}:k via-env");
    let (code, out, err) = relock_run(&url, &["cli-write-u", "sh", "-c", &script]);
    assert_eq!((code, out.trim()), (Some(0), "OK"), "{err}");
    let v = server.cmd(&["GET", "{cli-write-u}:k"]).unwrap();
    assert_eq!(v.as_string().as_deref(), Some("via-env"));
    // An option after the command's words would be data (a password with it): refused.
    let secret = format!("redis://:s3cr3t@127.0.0.1:{}", server.port());
    let script =
        format!("{RELOCK} write cli-write-o RPUSH {{cli-write-o}}:log started --url {secret}");
    let (code, out, err) = relock_run(&url, &["cli-write-o", "sh", "-c", &script]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(err.contains("`--url` after the command"), "{err}");
    assert!(
        !err.contains("s3cr3t") && !out.contains("s3cr3t"),
        "{out}{err}"
    );
    assert_eq!(
        server
            .cmd(&["EXISTS", "{cli-write-o}:log"])
            .unwrap()
            .as_int(),
        Some(0)
    );
    drop(guard);
    client.shutdown().await;
}
