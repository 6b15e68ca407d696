//! The bench lab's scenarios, one per file named as a sentence, in one test binary (one link).

mod a_plot_in_an_unknown_format_is_refused_before_measuring;
mod a_png_plot_is_a_png_or_names_the_missing_font;
mod a_run_of_zero_seconds_is_refused_before_measuring;
mod bench_quorum_writes_each_configuration_to_json_and_the_plot;
mod bench_runs_behind_a_password_without_showing_it;
mod bench_runs_redis_benchmark_behind_a_password_only_when_asked;
mod bench_scale_writes_each_task_count_to_json_and_the_plot;
mod bench_writes_json_and_an_svg_plot_and_no_progress_bars_off_a_terminal;

use std::path::Path;
use std::process::Command;

/// What a run of `relock-bench` printed, and how it ended.
pub struct Ran {
    pub code: Option<i32>,
    /// Whether the run that gave these figures drew the plot: false when no TrueType font
    /// was found and it ran without `--plot`.
    pub plotted: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `relock-bench ARGS --json JSON --plot PLOT`. Text in a plot needs a TrueType font
/// (scripts/ensure-redis installs fonts-dejavu-core): without one the run must stop before
/// measuring, write nothing and say what to install, and it is then run again without the
/// plot, so that the rest is still checked.
pub fn run_with_json_and_plot(args: &[&str], json: &Path, plot: &Path) -> Ran {
    let run = |with_plot: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_relock-bench"));
        c.args(args).arg("--json").arg(json);
        if with_plot {
            c.arg("--plot").arg(plot);
        }
        c.output().unwrap()
    };
    let mut out = run(true);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let plotted = !stderr.contains("no TrueType font found");
    if !plotted {
        assert_ne!(out.status.code(), Some(0));
        assert!(stderr.contains("fonts-dejavu-core"), "{stderr}");
        assert!(
            !json.exists() && !plot.exists(),
            "nothing written before the font is found"
        );
        out = run(false);
    }
    Ran {
        code: out.status.code(),
        plotted,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
