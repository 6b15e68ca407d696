//! `relock-bench lock --json F --plot G.svg` on a short run: the JSON holds every figure (positive
//! rates, p50 at most p99), the SVG is drawn with its axes and series named, and with stdout
//! and stderr not terminals no progress bar is drawn (no carriage returns, no escapes).

use std::process::Command;

use relock_testkit::RedisServer;

const RELOCK: &str = env!("CARGO_BIN_EXE_relock-bench");

#[test]
fn bench_writes_json_and_an_svg_plot_and_no_progress_bars_off_a_terminal() {
    let server = RedisServer::start().expect("start redis-server");
    let (json, svg) = (
        server.dir().join("bench.json"),
        server.dir().join("bench.svg"),
    );
    let run = |plot: bool| {
        let mut c = Command::new(RELOCK);
        c.args(["lock", "--redis", &server.url(), "--no-baseline"])
            .args(["--seconds", "1", "--tasks", "4", "--workers", "2"])
            .arg("--json")
            .arg(&json);
        if plot {
            c.arg("--plot").arg(&svg);
        }
        c.output().unwrap()
    };
    let mut out = run(true);
    // Text in a plot needs a TrueType font (scripts/ensure-redis installs fonts-dejavu-core).
    // Without one the run must stop before measuring, with a message that says what to
    // install; the rest is then checked without the plot.
    let no_font = String::from_utf8_lossy(&out.stderr).contains("no TrueType font found");
    if no_font {
        assert_ne!(out.status.code(), Some(0));
        assert!(String::from_utf8_lossy(&out.stderr).contains("fonts-dejavu-core"));
        assert!(
            !json.exists() && !svg.exists(),
            "nothing written before the font is found"
        );
        out = run(false);
    }
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    for text in [&stdout, &stderr] {
        assert!(!text.contains('\r') && !text.contains("\x1b["), "{text:?}");
    }
    // The text report is still there.
    assert!(stdout.contains("relock lock+unlock"), "{stdout}");

    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(j["seconds_per_case"], 1, "{j}");
    assert_eq!(j["baselines"], serde_json::Value::Null, "{j}");
    assert_eq!(j["baselines_skipped"], "--no-baseline", "{j}");
    assert!(
        j["uncontended"]["pairs_per_s"].as_f64().unwrap() > 0.0,
        "{j}"
    );
    assert_eq!(j["uncontended"]["tasks"], 4, "{j}");
    for kind in ["plain", "fair"] {
        let c = &j["contended"][kind];
        let f = |k: &str| c[k].as_f64().unwrap_or_else(|| panic!("{kind}.{k} in {j}"));
        assert!(f("pairs_per_s") > 0.0 && f("handoffs_per_s") > 0.0, "{c}");
        assert!(c["handoffs"].as_u64().unwrap() > 0, "{c}");
        assert!(f("handoff_p50_ms") > 0.0, "{c}");
        assert!(f("handoff_p50_ms") <= f("handoff_p90_ms"), "{c}");
        assert!(f("handoff_p90_ms") <= f("handoff_p99_ms"), "{c}");
        assert!(f("handoff_p99_ms") <= f("handoff_max_ms"), "{c}");
        assert_eq!(c["acquisitions_timed_out"], 0, "{c}");
    }
    assert!(
        j["contended"]["fair"]["p50_ratio_to_plain_p50"]
            .as_f64()
            .unwrap()
            > 0.0
    );

    if no_font {
        return;
    }
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(
        svg.starts_with("<svg") || svg.starts_with("<?xml"),
        "{svg:.200}"
    );
    assert!(svg.trim_end().ends_with("</svg>"), "not closed");
    for label in [
        "handoff latency, contended",
        "fraction of handoffs",
        "plain lock: p50",
        "fair lock: p50",
        "pairs/s per lock kind",
        "plain, uncontended",
        "fair, contended",
    ] {
        assert!(svg.contains(label), "{label} not in the SVG");
    }
}
