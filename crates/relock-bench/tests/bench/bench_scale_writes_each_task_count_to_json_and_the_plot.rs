//! `relock-bench scale --tasks 1,4 --json F --plot G.svg`: one row per task count with relock's
//! and the floor's pairs/s and their ratio, a plot that names both lines, and a task count of 0
//! refused before anything is measured.

use std::process::Command;

const RELOCK: &str = env!("CARGO_BIN_EXE_relock-bench");

#[test]
fn bench_scale_writes_each_task_count_to_json_and_the_plot() {
    let dir = std::env::temp_dir().join(format!("relock-bench-scale-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, svg) = (dir.join("s.json"), dir.join("s.svg"));

    let refused = Command::new(RELOCK)
        .args(["scale", "--tasks", "4,0", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains("\"0\" is not a task count"), "{said}");
    assert!(!json.exists(), "nothing measured, nothing written");

    let out =
        crate::run_with_json_and_plot(&["scale", "--seconds", "1", "--tasks", "1,4"], &json, &svg);
    let text = format!("{}{}", out.stdout, out.stderr);
    let (json, svg) = (
        std::fs::read_to_string(&json),
        std::fs::read_to_string(&svg),
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.code, Some(0), "{text}");
    assert!(!text.contains('\r') && !text.contains("\x1b["), "{text:?}");

    let j: serde_json::Value = serde_json::from_str(&json.unwrap()).unwrap();
    assert_eq!(j["seconds_per_measurement"], 1, "{j}");
    assert_eq!(j["coalesce"], true, "{j}");
    let rows = j["rows"].as_array().unwrap();
    let tasks: Vec<u64> = rows.iter().map(|r| r["tasks"].as_u64().unwrap()).collect();
    assert_eq!(tasks, [1, 4], "{j}");
    for r in rows {
        let (relock, floor) = (
            r["relock_pairs_per_s"].as_f64().unwrap(),
            r["floor_pairs_per_s"].as_f64().unwrap(),
        );
        assert!(relock > 0.0 && floor > 0.0, "{r}");
        let ratio = r["pairs_per_s_ratio_to_floor"].as_f64().unwrap();
        assert!((ratio - relock / floor).abs() < 1e-9, "{r}");
        assert!(
            r["relock_client_cpu_us_per_pair"].as_f64().unwrap() > 0.0,
            "{r}"
        );
    }
    // One text line per task count.
    assert_eq!(
        text.lines()
            .filter(|l| l.trim_start().starts_with("1 ") || l.trim_start().starts_with("4 "))
            .count(),
        2,
        "{text}"
    );
    if out.plotted {
        let svg = svg.unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
        for label in ["relock", "U floor", "pairs/s against task count"] {
            assert!(svg.contains(label), "the plot names {label:?}");
        }
    }
}
