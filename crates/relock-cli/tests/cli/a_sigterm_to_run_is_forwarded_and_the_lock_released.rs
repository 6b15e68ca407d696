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
        // The shell installs its traps right after it starts; give it the moment.
        wait_until(Duration::from_secs(5), "the command to start", || async {
            Command::new("pgrep")
                .args(["-P", &child.id().to_string()])
                .output()
                .map(|o| !o.stdout.is_empty())
                .unwrap_or(false)
        })
        .await
        .unwrap();
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
    }
}
