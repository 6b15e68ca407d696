//! `relock run --quorum URL,URL,URL NAME -- CMD` locks a majority of independent masters: the
//! URLs are one comma-separated argument (the name after them is not taken for a URL), and
//! fewer than 3 masters are refused with a clear error. `--restart-quarantine` reaches the
//! quorum client.

use std::process::Command;

use relock_testkit::RedisMasters;

const RELOCK: &str = env!("CARGO_BIN_EXE_relock");

#[tokio::test]
async fn run_on_a_quorum_takes_the_urls_in_one_argument() {
    let m = RedisMasters::start(3).expect("start redis-servers");
    let urls = m.urls().join(",");
    let out = Command::new(RELOCK)
        // The masters just started: without this they sit out the restart quarantine.
        .args(["run", "--quorum", &urls, "--restart-quarantine", "0s"])
        .args(["cli-quorum", "--", "sh", "-c"])
        .arg("echo $RELOCK_TOKEN")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(token > 0);
    for s in m.servers() {
        assert_eq!(s.cmd(&["EXISTS", "cli-quorum"]).unwrap().as_int(), Some(0));
    }

    let two = m.urls()[..2].join(",");
    let out = Command::new(RELOCK)
        .args(["run", "--quorum", &two, "cli-quorum", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("at least 3 masters"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
