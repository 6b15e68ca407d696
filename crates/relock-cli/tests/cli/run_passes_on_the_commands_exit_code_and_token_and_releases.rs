//! `relock run NAME -- CMD`: the command runs while the lock is held, sees RELOCK_NAME,
//! RELOCK_TOKEN and RELOCK_OWNER, and `relock` exits with the command's own code after
//! releasing the lock. `--shell` runs through `sh -c`; a missing command is a clear error.

use std::process::{Command, Stdio};
use std::time::Duration;

use relock_testkit::{wait_until, RedisServer};

const RELOCK: &str = env!("CARGO_BIN_EXE_relock");

#[tokio::test]
async fn run_passes_on_the_commands_exit_code_and_token_and_releases() {
    let server = RedisServer::start().expect("start redis-server");
    let child = Command::new(RELOCK)
        .args(["run", "cli-run", "--url", &server.url(), "--"])
        .args([
            "sh",
            "-c",
            "echo $RELOCK_NAME $RELOCK_TOKEN $RELOCK_OWNER; sleep 0.5; exit 7",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Held while the command runs, by the owner the command was told.
    wait_until(Duration::from_secs(5), "the lock to be held", || async {
        server.cmd(&["EXISTS", "cli-run"]).unwrap().as_int() == Some(1)
    })
    .await
    .unwrap();
    let owner_field = server
        .cmd(&["HRANDFIELD", "cli-run"])
        .unwrap()
        .as_string()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(7), "the command's own exit code");
    let line = String::from_utf8(out.stdout).unwrap();
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words.len(), 3, "{line}");
    assert_eq!(words[0], "cli-run");
    assert!(
        words[1].parse::<u64>().unwrap() > 1_000_000_000_000_000,
        "{line}"
    );
    assert_eq!(words[2], owner_field, "RELOCK_OWNER is the hold's field");
    assert_eq!(
        server.cmd(&["EXISTS", "cli-run"]).unwrap().as_int(),
        Some(0)
    );

    // --shell, and RELOCK_URL instead of --url.
    let status = Command::new(RELOCK)
        .args(["run", "cli-run", "--shell", "exit 3"])
        .env("RELOCK_URL", server.url())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(3));

    // No command: a clear error, exit 1.
    let out = Command::new(RELOCK)
        .args(["run", "cli-run", "--url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no command to run"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_until(Duration::from_secs(5), "nothing left", || async {
        server.dbsize().unwrap() == 0
    })
    .await
    .unwrap();
}
