//! `relock-bench lock`: the figures of `docs/performance.md`, each beside a ceiling measured by
//! `redis-benchmark` on the same server in the same run.

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fred::interfaces::{ClientLike, LuaInterface};

use crate::plot::{BenchPlot, PlotFile};
use crate::progress::Phase;
use crate::report::{out, outln, JsonTo, Text};
use crate::shared::{CliError, Target};
use crate::stats::{as_ms, ms, Latencies};

/// Options of `relock-bench lock`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Redis to use; by default a local redis-server is started.
    #[arg(long)]
    redis: Option<String>,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    seconds: u64,
    /// Tasks for the uncontended case (each on its own key).
    #[arg(long, default_value_t = 64)]
    tasks: usize,
    /// Command connections per client.
    #[arg(long, default_value_t = 4)]
    connections: usize,
    /// Workers (in 2 clients) for the contended case.
    #[arg(long, default_value_t = 16)]
    workers: usize,
    /// How long a holder keeps the lock in the contended case, in ms.
    #[arg(long, default_value_t = 5)]
    hold_ms: u64,
    /// Skip the redis-benchmark ceilings.
    #[arg(long)]
    no_baseline: bool,
    /// Run the redis-benchmark ceilings even when the URL has credentials, by passing them on
    /// redis-benchmark's command line (`--user`, `-a`): while it runs, every user of this
    /// machine can read them (`ps`). relock's own output never shows them.
    #[arg(long)]
    baseline_password_in_argv: bool,
    /// Send every lock operation on its own (`ClientBuilder::coalesce(false)`).
    #[arg(long)]
    no_coalesce: bool,
    /// Also write the results as JSON to FILE (`-`: stdout, the text report then goes to
    /// stderr).
    #[arg(long, value_name = "FILE", value_parser = JsonTo::from_arg)]
    json: Option<JsonTo>,
    /// Also draw the handoff latency histograms and pairs/s per lock kind to FILE (.svg or .png).
    #[arg(long, value_name = "FILE", value_parser = PlotFile::from_arg)]
    plot: Option<PlotFile>,
}

/// What `--json` writes: every figure, its unit in its name.
#[derive(serde::Serialize)]
struct Report {
    /// The server, its password hidden.
    redis: String,
    seconds_per_case: u64,
    uncontended: UncontendedReport,
    contended: ContendedReport,
    /// The redis-benchmark ceilings, when measured.
    baselines: Option<Ceilings>,
    /// Why the ceilings were not measured, when they were not.
    baselines_skipped: Option<&'static str>,
}

#[derive(serde::Serialize)]
struct UncontendedReport {
    tasks: usize,
    connections: usize,
    coalesce: bool,
    pairs_per_s: f64,
    /// pairs/s ÷ the redis-benchmark ceiling (half its acquire scripts/s).
    ratio_to_ceiling: Option<f64>,
    /// The same against the pipelined (`-P 16`) ceiling.
    ratio_to_pipelined_ceiling: Option<f64>,
    /// This process's CPU time per pair (getrusage), in µs.
    client_cpu_us_per_pair: Option<f64>,
    /// The redis-server's CPU time per pair (`INFO cpu`), in µs.
    server_cpu_us_per_pair: Option<f64>,
}

#[derive(serde::Serialize)]
struct ContendedReport {
    workers: usize,
    clients: usize,
    hold_ms: u64,
    plain: Case,
    fair: Case,
}

/// One contended (H-wait) case.
#[derive(serde::Serialize)]
struct Case {
    handoffs: u64,
    handoffs_per_s: f64,
    acquisitions: u64,
    pairs_per_s: f64,
    handoff_p50_ms: f64,
    handoff_p90_ms: f64,
    handoff_p99_ms: f64,
    handoff_max_ms: f64,
    acquisitions_timed_out: u64,
    /// Script calls on the server per acquisition (`INFO commandstats`), when it could be read.
    server_script_calls_per_handoff: Option<f64>,
    /// Handoff p50 ÷ redis-benchmark's PING p50, when measured.
    p50_ratio_to_ping_p50: Option<f64>,
    /// Handoff p50 ÷ the plain lock's (the fair case only).
    p50_ratio_to_plain_p50: Option<f64>,
}

pub(crate) async fn run(args: Args) -> Result<(), CliError> {
    if let Some(plot) = &args.plot {
        plot.prepare()?;
    }
    let text = Text::new(args.json.as_ref());
    let target = Target::new(args.redis.clone())?;
    let secs = Duration::from_secs(args.seconds);
    outln!(
        text,
        "relock bench on {} ({} s per case)\n",
        relock::redacted_url(&target.url),
        args.seconds
    );

    // redis-benchmark takes a password only on its command line (`-a`), where every user of
    // the machine can read it: with credentials in the URL the baselines are skipped unless
    // that is asked for.
    // Only asked when baselines are wanted: a multi-host URL (Cluster, Sentinel) is no URL to
    // the `url` crate, and --no-baseline must still measure it.
    let has_credentials = !args.no_baseline && has_credentials(&target.url)?;
    let skipped = if args.no_baseline {
        Some("--no-baseline")
    } else if has_credentials && !args.baseline_password_in_argv {
        outln!(text, "(redis-benchmark baselines skipped: the URL has credentials, which redis-benchmark would take on its command line; --baseline-password-in-argv runs them anyway)\n");
        Some("the URL has credentials (see --baseline-password-in-argv)")
    } else {
        None
    };
    let ceilings = match skipped {
        Some(_) => None,
        None => {
            let mut endpoint = Endpoint::parse(&target.url)?;
            if has_credentials {
                outln!(text, "(redis-benchmark baselines take the URL's credentials on their command line: --baseline-password-in-argv)\n");
                endpoint = endpoint.with_credentials_in_argv();
            }
            Some(baselines(&target, &endpoint, args.tasks, args.seconds).await?)
        }
    };

    let u = uncontended(
        &target.url,
        args.tasks,
        Some(args.connections),
        !args.no_coalesce,
        secs,
        "uncontended",
    )
    .await?;
    let pairs = u.pairs;
    outln!(
        text,
        "uncontended: {} tasks, own keys, {} connections",
        args.tasks,
        args.connections
    );
    outln!(
        text,
        "  relock lock+unlock            {:>9.0} pairs/s  {}",
        pairs,
        u.cpu_text()
    );
    if let Some(c) = &ceilings {
        outln!(
            text,
            "  redis-benchmark acquire -c {} {:>9.0} scripts/s -> {:.0} pairs/s ceiling; relock = {:.2} x",
            args.tasks,
            c.acquire_scripts_per_s,
            c.ceiling_pairs_per_s,
            pairs / c.ceiling_pairs_per_s
        );
        outln!(
            text,
            "  same, pipelined -P 16         {:>9.0} scripts/s -> {:.0} pairs/s; relock = {:.2} x",
            c.pipelined_acquire_scripts_per_s,
            c.pipelined_ceiling_pairs_per_s,
            pairs / c.pipelined_ceiling_pairs_per_s
        );
    }

    outln!(
        text,
        "\ncontended (H-wait): {} workers in 2 clients, one key, hold {} ms, re-ask only after another worker holds it",
        args.workers,
        args.hold_ms
    );
    let mut cases: Vec<(Case, Contended)> = Vec::new();
    for fair in [false, true] {
        let calls_before = evalsha_calls(&target.url).await;
        let subject = if fair { Subject::Fair } else { Subject::Plain };
        let h = contended(
            &target.url,
            args.workers,
            Duration::from_millis(args.hold_ms),
            secs,
            subject,
        )
        .await?;
        let calls_after = evalsha_calls(&target.url).await;
        let lat = &h.latencies;
        let (p50, p99) = (lat.percentile(50.0), lat.percentile(99.0));
        let plain_p50 = cases.first().map(|c| c.0.handoff_p50_ms);
        outln!(text, "  {} lock", if fair { "fair" } else { "plain" });
        outln!(
            text,
            "    handoffs                    {:>9.0} /s ({} in {} s)",
            lat.len() as f64 / secs.as_secs_f64(),
            lat.len(),
            args.seconds
        );
        out!(
            text,
            "    handoff latency             p50 {}  p99 {}",
            ms(p50),
            ms(p99)
        );
        let p50_ratio_to_plain_p50 = plain_p50.map(|plain| as_ms(p50) / plain.max(1e-6));
        match p50_ratio_to_plain_p50 {
            None => outln!(text),
            Some(r) => outln!(text, "  (p50 = {r:.2} x the plain lock's)"),
        }
        outln!(text, "    lock acquisitions timed out {}", h.lost_wakeups);
        // Every acquire attempt, release (one per acquisition) and fair heartbeat is one script
        // call.
        let per = match (calls_before, calls_after) {
            (Some(b), Some(a)) => Some((a - b) as f64 / h.acquisitions.max(1) as f64),
            _ => None,
        };
        if let Some(per) = per {
            outln!(
                text,
                "    server script calls/handoff {per:.2}: {:.2} acquire attempts (+ heartbeats) and 1 release",
                per - 1.0
            );
        }
        let p50_ratio_to_ping_p50 = ceilings
            .as_ref()
            .map(|c| as_ms(p50) / c.ping_p50_ms.max(1e-6));
        if let (Some(c), Some(r)) = (&ceilings, p50_ratio_to_ping_p50) {
            outln!(
                text,
                "    redis-benchmark PING -c 1   p50 {:.3} ms; handoff p50 = {r:.1} x PING p50",
                c.ping_p50_ms
            );
        }
        let case = Case {
            handoffs: lat.len(),
            handoffs_per_s: lat.len() as f64 / secs.as_secs_f64(),
            acquisitions: h.acquisitions,
            pairs_per_s: h.acquisitions as f64 / secs.as_secs_f64(),
            handoff_p50_ms: as_ms(p50),
            handoff_p90_ms: as_ms(lat.percentile(90.0)),
            handoff_p99_ms: as_ms(p99),
            handoff_max_ms: as_ms(lat.max()),
            acquisitions_timed_out: h.lost_wakeups,
            server_script_calls_per_handoff: per,
            p50_ratio_to_ping_p50,
            p50_ratio_to_plain_p50,
        };
        cases.push((case, h));
    }
    let (fair, fair_h) = cases.pop().expect("two cases");
    let (plain, plain_h) = cases.pop().expect("two cases");
    let (plain_rate, fair_rate) = (plain.pairs_per_s, fair.pairs_per_s);
    let ceiling = ceilings
        .as_ref()
        .map(|c| (c.concurrency, c.ceiling_pairs_per_s));

    if let Some(json) = &args.json {
        json.write(&Report {
            redis: relock::redacted_url(&target.url),
            seconds_per_case: args.seconds,
            uncontended: UncontendedReport {
                tasks: args.tasks,
                connections: args.connections,
                coalesce: !args.no_coalesce,
                pairs_per_s: pairs,
                ratio_to_ceiling: ceilings.as_ref().map(|c| pairs / c.ceiling_pairs_per_s),
                ratio_to_pipelined_ceiling: ceilings
                    .as_ref()
                    .map(|c| pairs / c.pipelined_ceiling_pairs_per_s),
                client_cpu_us_per_pair: u.client_cpu_us,
                server_cpu_us_per_pair: u.server_cpu_us,
            },
            contended: ContendedReport {
                workers: args.workers,
                clients: 2,
                hold_ms: args.hold_ms,
                plain,
                fair,
            },
            baselines: ceilings,
            baselines_skipped: skipped,
        })?;
    }
    // The plot last: a plot that cannot be written must not cost the JSON.
    if let Some(file) = &args.plot {
        let mut rates = vec![
            ("plain, uncontended".to_string(), pairs),
            ("plain, contended".to_string(), plain_rate),
            ("fair, contended".to_string(), fair_rate),
        ];
        if let Some((concurrency, rate)) = ceiling {
            rates.push((format!("redis-benchmark ceiling -c {concurrency}"), rate));
        }
        BenchPlot {
            handoffs: vec![("plain", &plain_h.latencies), ("fair", &fair_h.latencies)],
            rates,
        }
        .write(file)?;
    }
    Ok(())
}

/// What redis-benchmark measured on the same server.
#[derive(serde::Serialize)]
struct Ceilings {
    /// Its connections (`-c`), as many as relock's uncontended tasks.
    concurrency: usize,
    acquire_scripts_per_s: f64,
    /// Half the scripts/s: a pair is an acquire and a release.
    ceiling_pairs_per_s: f64,
    pipelined_acquire_scripts_per_s: f64,
    pipelined_ceiling_pairs_per_s: f64,
    ping_p50_ms: f64,
}

/// redis-benchmark on the same server: the acquire script on random keys, and PING latency.
/// Its request counts follow `seconds` (100k, 400k and 20k at the default 3 s), so that a
/// short run is short throughout.
async fn baselines(
    target: &Target,
    endpoint: &Endpoint,
    concurrency: usize,
    seconds: u64,
) -> Result<Ceilings, CliError> {
    let url = &target.url;
    let client = fred_client(url).await?;
    let sha: String = client
        .script_load(relock::lua::ACQUIRE)
        .await
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let _ = client.quit().await;
    let c = concurrency.to_string();
    let n = |at_3_s: u64| (at_3_s * seconds.max(1) / 3).to_string();
    let (n_acquire, n_pipelined, n_ping) = (n(100_000), n(400_000), n(20_000));
    // Short leases so the keys the benchmark creates expire by themselves.
    let script = [
        "EVALSHA",
        &sha,
        "2",
        "rb:{__rand_int__}",
        "rb:tok:{__rand_int__}",
        "2000",
        "owner:1",
        "1000",
    ];
    let acquire = redis_benchmark(
        endpoint,
        &["-c", &c, "-n", &n_acquire, "-r", "10000000"],
        &script,
    )?
    .0;
    let pipelined = redis_benchmark(
        endpoint,
        &["-c", &c, "-P", "16", "-n", &n_pipelined, "-r", "10000000"],
        &script,
    )?
    .0;
    let ping_p50 = redis_benchmark(endpoint, &["-c", "1", "-n", &n_ping], &["PING"])?.1;
    if target.server.is_some() {
        flush(url).await?;
    }
    Ok(Ceilings {
        concurrency,
        acquire_scripts_per_s: acquire,
        ceiling_pairs_per_s: acquire / 2.0,
        pipelined_acquire_scripts_per_s: pipelined,
        pipelined_ceiling_pairs_per_s: pipelined / 2.0,
        ping_p50_ms: as_ms(ping_p50),
    })
}

/// Runs redis-benchmark in CSV mode; returns (requests/s, p50 latency).
pub(crate) fn redis_benchmark(
    endpoint: &Endpoint,
    opts: &[&str],
    command: &[&str],
) -> Result<(f64, Duration), CliError> {
    let mut cmd = Command::new("redis-benchmark");
    cmd.args([
        "-h",
        &endpoint.host,
        "-p",
        &endpoint.port.to_string(),
        "--csv",
    ]);
    if endpoint.credentials_in_argv {
        if let Some(user) = &endpoint.user {
            cmd.args(["--user", user]);
        }
        if let Some(password) = &endpoint.password {
            cmd.args(["-a", password]);
        }
    }
    let out = cmd.args(opts).args(command).output().map_err(|e| {
        CliError::Failed(format!(
            "running redis-benchmark (install redis-tools): {e}"
        ))
    })?;
    // Its messages could quote what it was given: never pass the password on.
    let hide = |t: &[u8]| endpoint.hide_password(&String::from_utf8_lossy(t));
    // Parsed as printed (a short password could match digits of the figures), hidden only in
    // what is shown.
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text
        .lines()
        .rfind(|l| !l.starts_with("\"test\""))
        .ok_or_else(|| {
            CliError::Failed(format!(
                "redis-benchmark printed nothing: {}",
                hide(&out.stderr)
            ))
        })?;
    let cols: Vec<f64> = row
        .split(',')
        .skip(1)
        .filter_map(|c| c.trim_matches('"').parse().ok())
        .collect();
    match cols.as_slice() {
        [rps, _avg, _min, p50, ..] => Ok((*rps, Duration::from_secs_f64(p50 / 1000.0))),
        _ => Err(CliError::Failed(format!(
            "unexpected redis-benchmark output: {}",
            endpoint.hide_password(row)
        ))),
    }
}

/// `url` parsed, or an error naming it with its password hidden.
fn parse_url(url: &str) -> Result<url::Url, CliError> {
    url::Url::parse(url).map_err(|e| {
        CliError::Failed(format!(
            "{}: not a valid URL: {e}",
            relock::redacted_url(url)
        ))
    })
}

/// Whether `url` holds credentials: a user name, a password, or a `...password=` parameter.
pub(crate) fn has_credentials(url: &str) -> Result<bool, CliError> {
    let u = parse_url(url)?;
    Ok(!u.username().is_empty()
        || u.password().is_some()
        || u.query_pairs()
            .any(|(k, _)| k.to_ascii_lowercase().contains("password")))
}

/// Where redis-benchmark connects, from a Redis URL.
pub(crate) struct Endpoint {
    host: String,
    port: u16,
    user: Option<String>,
    password: Option<String>,
    /// Whether `user` and `password` go on redis-benchmark's command line (where every local
    /// user can read them): only when asked for.
    credentials_in_argv: bool,
}

impl Endpoint {
    /// The host and port of `url` (6379 when it names none) and its credentials, decoded.
    pub(crate) fn parse(url: &str) -> Result<Endpoint, CliError> {
        let u = parse_url(url)?;
        let fail = |what: &str| CliError::Failed(format!("{}: {what}", relock::redacted_url(url)));
        let host = match u.host() {
            Some(url::Host::Domain(d)) => d.to_string(),
            Some(url::Host::Ipv4(a)) => a.to_string(),
            // redis-benchmark takes the address without the URL's brackets.
            Some(url::Host::Ipv6(a)) => a.to_string(),
            None => return Err(fail("no host for redis-benchmark to connect to")),
        };
        let decode = |s: &str, what: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .map(|s| s.into_owned())
                .map_err(|_| fail(&format!("the {what} is not UTF-8 once decoded")))
        };
        let user = match u.username() {
            "" => None,
            name => Some(decode(name, "user name")?),
        };
        let password = match u.password() {
            None | Some("") => None,
            Some(p) => Some(decode(p, "password")?),
        };
        Ok(Endpoint {
            host,
            port: u.port().unwrap_or(6379),
            user,
            password,
            credentials_in_argv: false,
        })
    }

    /// Lets redis-benchmark take the credentials, on its command line.
    pub(crate) fn with_credentials_in_argv(self) -> Endpoint {
        Endpoint {
            credentials_in_argv: true,
            ..self
        }
    }

    fn hide_password(&self, text: &str) -> String {
        match &self.password {
            Some(p) => text.replace(p.as_str(), "***"),
            None => text.to_string(),
        }
    }
}

pub(crate) async fn fred_client(url: &str) -> Result<fred::clients::Client, CliError> {
    let config =
        fred::types::config::Config::from_url(url).map_err(|e| CliError::Failed(e.to_string()))?;
    let client = fred::clients::Client::new(config, None, None, None);
    client
        .init()
        .await
        .map_err(|e| CliError::Failed(format!("{}: {e}", relock::redacted_url(url))))?;
    Ok(client)
}

/// A fred client for `url` with the settings relock gives its own connections
/// (`ClientBuilder::fred_builder`) and `command_timeout`, connected: a floor's client.
pub(crate) async fn relock_settings_client(
    url: &str,
    command_timeout: Duration,
) -> Result<fred::clients::Client, CliError> {
    let client = relock::Client::builder()
        .url(url)
        .command_timeout(command_timeout)
        .fred_builder()
        .map_err(|e| CliError::Failed(e.to_string()))?
        .build()
        .map_err(|e| CliError::Failed(e.to_string()))?;
    client
        .init()
        .await
        .map_err(|e| CliError::Failed(format!("{}: {e}", relock::redacted_url(url))))?;
    Ok(client)
}

/// FLUSHALL on a server this run started (what a benchmark left).
pub(crate) async fn flush(url: &str) -> Result<(), CliError> {
    let client = fred_client(url).await?;
    let _: () = client
        .flushall(false)
        .await
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let _ = client.quit().await;
    Ok(())
}

async fn evalsha_calls(url: &str) -> Option<u64> {
    let client = fred_client(url).await.ok()?;
    let info: String = client
        .info(Some(fred::types::InfoKind::CommandStats))
        .await
        .ok()?;
    let _ = client.quit().await;
    let calls = |cmd: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("cmdstat_{cmd}:calls=")))
            .and_then(|r| r.split(',').next())
            .and_then(|n| n.parse::<u64>().ok())
    };
    Some(calls("evalsha")? + calls("eval").unwrap_or(0))
}

/// Uncontended lock+unlock pairs per second: `tasks` tasks, each on its own key, for `secs`,
/// shown as the progress phase `label`.
pub(crate) async fn uncontended(
    url: &str,
    tasks: usize,
    connections: Option<usize>,
    coalesce: bool,
    secs: Duration,
    label: &str,
) -> Result<Uncontended, CliError> {
    let mut builder = relock::Client::builder().url(url).coalesce(coalesce);
    if let Some(n) = connections {
        builder = builder.connections(n);
    }
    let client = builder.build().await?;
    relock_cli::shared::signals::register(&client);
    // Warm up the connections and the script cache.
    client.lock("bench:u:warm").lock().await?.unlock().await?;
    let c = client.clone();
    let (client_cpu, server_cpu) = (crate::watchdog_bench::cpu_time(), server_cpu(url).await);
    let start = Instant::now();
    let pairs = pairs_per_s(tasks, secs, label, move |i| {
        let lock = c.lock(format!("bench:u:{i}"));
        move || {
            let lock = lock.clone();
            async move { lock.lock().await?.unlock().await }
        }
    })
    .await?;
    let n = pairs * start.elapsed().as_secs_f64();
    let per_pair = |before: Option<Duration>, after: Option<Duration>| match (before, after) {
        (Some(b), Some(a)) if n > 0.0 => Some(a.saturating_sub(b).as_secs_f64() * 1e6 / n),
        _ => None,
    };
    let client_cpu_us = per_pair(client_cpu, crate::watchdog_bench::cpu_time());
    let server_cpu_us = per_pair(server_cpu, server_cpu_after(url).await);
    client.shutdown().await;
    Ok(Uncontended {
        pairs,
        client_cpu_us,
        server_cpu_us,
    })
}

/// U's floor: the same two script calls relock makes for an uncontended pair (`acquire.lua`,
/// then `release.lua`, with the same keys and arguments, `EVALSHA` each) from a bare fred pool
/// of as many connections as relock's (`connections`, else relock's default of 4) and with the
/// fred settings relock gives its own (`ClientBuilder::fred_builder`: a timeout on every
/// command, one attempt, the unresponsive check, the reconnect policy), `tasks`
/// tasks on keys of their own for `secs`. What is left above it in relock's client CPU per
/// pair is relock's own work.
pub(crate) async fn uncontended_floor(
    url: &str,
    tasks: usize,
    connections: Option<usize>,
    secs: Duration,
) -> Result<Uncontended, CliError> {
    let pool = relock::Client::builder()
        .url(url)
        .fred_builder()
        .map_err(|e| CliError::Failed(e.to_string()))?
        .build_pool(connections.unwrap_or(4))
        .map_err(|e| CliError::Failed(e.to_string()))?;
    pool.init()
        .await
        .map_err(|e| CliError::Failed(format!("{}: {e}", relock::redacted_url(url))))?;
    let failed = |e: fred::error::Error| CliError::Failed(format!("the U floor: {e}"));
    let acquire: String = pool
        .next()
        .script_load(relock::lua::ACQUIRE)
        .await
        .map_err(failed)?;
    let release: String = pool
        .next()
        .script_load(relock::lua::RELEASE)
        .await
        .map_err(failed)?;
    let (client_cpu, server_cpu) = (crate::watchdog_bench::cpu_time(), server_cpu(url).await);
    let start = Instant::now();
    let p = pool.clone();
    let pairs = pairs_per_s(tasks, secs, "U floor (bare fred)", move |i| {
        let (pool, acquire, release) = (p.clone(), acquire.clone(), release.clone());
        let lock = format!("bench:uf:{i}");
        let token = format!("redisson_lock_token:{{{lock}}}");
        let channel = format!("redisson_lock__channel:{{{lock}}}");
        let mut n = 0u64;
        move || {
            n += 1;
            // A field of relock's shape (`<client id>:<n>`), new for every pair.
            let field = format!("0123456789abcdef0123456789abcdef:{i}-{n}");
            let (pool, acquire, release) = (pool.clone(), acquire.clone(), release.clone());
            let (lock, token, channel) = (lock.clone(), token.clone(), channel.clone());
            async move {
                let unexpected = |source| relock::Error::Redis {
                    operation: "the U floor",
                    server: String::new(),
                    source,
                };
                let _: Vec<i64> = pool
                    .next()
                    .evalsha(
                        &acquire,
                        vec![lock.as_str(), token.as_str()],
                        vec!["30000", field.as_str(), "1000"],
                    )
                    .await
                    .map_err(unexpected)?;
                let _: Option<i64> = pool
                    .next()
                    .evalsha(
                        &release,
                        vec![lock.as_str()],
                        vec![field.as_str(), "all", "publish", channel.as_str()],
                    )
                    .await
                    .map_err(unexpected)?;
                Ok(())
            }
        }
    })
    .await?;
    let n = pairs * start.elapsed().as_secs_f64();
    let per_pair = |before: Option<Duration>, after: Option<Duration>| match (before, after) {
        (Some(b), Some(a)) if n > 0.0 => Some(a.saturating_sub(b).as_secs_f64() * 1e6 / n),
        _ => None,
    };
    let client_cpu_us = per_pair(client_cpu, crate::watchdog_bench::cpu_time());
    let server_cpu_us = per_pair(server_cpu, server_cpu_after(url).await);
    let _ = pool.quit().await;
    Ok(Uncontended {
        pairs,
        client_cpu_us,
        server_cpu_us,
    })
}

/// What U measured: pairs/s, and the CPU time each pair cost this process (every thread of
/// it: the benchmark's tasks are a small share) and the redis-server (`INFO cpu`). CPU per
/// pair moves far less between runs than pairs/s on a shared 2-core machine.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Uncontended {
    pub(crate) pairs: f64,
    pub(crate) client_cpu_us: Option<f64>,
    pub(crate) server_cpu_us: Option<f64>,
}

impl Uncontended {
    /// `client 12.3 µs, server 10.1 µs CPU per pair`, or "" when not measured.
    pub(crate) fn cpu_text(&self) -> String {
        match (self.client_cpu_us, self.server_cpu_us) {
            (Some(c), Some(s)) => format!("client {c:.1} µs, server {s:.1} µs CPU per pair"),
            _ => String::new(),
        }
    }
}

/// The server's CPU time so far (`used_cpu_user` + `used_cpu_sys` of `INFO cpu`).
pub(crate) async fn server_cpu(url: &str) -> Option<Duration> {
    let client = fred_client(url).await.ok()?;
    let info: String = client.info(Some(fred::types::InfoKind::Cpu)).await.ok()?;
    let _ = client.quit().await;
    let field = |name: &str| -> Option<f64> {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))?
            .trim()
            .parse()
            .ok()
    };
    Some(Duration::from_secs_f64(
        field("used_cpu_user")? + field("used_cpu_sys")?,
    ))
}

/// [`server_cpu`], read after the run.
async fn server_cpu_after(url: &str) -> Option<Duration> {
    server_cpu(url).await
}

/// Pairs per second of `tasks` tasks: task `i` runs the pair that `make(i)` returns (made
/// once per task) again and again until `secs` have passed, shown as the progress phase
/// `label`.
pub(crate) async fn pairs_per_s<F, P, Fut>(
    tasks: usize,
    secs: Duration,
    label: &str,
    make: F,
) -> Result<f64, CliError>
where
    F: Fn(usize) -> P,
    P: FnMut() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = relock::Result<()>> + Send,
{
    let phase = Phase::start(label, secs, "pairs");
    let done = phase.counter();
    let start = Instant::now();
    let deadline = start + secs;
    let mut handles = Vec::new();
    for i in 0..tasks {
        let (mut pair, done) = (make(i), done.clone());
        handles.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                pair().await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<(), relock::Error>(())
        }));
    }
    for h in handles {
        h.await.map_err(|e| CliError::Failed(e.to_string()))??;
    }
    let pairs = done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64();
    phase.finish().await;
    Ok(pairs)
}

pub(crate) struct Contended {
    pub(crate) latencies: Latencies,
    pub(crate) acquisitions: u64,
    pub(crate) lost_wakeups: u64,
}

/// What the H-wait workers hand to each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subject {
    /// A plain lock.
    Plain,
    /// A fair lock.
    Fair,
    /// A spin lock (waiters poll with back-off; no pub/sub).
    Spin,
    /// The write side of a read-write lock.
    Write,
    /// The one permit of a semaphore.
    Permit,
    /// An election's leadership: a handoff is a resignation and a standby's campaign.
    Election,
}

impl Subject {
    fn label(self) -> &'static str {
        match self {
            Subject::Plain => "contended plain",
            Subject::Fair => "contended fair",
            Subject::Spin => "contended spin",
            Subject::Write => "contended write",
            Subject::Permit => "contended permit",
            Subject::Election => "contended election",
        }
    }

    fn handle(self, client: &relock::Client) -> Handle {
        match self {
            Subject::Plain => Handle::Lock(client.lock("bench:h")),
            Subject::Fair => Handle::Lock(client.fair_lock("bench:f")),
            Subject::Spin => Handle::Lock(client.spin_lock("bench:s")),
            Subject::Write => Handle::Write(client.read_write_lock("bench:w").write_lock()),
            Subject::Permit => Handle::Permit(client.semaphore("bench:p")),
            Subject::Election => Handle::Election(client.election("bench:e")),
        }
    }
}

/// One worker's handle on the subject.
enum Handle {
    Lock(relock::Lock),
    Write(relock::WriteLock),
    Permit(relock::Semaphore),
    Election(relock::Election),
}

/// What a worker holds.
enum Held {
    Guard(relock::LockGuard),
    Permit(relock::SemaphorePermits),
    Leader(relock::Leadership),
}

impl Handle {
    async fn take_for(&self, wait: Duration) -> relock::Result<Option<Held>> {
        Ok(match self {
            Handle::Lock(l) => l.try_lock_for(wait).await?.map(Held::Guard),
            Handle::Write(w) => w.try_lock_for(wait).await?.map(Held::Guard),
            Handle::Permit(s) => s.try_acquire_for(1, wait).await?.map(Held::Permit),
            Handle::Election(e) => e.campaign_for(wait, "bench").await?.map(Held::Leader),
        })
    }
}

impl Held {
    async fn release(self) -> relock::Result<()> {
        match self {
            Held::Guard(g) => g.unlock().await,
            Held::Permit(p) => p.release().await,
            Held::Leader(l) => l.resign().await,
        }
    }
}

/// H-wait from `docs/performance.md`: after its release a worker asks again only once another
/// worker holds the subject, so every handoff goes to a waiter that was parked.
pub(crate) async fn contended(
    url: &str,
    workers: usize,
    hold: Duration,
    secs: Duration,
    subject: Subject,
) -> Result<Contended, CliError> {
    let clients = [
        relock::Client::connect(url).await?,
        relock::Client::connect(url).await?,
    ];
    for c in &clients {
        relock_cli::shared::signals::register(c);
    }
    let (holder_tx, _) = tokio::sync::watch::channel(usize::MAX);
    let holder_tx = Arc::new(holder_tx);
    let last_release: Arc<Mutex<Option<(Instant, usize)>>> = Arc::default();
    let latencies: Arc<Mutex<Latencies>> = Arc::default();
    if subject == Subject::Permit {
        // One permit: a semaphore used as a lock, so that every acquisition is a handoff.
        let sem = clients[0].semaphore("bench:p");
        sem.drain().await?;
        sem.release(1).await?;
    }
    let phase = Phase::start(subject.label(), secs, "pairs");
    let acquisitions = phase.counter();
    let timeouts = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + secs;
    let mut handles = Vec::new();
    for id in 0..workers {
        let lock = subject.handle(&clients[id % 2]);
        let (holder_tx, last_release, latencies) =
            (holder_tx.clone(), last_release.clone(), latencies.clone());
        let (acquisitions, timeouts) = (acquisitions.clone(), timeouts.clone());
        handles.push(tokio::spawn(async move {
            let mut holder_rx = holder_tx.subscribe();
            while Instant::now() < deadline {
                // A parked waiter is woken within the holder's TTL at worst (30 s); far less
                // than that counts as a lost wake-up.
                let Some(held) = lock.take_for(Duration::from_secs(2)).await? else {
                    timeouts.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                let got = Instant::now();
                acquisitions.fetch_add(1, Ordering::Relaxed);
                holder_tx.send_replace(id);
                if let Some((at, by)) = *last_release.lock().unwrap() {
                    if by != id {
                        latencies.lock().unwrap().record(got - at);
                    }
                }
                tokio::time::sleep(hold).await;
                *last_release.lock().unwrap() = Some((Instant::now(), id));
                held.release().await?;
                // Re-ask only once someone else holds it (or the run is over).
                let _ = tokio::time::timeout_at(
                    deadline.into(),
                    holder_rx.wait_for(|h| *h != id && *h != usize::MAX),
                )
                .await;
            }
            Ok::<(), relock::Error>(())
        }));
    }
    for h in handles {
        h.await.map_err(|e| CliError::Failed(e.to_string()))??;
    }
    phase.finish().await;
    if subject == Subject::Permit {
        let _: i64 = fred::interfaces::KeysInterface::del(clients[0].pool(), "bench:p")
            .await
            .map_err(|e| CliError::Failed(e.to_string()))?;
    }
    for c in &clients {
        c.shutdown().await;
    }
    let latencies = std::mem::take(&mut *latencies.lock().unwrap());
    Ok(Contended {
        latencies,
        acquisitions: acquisitions.load(Ordering::Relaxed),
        lost_wakeups: timeouts.load(Ordering::Relaxed),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_is_the_urls_host_port_and_decoded_credentials() {
        let e = Endpoint::parse("redis://app:p%40ss@db.example:6380/0").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("db.example", 6380));
        assert_eq!(e.user.as_deref(), Some("app"));
        assert_eq!(e.password.as_deref(), Some("p@ss"));
        assert!(!e.credentials_in_argv);
        assert!(e.with_credentials_in_argv().credentials_in_argv);

        let e = Endpoint::parse("redis://:pw@[::1]").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("::1", 6379));
        assert_eq!((e.user, e.password.as_deref()), (None, Some("pw")));

        let e = Endpoint::parse("redis://127.0.0.1:7000").unwrap();
        assert_eq!((e.user, e.password), (None, None));
    }

    #[test]
    fn credentials_are_told_apart_and_never_shown_in_errors() {
        assert!(has_credentials("redis://:pw@h:1").unwrap());
        assert!(has_credentials("redis://user@h:1").unwrap());
        assert!(has_credentials("redis-sentinel://h:1?sentinelPassword=x").unwrap());
        assert!(!has_credentials("redis://h:1/0").unwrap());
        for bad in [
            "redis://:hunter2@h:99999",
            "redis://:hunter2@h:x",
            "unix://:hunter2@/tmp/redis.sock",
        ] {
            let e = Endpoint::parse(bad).err().expect(bad).to_string();
            assert!(!e.contains("hunter2") && e.contains(":***@"), "{e}");
        }
    }
}
