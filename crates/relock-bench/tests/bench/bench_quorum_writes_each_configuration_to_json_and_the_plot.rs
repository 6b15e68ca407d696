//! `relock-bench quorum --nodes 3 --json F --plot G.svg`: the JSON has the quorum, the single
//! node and the quorum with one node paused, each with its own figures, and the latency CDF
//! names each of them.

#[test]
fn bench_quorum_writes_each_configuration_to_json_and_the_plot() {
    let dir = std::env::temp_dir().join(format!("relock-bench-quorum-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, svg) = (dir.join("q.json"), dir.join("q.svg"));
    let out = crate::run_with_json_and_plot(
        // A debug build on a loaded machine can miss the default 50 ms node timeout; a
        // release that misses it leaves a hold that blocks the 1-paused case for a lease.
        &[
            "quorum",
            "--nodes",
            "3",
            "--seconds",
            "1",
            "--node-timeout-ms",
            "1000",
        ],
        &json,
        &svg,
    );
    let text = format!("{}{}", out.stdout, out.stderr);
    let (json, svg) = (
        std::fs::read_to_string(&json),
        std::fs::read_to_string(&svg),
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.code, Some(0), "{text}");
    assert!(!text.contains('\r') && !text.contains("\x1b["), "{text:?}");

    let j: serde_json::Value = serde_json::from_str(&json.unwrap()).unwrap();
    assert_eq!(j["nodes"], 3, "{j}");
    // Every release reached every node, the paused one too once it resumed (shutdown lets a
    // release that was on its way be sent again on the node's new connections).
    assert_eq!(j["keys_left_without_ttl"], 0, "{j}");
    assert_eq!(j["keys_left_on_other_nodes"], 0, "{j}");
    assert_eq!(j["keys_left_after_release"], 0, "{j}");
    let configurations = j["configurations"].as_array().unwrap();
    let kinds: Vec<&str> = configurations
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["quorum", "single_node", "quorum_one_paused"], "{j}");
    for c in configurations {
        let f = |k: &str| c[k].as_f64().unwrap_or_else(|| panic!("{k} in {c}"));
        assert!(c["pairs"].as_u64().unwrap() > 0, "{c}");
        assert!(f("pairs_per_s") > 0.0, "{c}");
        assert!(0.0 < f("acquire_p50_ms"), "{c}");
        assert!(f("acquire_p50_ms") <= f("acquire_p90_ms"), "{c}");
        assert!(f("acquire_p90_ms") <= f("acquire_p99_ms"), "{c}");
        assert!(f("acquire_p99_ms") <= f("acquire_max_ms"), "{c}");
    }
    assert_eq!(configurations[2]["paused_nodes"], 1, "{j}");
    assert_eq!(
        configurations[0]["p50_ratio_to_quorum"],
        serde_json::Value::Null
    );
    assert!(configurations[1]["p50_ratio_to_quorum"].as_f64().unwrap() > 0.0);

    if !out.plotted {
        return;
    }
    let svg = svg.unwrap();
    assert!(
        svg.starts_with("<svg") || svg.starts_with("<?xml"),
        "{svg:.200}"
    );
    for label in [
        "acquire latency CDF",
        "acquire latency (ms)",
        "relock quorum, 3 nodes (",
        "relock single node",
        "relock quorum, 3 nodes, 1 paused",
    ] {
        assert!(svg.contains(label), "{label} not in the SVG");
    }
}
