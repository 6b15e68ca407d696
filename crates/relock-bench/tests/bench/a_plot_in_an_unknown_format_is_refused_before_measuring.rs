//! `--plot out.gif` is refused at once, naming the file and the formats taken, with a non-zero
//! exit: no server is started, nothing is measured, no file is written.

use std::process::Command;
use std::time::{Duration, Instant};

const RELOCK: &str = env!("CARGO_BIN_EXE_relock-bench");

#[test]
fn a_plot_in_an_unknown_format_is_refused_before_measuring() {
    let dir = std::env::temp_dir().join(format!("relock-plot-gif-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let gif = dir.join("out.gif");
    for command in ["lock", "quorum"] {
        let started = Instant::now();
        let out = Command::new(RELOCK)
            .args([command, "--seconds", "1", "--plot"])
            .arg(&gif)
            .output()
            .unwrap();
        let took = started.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{command}: {stderr}");
        assert!(stderr.contains("out.gif"), "{command}: {stderr}");
        assert!(stderr.contains(".svg or .png"), "{command}: {stderr}");
        // A measurement takes its --seconds 1 at least (`quorum` starts 5 servers first).
        assert!(took < Duration::from_millis(900), "{command} took {took:?}");
        assert!(!gif.exists());
        assert!(String::from_utf8_lossy(&out.stdout).is_empty());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
