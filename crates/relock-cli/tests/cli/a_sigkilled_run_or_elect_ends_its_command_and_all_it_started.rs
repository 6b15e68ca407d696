//! A `relock run` or `relock elect` killed with SIGKILL (as the OOM killer or a crash ends it)
//! takes its command and everything the command started with it, within moments, not when the
//! lease ends: nothing runs on without the lock once the next holder begins. A `relock` that
//! ends normally leaves no process of its own behind either.
//!
//! Every process `relock` starts inherits its environment, so a tag in that environment finds
//! them all (the command, its child, and anything relock starts to guard them).

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use relock_testkit::{wait_until, RedisServer};

use crate::common::RELOCK;

/// The live (not zombie) processes whose environment holds `tag`.
fn tagged(tag: &str) -> Vec<u32> {
    let needle = format!("RELOCK_TEST_TAG={tag}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(env) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let has = env.split(|b| *b == 0).any(|v| v == needle.as_bytes());
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
            .unwrap_or(true);
        if has && !zombie {
            found.push(pid);
        }
    }
    found
}

fn spawn(tag: &str, args: &[&str], script: &str) -> Child {
    Command::new(RELOCK)
        .env("RELOCK_TEST_TAG", tag)
        .args(args)
        .args(["sh", "-c", script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

async fn killed_takes_everything(url: &str, sub: &str, name: &str) {
    let tag = format!("{sub}-{}", std::process::id());
    let dir = std::env::temp_dir().join(format!("relock-tether-{tag}"));
    std::fs::create_dir_all(&dir).unwrap();
    let (outer, inner) = (dir.join("outer.pid"), dir.join("inner.pid"));
    // The command starts a child of its own and waits for it: two processes to end.
    let script = format!(
        "sleep 600 & echo $! > {}; echo $$ > {}; wait",
        inner.display(),
        outer.display()
    );
    let mut relock = spawn(&tag, &[sub, "--url", url, name], &script);
    wait_until(
        Duration::from_secs(10),
        "the command and its child",
        || async { inner.exists() && outer.exists() },
    )
    .await
    .unwrap();
    // relock, its command, the command's child, and at most a guard.
    let before = tagged(&tag);
    assert!(before.len() >= 3, "{before:?}");

    relock.kill().unwrap(); // SIGKILL
    relock.wait().unwrap();
    // The default watchdog lease is 30 s: before, both ran on for all of it and past it.
    let gone = wait_until(
        Duration::from_secs(3),
        "no process of relock's left",
        || async { tagged(&tag).is_empty() },
    )
    .await;
    // Each one left, with its command line, to tell which step let it go.
    let left: Vec<(u32, String)> = tagged(&tag)
        .into_iter()
        .map(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .unwrap_or_default();
            (pid, cmd)
        })
        .collect();
    for (pid, _) in &left {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    assert!(
        gone.is_ok(),
        "still running after relock's SIGKILL: {left:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_sigkilled_run_or_elect_ends_its_command_and_all_it_started() {
    let server = RedisServer::start().expect("start redis-server");
    let url = server.url();
    killed_takes_everything(&url, "run", "cli-tether-run").await;
    killed_takes_everything(&url, "elect", "cli-tether-elect").await;

    // A normal end leaves nothing either (the guard exits with relock).
    let tag = format!("normal-{}", std::process::id());
    let out = Command::new(RELOCK)
        .env("RELOCK_TEST_TAG", &tag)
        .args(["run", "--url", &url, "cli-tether-normal", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    wait_until(
        Duration::from_secs(3),
        "no process of relock's left",
        || async { tagged(&tag).is_empty() },
    )
    .await
    .unwrap();
}
