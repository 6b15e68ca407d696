//! SIGTERM (or SIGINT, or SIGHUP) to `relock run` goes to the command; `relock` waits for it,
//! releases the lock at once (not after a lease) and exits with the command's code.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use relock_testkit::{wait_until, RedisServer};

const RELOCK: &str = env!("CARGO_BIN_EXE_relock");

#[tokio::test]
async fn a_sigterm_to_run_is_forwarded_and_the_lock_released() {
    let server = RedisServer::start().expect("start redis-server");
    for (signal, code) in [("-TERM", 5), ("-INT", 6), ("-HUP", 7)] {
        let mut child = Command::new(RELOCK)
            .args(["run", "cli-sig", "--url", &server.url(), "--shell"])
            // The traps stop the background sleep too: nothing outlives the test.
            .arg("trap 'kill $!; exit 5' TERM; trap 'kill $!; exit 6' INT; trap 'kill $!; exit 7' HUP; sleep 20 & wait")
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        wait_until(Duration::from_secs(5), "the lock to be held", || async {
            server.cmd(&["EXISTS", "cli-sig"]).unwrap().as_int() == Some(1)
        })
        .await
        .unwrap();
        // The shell has installed its traps once it has started its `sleep` (after them).
        wait_until(Duration::from_secs(5), "the command to start", || async {
            children(child.id())
                .iter()
                .any(|&sh| !children(sh).is_empty())
        })
        .await
        .unwrap();
        let sleeps: Vec<u32> = children(child.id())
            .iter()
            .flat_map(|&sh| children(sh))
            .collect();
        let sent = Instant::now();
        assert!(Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap()
            .success());
        let exit = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                sent.elapsed() < Duration::from_secs(3),
                "no exit after {signal}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        assert_eq!(exit.code(), Some(code), "after {signal}");
        assert_eq!(
            server.cmd(&["EXISTS", "cli-sig"]).unwrap().as_int(),
            Some(0),
            "released within {:?} of {signal}",
            sent.elapsed()
        );
        assert!(
            sent.elapsed() < Duration::from_secs(1),
            "{:?}",
            sent.elapsed()
        );
        // Nothing of the command outlives it: the signal reached its whole process group. Its
        // `sleep` shares the test's stderr, and one still dying when the test ends holds it
        // open: nextest reports such a test as leaky.
        wait_until(
            Duration::from_secs(3),
            "the command's sleep to end",
            || async { sleeps.iter().all(|&pid| !alive(pid)) },
        )
        .await
        .unwrap();
    }
}

/// The pids of `pid`'s child processes.
fn children(pid: u32) -> Vec<u32> {
    Command::new("pgrep")
        .args(["-P", &pid.to_string()])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether process `pid` still runs (a zombie, dead but not yet reaped, does not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}
