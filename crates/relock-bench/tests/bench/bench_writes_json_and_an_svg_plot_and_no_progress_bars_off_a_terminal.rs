//! `relock-bench lock --json F --plot G.svg` on a short run: the JSON holds every figure (positive
//! rates, p50 at most p99), the SVG is drawn with its axes and series named, and with stdout
//! and stderr not terminals no progress bar is drawn (no carriage returns, no escapes).

use relock_testkit::RedisServer;

#[test]
fn bench_writes_json_and_an_svg_plot_and_no_progress_bars_off_a_terminal() {
    let server = RedisServer::start().expect("start redis-server");
    let (json, svg) = (
        server.dir().join("bench.json"),
        server.dir().join("bench.svg"),
    );
    let url = server.url();
    let out = crate::run_with_json_and_plot(
        &[
            "lock",
            "--redis",
            &url,
            "--no-baseline",
            "--seconds",
            "1",
            "--tasks",
            "4",
            "--workers",
            "2",
        ],
        &json,
        &svg,
    );
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    assert_eq!(out.code, Some(0), "{stdout}{stderr}");
    for text in [stdout, stderr] {
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

    if !out.plotted {
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
