//! `--seconds 0` is refused at once by every subcommand that measures for a time, naming the
//! option: a run of no time measured nothing, and its ratios of zero read as targets met.

use std::process::Command;
use std::time::{Duration, Instant};

const RELOCK: &str = env!("CARGO_BIN_EXE_relock-bench");

#[test]
fn a_run_of_zero_seconds_is_refused_before_measuring() {
    for command in [
        "lock", "compare", "quorum", "sync", "cluster", "scale", "guarded",
    ] {
        let started = Instant::now();
        let out = Command::new(RELOCK)
            .args([command, "--seconds", "0"])
            .output()
            .unwrap();
        let took = started.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert!(stderr.contains("--seconds"), "{command}: {stderr}");
        assert!(stderr.contains("0 is not in 1.."), "{command}: {stderr}");
        // No server started, nothing measured.
        assert!(took < Duration::from_millis(900), "{command} took {took:?}");
        assert!(String::from_utf8_lossy(&out.stdout).is_empty(), "{command}");
    }
}
