//! `--plot G.png` draws a PNG with a system TrueType font; without one the error says so
//! (what to install, or RELOCK_PLOT_FONT), before anything is measured.

use std::process::Command;
use std::time::{Duration, Instant};

const RELOCK: &str = env!("CARGO_BIN_EXE_relock-bench");

#[test]
fn a_png_plot_is_a_png_or_names_the_missing_font() {
    let dir = std::env::temp_dir().join(format!("relock-plot-png-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join("q.png");

    // A font that is not there: refused at once, the font named.
    let started = Instant::now();
    let out = Command::new(RELOCK)
        .args(["quorum", "--nodes", "3", "--seconds", "1", "--plot"])
        .arg(&png)
        .env("RELOCK_PLOT_FONT", dir.join("missing.ttf"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("no TrueType font found"), "{stderr}");
    assert!(stderr.contains("missing.ttf"), "{stderr}");
    assert!(stderr.contains("fonts-dejavu-core"), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    assert!(!png.exists());

    // The system's fonts. (A 1 s node timeout: see bench_quorum_writes_each_configuration.)
    let out = Command::new(RELOCK)
        .args(["quorum", "--nodes", "3", "--seconds", "1"])
        .args(["--node-timeout-ms", "1000", "--plot"])
        .arg(&png)
        .env_remove("RELOCK_PLOT_FONT")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let written = std::fs::read(&png);
    let _ = std::fs::remove_dir_all(&dir);
    if out.status.success() {
        let bytes = written.unwrap();
        assert!(
            bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{:?}",
            &bytes[..8.min(bytes.len())]
        );
        assert!(bytes.len() > 10_000, "{} bytes", bytes.len());
    } else {
        assert!(stderr.contains("no TrueType font found"), "{stderr}");
        assert!(written.is_err());
    }
}
