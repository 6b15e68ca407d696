//! A run that would measure nothing is refused at once, naming the option: `--seconds 0` by
//! every subcommand that measures for a time, `--periods 0` and `--locks 0` by `watchdog`. Such
//! a run printed ratios of zero (or NaN) beside its targets, and zero read as a target met.

use std::process::Command;

const RELOCK: &str = env!("CARGO_BIN_EXE_relock-bench");

#[test]
fn a_run_of_zero_seconds_is_refused_before_measuring() {
    let mut cases: Vec<[&str; 3]> = [
        "lock", "compare", "quorum", "sync", "cluster", "scale", "guarded",
    ]
    .into_iter()
    .map(|command| [command, "--seconds", "0"])
    .collect();
    cases.push(["watchdog", "--periods", "0"]);
    cases.push(["watchdog", "--locks", "0"]);
    for [command, option, value] in cases {
        let out = Command::new(RELOCK)
            .args([command, option, value])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        // clap's usage error: a run, even an empty one, exits 0.
        assert_eq!(out.status.code(), Some(2), "{command} {option}: {stderr}");
        assert!(stderr.contains(option), "{command} {option}: {stderr}");
        assert!(
            stderr.contains("0 is not in 1.."),
            "{command} {option}: {stderr}"
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).is_empty(),
            "{command} {option}"
        );
    }
}
