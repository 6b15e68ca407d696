//! What a run prints: a progress bar (on a terminal only), a line per segment, a table for
//! `docs/reliability.md`.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::run::Outcome;

/// A bar over `segments` segments, drawn only when stderr is a terminal.
pub fn progress(segments: usize) -> ProgressBar {
    let bar =
        ProgressBar::with_draw_target(Some(segments as u64 * 100), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {percent}% {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "ok"
    } else {
        "FAIL"
    }
}

/// One line per segment, with the first examples of anything that failed.
pub fn line(o: &Outcome) {
    println!(
        "{:<8} {:>7} sections in {:>5.1} s  exclusion {} ({} overlaps, {} excused)  fencing {} ({} stale rejected, {} stale accepted, {} lost updates)  liveness {} (longest recovery {} ms, median handoff {} µs)  leaks {}   [{}]",
        o.kind.name(),
        o.sections,
        o.seconds,
        verdict(o.exclusion.ok),
        o.exclusion.violations,
        o.exclusion.excused,
        verdict(o.fencing.verdict.ok),
        o.fencing.stale_rejected,
        o.fencing.stale_accepted,
        o.fencing.lost_updates,
        verdict(o.liveness.verdict.ok),
        o.liveness.longest_recovery_ms,
        o.liveness.median_handoff_us,
        verdict(o.leak_verdict.ok),
        o.nemeses.join(", "),
    );
    for s in &o.skipped {
        println!("         skipped: {s}");
    }
    for (what, v) in [
        ("exclusion", &o.exclusion),
        ("fencing", &o.fencing.verdict),
        ("liveness", &o.liveness.verdict),
        ("leaks", &o.leak_verdict),
    ] {
        for e in &v.examples {
            println!("         {what}: {e}");
        }
    }
}

/// A Markdown table, one row per segment.
pub fn table(outcomes: &[Outcome]) -> String {
    let mut t = String::from(
        "| kind | nemeses | sections | overlaps (required / excused) | stale writes rejected | stale writes accepted | lost updates | token regressions | longest recovery | leaks | verdict |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for o in outcomes {
        let leaks = o.leaks.keys.len() + o.leaks.channels.len() + o.leaks.processes.len();
        t.push_str(&format!(
            "| {} | {} | {} | {} / {} | {} | {} | {} | {} | {} ms | {} | {} |\n",
            o.kind.name(),
            o.nemeses.join(", "),
            o.sections,
            o.exclusion.violations,
            o.exclusion.excused,
            o.fencing.stale_rejected,
            o.fencing.stale_accepted,
            o.fencing.lost_updates,
            o.fencing.token_regressions,
            o.liveness.longest_recovery_ms,
            leaks,
            verdict(o.ok()),
        ));
    }
    t
}
