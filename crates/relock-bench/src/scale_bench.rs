//! `relock-bench scale`: U against task count. At each count, relock's uncontended
//! lock+unlock pairs per second beside the U floor (a bare fred pool making the same two
//! script calls per pair, no relock), one after the other on one local redis-server, with the
//! client's and the server's CPU per pair.

use std::time::Duration;

use relock_testkit::RedisServer;

use crate::bench::{uncontended, uncontended_floor, Uncontended};
use crate::plot::{PlotFile, ScalePlot};
use crate::report::{outln, JsonTo, Text};
use crate::shared::CliError;

/// Options of `relock-bench scale`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Seconds per measurement (two per task count: relock and the floor).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..))]
    seconds: u64,
    /// The task counts, comma-separated; each task locks and unlocks a key of its own.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64,256", value_parser = task_count)]
    tasks: Vec<usize>,
    /// relock's command connections, and the floor's pool size (default: the library's
    /// default, 4).
    #[arg(long)]
    connections: Option<usize>,
    /// Send every lock operation on its own (`ClientBuilder::coalesce(false)`).
    #[arg(long)]
    no_coalesce: bool,
    /// Also write the results as JSON to FILE (`-`: stdout, the text report then goes to
    /// stderr).
    #[arg(long, value_name = "FILE", value_parser = JsonTo::from_arg)]
    json: Option<JsonTo>,
    /// Also draw pairs/s against task count, relock beside the floor, to FILE (.svg or .png).
    #[arg(long, value_name = "FILE", value_parser = PlotFile::from_arg)]
    plot: Option<PlotFile>,
}

/// One task count's figures, for `--json`.
#[derive(serde::Serialize)]
struct Row {
    tasks: usize,
    relock_pairs_per_s: f64,
    floor_pairs_per_s: f64,
    pairs_per_s_ratio_to_floor: f64,
    relock_client_cpu_us_per_pair: Option<f64>,
    floor_client_cpu_us_per_pair: Option<f64>,
    relock_server_cpu_us_per_pair: Option<f64>,
    floor_server_cpu_us_per_pair: Option<f64>,
}

/// What `--json` writes.
#[derive(serde::Serialize)]
struct Report {
    seconds_per_measurement: u64,
    connections: Option<usize>,
    coalesce: bool,
    rows: Vec<Row>,
}

pub(crate) async fn run(args: Args) -> Result<(), CliError> {
    if let Some(plot) = &args.plot {
        plot.prepare()?;
    }
    let text = Text::new(args.json.as_ref());
    let secs = Duration::from_secs(args.seconds);
    let server = RedisServer::start()?;
    let url = server.url();
    outln!(
        text,
        "relock-bench scale: U against task count, relock{} beside the U floor (bare fred with relock's timeouts, the same two script calls per pair), {} s each",
        if args.no_coalesce { " without coalescing" } else { "" },
        args.seconds
    );
    outln!(
        text,
        "{:>6}  {:>14}  {:>14}  {:>7}  {:>21}",
        "tasks",
        "relock pairs/s",
        "floor pairs/s",
        "ratio",
        "client CPU µs/pair"
    );
    let mut rows = Vec::new();
    for &n in &args.tasks {
        let relock = uncontended(
            &url,
            n,
            args.connections,
            !args.no_coalesce,
            secs,
            &format!("U, {n} tasks"),
        )
        .await?;
        let floor = uncontended_floor(&url, n, args.connections, secs).await?;
        let ratio = relock.pairs / floor.pairs.max(1e-9);
        outln!(
            text,
            "{n:>6}  {:>14.0}  {:>14.0}  {ratio:>6.2}×  {:>21}",
            relock.pairs,
            floor.pairs,
            cpu_pair(&relock, &floor)
        );
        rows.push(Row {
            tasks: n,
            relock_pairs_per_s: relock.pairs,
            floor_pairs_per_s: floor.pairs,
            pairs_per_s_ratio_to_floor: ratio,
            relock_client_cpu_us_per_pair: relock.client_cpu_us,
            floor_client_cpu_us_per_pair: floor.client_cpu_us,
            relock_server_cpu_us_per_pair: relock.server_cpu_us,
            floor_server_cpu_us_per_pair: floor.server_cpu_us,
        });
    }
    let points: Vec<(usize, f64, f64)> = rows
        .iter()
        .map(|r| (r.tasks, r.relock_pairs_per_s, r.floor_pairs_per_s))
        .collect();
    if let Some(json) = &args.json {
        json.write(&Report {
            seconds_per_measurement: args.seconds,
            connections: args.connections,
            coalesce: !args.no_coalesce,
            rows,
        })?;
    }
    // The plot last: a plot that cannot be written must not cost the JSON.
    if let Some(file) = &args.plot {
        ScalePlot { points }.write(file)?;
    }
    Ok(())
}

/// A task count of `--tasks`: a whole number of at least 1.
fn task_count(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "{s:?} is not a task count: give whole numbers of at least 1, comma-separated (e.g. --tasks 1,16,256)"
        )),
    }
}

/// `41.2 / 35.0` (relock / floor), or `—` when CPU was not measured.
fn cpu_pair(relock: &Uncontended, floor: &Uncontended) -> String {
    match (relock.client_cpu_us, floor.client_cpu_us) {
        (Some(r), Some(f)) => format!("{r:.1} / {f:.1}"),
        _ => "—".into(),
    }
}
