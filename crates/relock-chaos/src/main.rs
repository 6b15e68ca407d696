//! `relock-chaos`: runs relock's locks in client processes under injected faults and checks the
//! history for exclusion, fencing, liveness and leaks.
//!
//! ```text
//! relock-chaos --profile ci                      # every nemesis once, about 90 s
//! relock-chaos --profile soak --json soak.json   # ≥ 100 000 sections per kind and nemesis
//! relock-chaos --kind plain --nemesis pause-client --seed 7
//! relock-chaos --kind plain --random 20 --seed 42  # a random mix, replayable by its seed
//! relock-chaos --mutant release-without-owner-check  # a broken relock must be caught
//! ```
//!
//! Layout: `client` (one client process), `history` (events on CLOCK_MONOTONIC), `resource`
//! (the guarded or fenced counter), `topology` (servers per kind), `nemesis` (faults), `clock`
//! (libfaketime), `run` (one segment), `check` (the verdicts), `rate` (the rate kind's
//! checker), `report` (tables and JSON).
#![forbid(unsafe_code)]
#![warn(rust_2018_idioms)]

mod check;
mod client;
mod clock;
mod history;
mod kind;
#[cfg(feature = "chaos-mutants")]
mod mutant;
mod nemesis;
mod rate;
mod report;
mod resource;
mod run;
mod soak;
mod soak_plot;
mod topology;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use kind::Kind;
use nemesis::Nemesis;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Profile {
    /// Every nemesis once per kind it applies to, about 90 s in all.
    Ci,
    /// Each nemesis repeated, per kind, until `--sections` critical sections.
    Soak,
}

#[derive(Debug, Parser)]
#[command(
    name = "relock-chaos",
    about = "Fault injection for relock: client processes, nemeses, and checkers for exclusion, fencing, liveness and leaks",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// One client process (the harness starts these).
    #[command(hide = true)]
    Client(client::ClientArgs),
    /// Lists the mutants a `chaos-mutants` build offers.
    Mutants,
    /// Judges the histories of an earlier run again with this build's checkers (exclusion,
    /// liveness, and the token order part of fencing; the resource's final state and the
    /// leaks are not kept, so those verdicts are the run's own).
    Judge(JudgeArgs),
    /// A steady mixed load of every one-server kind under faults, sampling each client's
    /// memory and tasks and the server's connections, channels, keys and memory: fails if any
    /// grows or does not come back after a fault.
    SoakResources(soak::SoakArgs),
}

#[derive(Debug, clap::Args)]
struct JudgeArgs {
    /// The run's `--json` file.
    #[arg(long)]
    json: PathBuf,
    /// The run's `--dir`.
    #[arg(long)]
    dir: PathBuf,
    /// The lease the run used.
    #[arg(long, default_value_t = 1500)]
    lease_ms: u64,
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    #[arg(long, value_enum, default_value = "ci")]
    profile: Profile,
    /// Lock kinds (default: every kind but spin; fair, then plain, for a mutant).
    #[arg(long = "kind", value_enum)]
    kinds: Vec<Kind>,
    /// Nemeses (default: every one that applies to the kind).
    #[arg(long = "nemesis", value_enum)]
    nemeses: Vec<Nemesis>,
    /// Instead of each nemesis in turn, this many picked at random (replay with `--seed`).
    #[arg(long)]
    random: Option<usize>,
    /// Soak: stop a segment after this many seconds even if short of `--sections`.
    #[arg(long)]
    duration: Option<u64>,
    /// Soak: critical sections per kind and nemesis.
    #[arg(long, default_value_t = 100_000)]
    sections: u64,
    /// Client processes.
    #[arg(long, default_value_t = 4)]
    clients: u32,
    /// The work inside a critical section, between the fenced read and write: 0..=this many
    /// ms (plus a few slow sections of 20-60 ms).
    #[arg(long, default_value_t = 2)]
    work_ms: u64,
    /// Lock names the clients contend for.
    #[arg(long, default_value_t = 2)]
    names: usize,
    /// The watchdog lease the clients use.
    #[arg(long, default_value_t = 1500)]
    lease_ms: u64,
    /// A mutant run's time budget: the CI schedule repeats until a violation or this.
    #[arg(long, default_value_t = 40)]
    budget: u64,
    /// Seed for every random choice (printed; a run is replayed by passing it again).
    #[arg(long)]
    seed: Option<u64>,
    /// Run a deliberately broken relock (a `chaos-mutants` build); exits 0 only if the
    /// checkers report a violation.
    #[arg(long)]
    mutant: Option<String>,
    /// Write the outcomes as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Where client histories and logs go (default: a temporary directory, removed on success).
    #[arg(long)]
    dir: Option<PathBuf>,
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Some(Command::Client(args)) => client::main(args),
        Some(Command::Mutants) => {
            for m in mutant_names() {
                println!("{m}");
            }
            0
        }
        Some(Command::Judge(args)) => judge_again(&args),
        Some(Command::SoakResources(args)) => soak::main(args),
        None => harness(cli.run),
    };
    std::process::exit(code);
}

fn judge_again(args: &JudgeArgs) -> i32 {
    let text = match std::fs::read(&args.json) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("relock-chaos judge: {}: {e}", args.json.display());
            return 2;
        }
    };
    let run: serde_json::Value = match serde_json::from_slice(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("relock-chaos judge: {}: {e}", args.json.display());
            return 2;
        }
    };
    let mut failed = false;
    let segments = run["segments"].as_array().cloned().unwrap_or_default();
    for (i, seg) in segments.iter().enumerate() {
        let kind = seg["kind"].as_str().unwrap_or("?");
        let mut windows: Vec<check::Window> =
            serde_json::from_value(seg["windows"].clone()).unwrap_or_default();
        for w in &mut windows {
            if w.damage == (0, 0) {
                w.damage = (w.start, w.heal);
            }
        }
        let dir = args.dir.join(format!("{i:02}-{kind}"));
        let files: Vec<_> = std::fs::read_dir(&dir)
            .map(|d| {
                d.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                    .collect()
            })
            .unwrap_or_default();
        let events = history::merge(
            files
                .iter()
                .map(|f| history::read(f).unwrap_or_default())
                .collect(),
        );
        if events.is_empty() {
            eprintln!("relock-chaos judge: no history in {}", dir.display());
            failed = true;
            continue;
        }
        let kind_of = Kind::from_str(kind, true).ok();
        let params = check::Params {
            lease: Duration::from_millis(args.lease_ms).as_nanos() as i64,
            prompt_wake: 1_000_000_000,
            end: events.last().map_or(0, |e| e.t),
            capacity: kind_of.map_or(1, Kind::capacity),
            fenced: kind_of.is_none_or(Kind::fenced),
            guarded: kind_of.is_some_and(Kind::guarded),
            median_handoff: kind_of.unwrap_or(Kind::Plain).median_handoff().as_nanos() as i64,
            rate: kind_of
                .and_then(Kind::rate)
                .map(|(r, i)| (r, i.as_nanos() as i64)),
        };
        let check::Verdicts {
            holds,
            exclusion: ex,
            fencing: fe,
            liveness: li,
        } = check::all(&events, &windows, None, &params);
        let ok = ex.ok && fe.verdict.ok && li.verdict.ok;
        failed |= !ok;
        println!(
            "{kind:<8} {:>30}  {} holds  exclusion {} ({} overlaps, {} excused)  token order {} ({} regressions)  liveness {} (longest recovery {} ms, {} strict releases, longest free lock with a waiter {} ms, median handoff {} µs)",
            seg["nemeses"].as_array().map(|n| n.iter().filter_map(|x| x.as_str()).collect::<Vec<_>>().join(",")).unwrap_or_default(),
            holds,
            if ex.ok { "ok" } else { "FAIL" },
            ex.violations,
            ex.excused,
            if fe.verdict.ok { "ok" } else { "FAIL" },
            fe.token_regressions,
            if li.verdict.ok { "ok" } else { "FAIL" },
            li.longest_recovery_ms,
            li.strict_releases,
            li.longest_free_with_waiter_ms,
            li.median_handoff_us,
        );
        for e in ex
            .examples
            .iter()
            .chain(&fe.verdict.examples)
            .chain(&li.verdict.examples)
        {
            println!("         {e}");
        }
    }
    i32::from(failed)
}

/// The kinds a mutant run exercises: the semaphore for a semaphore mutant, the job or the rate
/// limiter for theirs, else the fair and the plain lock (`--kind spin` runs a lock mutant on
/// the spin lock).
fn mutant_kinds(name: &str) -> Vec<Kind> {
    #[cfg(feature = "chaos-mutants")]
    if mutant::Mutant::from_name(name).is_some_and(|m| m.breaks_semaphore()) {
        return vec![Kind::Sem];
    }
    #[cfg(feature = "chaos-mutants")]
    if mutant::Mutant::from_name(name).is_some_and(|m| m.breaks_jobs()) {
        return vec![Kind::Job];
    }
    #[cfg(feature = "chaos-mutants")]
    if mutant::Mutant::from_name(name).is_some_and(|m| m.breaks_rate()) {
        return vec![Kind::Rate];
    }
    let _ = name;
    vec![Kind::Fair, Kind::Plain]
}

fn mutant_names() -> Vec<&'static str> {
    #[cfg(feature = "chaos-mutants")]
    return mutant::Mutant::ALL.iter().map(|(n, _)| *n).collect();
    #[cfg(not(feature = "chaos-mutants"))]
    Vec::new()
}

/// The kinds a run without `--kind` exercises: every kind but the spin lock (whose waits are
/// the plain lock's, polled).
const DEFAULT_KINDS: [Kind; 10] = [
    Kind::Plain,
    Kind::Fair,
    Kind::Rw,
    Kind::Sem,
    Kind::Quorum,
    Kind::Cluster,
    Kind::Sentinel,
    Kind::Election,
    Kind::Job,
    Kind::Rate,
];

/// The nemeses of the CI profile for `kind`, in the order they run. Together the kinds run
/// every nemesis at least once; the soak runs every nemesis on every kind it applies to.
fn ci_nemeses(kind: Kind) -> Vec<Nemesis> {
    use Nemesis::*;
    match kind {
        Kind::Plain => vec![
            PauseClient,
            PauseMidSection,
            KillRestart,
            PauseServer,
            ClientKill,
            ScriptFlush,
            ClientPauseWrite,
            ClockJump,
        ],
        Kind::Fair => vec![
            PauseClient,
            PauseMidSection,
            ProxyDelay,
            ProxyFreeze,
            ProxyDrop,
            ProxyOneWay,
        ],
        // Not in the CI profile's kinds (`--kind spin` runs it): the plain lock's waits with
        // polling, so the faults that touch a waiter's attempts and its holder's renewals.
        Kind::Spin => vec![
            PauseClient,
            PauseMidSection,
            KillRestart,
            ClientKill,
            ProxyFreeze,
            ClockJump,
        ],
        Kind::Rw => vec![PauseClient, KillRestart],
        Kind::Sem => vec![PauseClient, ClientKill],
        Kind::Quorum => vec![KillRestart, PauseServer, ProxyOneWay, PauseMidSection],
        Kind::Cluster => vec![Failover, KillRestart],
        Kind::Sentinel => vec![Failover],
        Kind::Election => vec![PauseMidSection, ClientKill, KillRestart],
        Kind::Job => vec![PauseClient, ClientKill],
        // The faults that stall or cut its calls (a client's connections killed included: a
        // waiter retries, a release is given back once), a server restarted empty and its
        // clock stepped (both excused across the step: the server forgets or expires the
        // records), and a client's clock stepped (which must change nothing: the limiter
        // reads the server's clock; no other kind runs this one).
        Kind::Rate => vec![
            PauseClient,
            KillRestart,
            PauseServer,
            ProxyFreeze,
            ClientKill,
            ClockJump,
            ClientClockJump,
        ],
    }
}

fn harness(args: RunArgs) -> i32 {
    if let Some(m) = &args.mutant {
        if !mutant_names().contains(&m.as_str()) {
            eprintln!(
                "relock-chaos: unknown mutant {m:?}; this build has: {:?} (build with --features chaos-mutants)",
                mutant_names()
            );
            return 2;
        }
    }
    let seed = args.seed.unwrap_or_else(|| fastrand::u64(..1 << 48));
    println!("relock-chaos: seed {seed} (replay with --seed {seed})");
    let kinds = if !args.kinds.is_empty() {
        args.kinds.clone()
    } else if let Some(m) = &args.mutant {
        mutant_kinds(m)
    } else {
        DEFAULT_KINDS.to_vec()
    };
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut segments = Vec::new();
    for kind in kinds {
        let chosen: Vec<Nemesis> = match args.profile {
            Profile::Ci if args.nemeses.is_empty() => ci_nemeses(kind),
            _ if args.nemeses.is_empty() => Nemesis::value_variants()
                .iter()
                .copied()
                .filter(|n| n.applies_to(kind))
                .collect(),
            _ => args
                .nemeses
                .iter()
                .copied()
                .filter(|n| n.applies_to(kind))
                .collect(),
        };
        if chosen.is_empty() {
            continue;
        }
        let base = run::Segment {
            kind,
            nemeses: chosen.clone(),
            // A mutant repeats the schedule until caught (or out of budget).
            rounds: if args.mutant.is_some() { 1000 } else { 1 },
            min_sections: 0,
            clients: args.clients,
            names: (0..args.names).map(|i| format!("chaos-{i}")).collect(),
            lease: Duration::from_millis(args.lease_ms),
            work_ms: args.work_ms,
            // A mutant run gets more fault-free time: a lost wake-up shows as a free lock
            // with waiters, which the strict bound judges only away from faults.
            healthy: Duration::from_millis(if args.mutant.is_some() { 3000 } else { 1000 }),
            seed: rng.u64(..1 << 48),
            mutant: args.mutant.clone(),
            stop_on_violation: args.mutant.is_some(),
            max_time: match &args.mutant {
                Some(_) => Some(Duration::from_secs(args.budget)),
                None => args.duration.map(Duration::from_secs),
            },
        };
        if let Some(k) = args.random {
            let nemeses = (0..k).map(|_| chosen[rng.usize(..chosen.len())]).collect();
            segments.push(run::Segment { nemeses, ..base });
        } else if args.profile == Profile::Soak {
            for n in chosen {
                segments.push(run::Segment {
                    nemeses: vec![n],
                    rounds: 1_000_000,
                    min_sections: args.sections,
                    seed: rng.u64(..1 << 48),
                    ..base.clone()
                });
            }
        } else {
            segments.push(base);
        }
    }
    let tmp = std::env::temp_dir().join(format!("relock-chaos-{}-{seed}", std::process::id()));
    let dir = args.dir.clone().unwrap_or_else(|| tmp.clone());
    // SIGINT or SIGTERM ends the schedule early; the servers and clients are still torn down.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second signal exits at once (130), whatever is running.
        let r = signal_hook::flag::register_conditional_shutdown(sig, 130, stop.clone())
            .and_then(|_| signal_hook::flag::register(sig, stop.clone()));
        if let Err(e) = r {
            eprintln!("relock-chaos: cannot handle signal {sig}: {e}");
        }
    }
    let bar = report::progress(segments.len());
    let mut outcomes = Vec::new();
    for (i, seg) in segments.iter().enumerate() {
        bar.set_message(format!(
            "{} under {}",
            seg.kind.name(),
            seg.nemeses
                .iter()
                .map(|n| n.name())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        let seg_dir = dir.join(format!("{i:02}-{}", seg.kind.name()));
        let pos = i as f64;
        let set = |f: f64| bar.set_position(((pos + f) * 100.0) as u64);
        match run::run(seg, &seg_dir, &stop, &set) {
            Ok(o) => {
                bar.suspend(|| report::line(&o));
                // Caught means a checker of the lock fired, not only the leak check.
                let caught = args.mutant.is_some() && o.lock_violated();
                let interrupted = o.interrupted;
                outcomes.push(o);
                if caught {
                    break;
                }
                if interrupted {
                    bar.finish_and_clear();
                    eprintln!(
                        "relock-chaos: interrupted; histories and logs in {}",
                        dir.display()
                    );
                    return 130;
                }
            }
            Err(e) => {
                bar.suspend(|| {
                    eprintln!(
                        "relock-chaos: {} segment failed to run: {e}",
                        seg.kind.name()
                    )
                });
                bar.finish_and_clear();
                eprintln!("relock-chaos: histories and logs kept in {}", dir.display());
                return 2;
            }
        }
    }
    bar.finish_and_clear();
    println!("{}", report::table(&outcomes));
    if let Some(path) = &args.json {
        let json = serde_json::json!({ "seed": seed, "segments": outcomes });
        if let Err(e) = std::fs::write(path, serde_json::to_vec_pretty(&json).unwrap_or_default()) {
            eprintln!("relock-chaos: {}: {e}", path.display());
            return 2;
        }
    }
    let failed = outcomes.iter().any(|o| !o.ok());
    let caught = outcomes.iter().any(|o| o.lock_violated());
    let panicked: Vec<&String> = outcomes.iter().flat_map(|o| &o.leaks.panics).collect();
    let code = match &args.mutant {
        // A mutant that panics broke nothing the checkers could judge (its pattern no longer
        // fits the script it breaks, say): not caught, and not a working mutant either.
        Some(m) if !panicked.is_empty() => {
            println!(
                "relock-chaos: mutant {m} could not run: a client panicked ({})",
                panicked[0]
            );
            2
        }
        Some(m) if caught => {
            println!("relock-chaos: mutant {m} was caught");
            0
        }
        Some(m) => {
            println!("relock-chaos: mutant {m} was NOT caught: the checkers missed a broken lock");
            1
        }
        None if failed => {
            println!(
                "relock-chaos: VIOLATIONS (seed {seed}); histories in {}",
                dir.display()
            );
            1
        }
        None => {
            println!("relock-chaos: all verdicts passed");
            0
        }
    };
    if code == 0 && args.dir.is_none() {
        let _ = std::fs::remove_dir_all(&tmp);
    } else {
        println!("relock-chaos: histories and logs in {}", dir.display());
    }
    code
}

#[cfg(test)]
mod ci_profile {
    use super::*;
    use clap::ValueEnum;

    /// The CI profile's promise: its kinds, together, run every nemesis at least once.
    #[test]
    fn the_ci_profiles_kinds_run_every_nemesis() {
        let run: std::collections::BTreeSet<Nemesis> =
            DEFAULT_KINDS.iter().flat_map(|k| ci_nemeses(*k)).collect();
        let missing: Vec<&Nemesis> = Nemesis::value_variants()
            .iter()
            .filter(|n| !run.contains(n))
            .collect();
        assert!(missing.is_empty(), "no CI kind runs {missing:?}");
    }
}
