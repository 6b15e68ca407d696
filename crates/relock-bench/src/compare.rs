//! `relock-bench compare`: the performance targets of `docs/performance.md`, each measured as a
//! ratio to a baseline taken in the same run on the same servers: PING, the peer crates of
//! `bench/peers`, and `redis-benchmark`.

use std::process::Command;
use std::time::{Duration, Instant};

use fred::interfaces::ClientLike;
use relock_testkit::{RedisMasters, RedisServer};

use crate::bench::{
    contended, flush, fred_client, redis_benchmark, relock_settings_client, uncontended, Endpoint,
};
use crate::quorum_bench::{serial, timed_pair, Figures};
use crate::shared::CliError;
use crate::stats::{ms, Latencies};

/// Options of `relock-bench compare`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Seconds per measurement.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    seconds: u64,
    /// Tasks for U (each on its own key).
    #[arg(long, default_value_t = 64)]
    tasks: usize,
    /// relock's command connections for U (default: the library's default).
    #[arg(long)]
    connections: Option<usize>,
    /// The peer bench binary (`cd bench/peers && cargo build --release`); peers are skipped
    /// when it is missing.
    #[arg(long, default_value = "bench/peers/target/release/relock-peer-bench")]
    peers_bin: String,
    /// Quorum masters for Q.
    #[arg(long, default_value_t = 5)]
    nodes: usize,
    /// Also write the summary to this file as JSON (one object per target, with the ratio as
    /// a number, null when there is none).
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

/// One line of the summary: a figure, its baseline from this run, and the target.
#[derive(serde::Serialize)]
struct Row {
    scenario: String,
    relock: String,
    baseline: String,
    ratio: f64,
    target: String,
    /// Whether the target is met; `None` for a row without a target (a ratio reported
    /// beside its floor), which is never "met".
    met: Option<bool>,
}

pub(crate) async fn run(args: Args) -> Result<(), CliError> {
    let secs = Duration::from_secs(args.seconds);
    let peers = std::path::Path::new(&args.peers_bin)
        .exists()
        .then_some(args.peers_bin.as_str());
    if peers.is_none() {
        eprintln!(
            "{} not found: peers skipped (cd bench/peers && cargo build --release)",
            args.peers_bin
        );
    }
    let mut rows = Vec::new();

    // One server for U and H-wait.
    let server = RedisServer::start()?;
    let url = server.url();
    let endpoint = Endpoint::parse(&url)?;
    let bench_ping = redis_benchmark(&endpoint, &["-c", "1", "-n", "20000"], &["PING"])?.1;
    // What a tokio client pays for one round trip: the baseline a handoff is held to (two
    // round trips and a pub/sub message, in the same runtime and client library).
    let ping_p50 = fred_ping_p50(&url).await?;
    println!(
        "PING p50: {} from a fred client (serial, 5000), {} from redis-benchmark -c 1",
        ms(ping_p50),
        ms(bench_ping)
    );
    // The floor twice: as a handoff in H-wait comes, after the holder held the lock 5 ms
    // (client and server idle meanwhile), the floor the targets are held to; and back to back
    // (the machine's fastest), reported without a target. A machine whose idle cores sleep
    // pays a wake-up on each side after such a pause (on a 2-core VM about 0.1-0.2 ms), and
    // H-wait pays it too, so the back-to-back ratio shows how much of the gap is the machine's.
    let hot_floor = handoff_floor_p50(&url, Duration::ZERO, 2000).await?;
    let floor = handoff_floor_p50(&url, HOLD, 400).await?;
    println!(
        "H-wait floor (bare fred: a script publishes, another client's subscribed task wakes): back to back p50 {} = {:.2} × fred PING; after a {} ms hold (as H-wait's handoffs) p50 {}",
        ms(hot_floor),
        hot_floor.as_secs_f64() / ping_p50.as_secs_f64().max(1e-9),
        HOLD.as_millis(),
        ms(floor)
    );
    // What one handoff costs beside that floor, counted exactly by tests/handoff/t99 (server
    // calls, wake-ups and the task hops inside relock), then each step's time.
    println!(
        "handoff cost: plain = release call + message + 1 wake-up + the waiter's acquire call (2 calls); fair = release call that grants + message + 1 wake-up (1 call)"
    );
    let mut hops = [0; 2];
    // The server commands a fair handoff runs (the release and the releaser's attempts).
    let mut fair_commands = f64::NAN;
    // The same with the releaser's join alone (its client already subscribed: the steady
    // state of a client with several waiters), from the commands each script call ran.
    let mut fair_steady = f64::NAN;
    for fair in [false, true] {
        let steps = crate::steps::measure(&url, fair, 400, HOLD).await?;
        let kind = if fair { "fair" } else { "plain" };
        steps.print(kind);
        hops[usize::from(fair)] = steps.hops;
        // What the server runs on each handoff, cold (after the hold) and warm (back to back).
        let cold = crate::steps::server_work(&url, fair, 200, HOLD).await?;
        let warm = crate::steps::server_work(&url, fair, 200, Duration::ZERO).await?;
        if fair {
            fair_commands = cold.inner_calls();
        }
        let scripts: Vec<String> = cold
            .commands
            .iter()
            .filter(|(n, _)| n.starts_with("EVALSHA"))
            .map(|(n, per)| format!("{per:.2} × {}", &n[8..]))
            .collect();
        println!(
            "  server per handoff, {kind}: scripts {} (mean {:.1} µs each after a {} ms hold, {:.1} µs back to back), running {:.1} commands: {}",
            scripts.join(" + "),
            cold.evalsha_us,
            HOLD.as_millis(),
            warm.evalsha_us,
            cold.inner_calls(),
            cold.commands
                .iter()
                .filter(|(n, _)| !n.starts_with("EVALSHA"))
                .map(|(n, per)| format!("{n} {per:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let per_call = |name: &str| {
            cold.scripts
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, ran)| *ran)
        };
        println!(
            "  commands per script call, {kind}: {}",
            cold.scripts
                .iter()
                .map(|(n, ran)| format!("{n} {ran:.1}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        if let (true, Some(release), Some(join)) = (
            fair,
            per_call("fair_release"),
            per_call("fair_acquire (wait)"),
        ) {
            fair_steady = release + join;
            println!(
                "  a fair handoff whose releaser's client has other waiters (its join without a first attempt): {fair_steady:.1} commands ({release:.1} + {join:.1})"
            );
        }
    }

    // U: relock, then each peer, on the same server.
    let before = server_calls(&url).await?;
    let u = uncontended(&url, args.tasks, args.connections, true, secs, "U relock").await?;
    let relock_u = u.pairs;
    let calls = (server_calls(&url).await? - before) as f64;
    // The warm-up pair and the INFO calls are in the count too: negligible.
    let per_pair = calls / (relock_u * secs.as_secs_f64()).max(1.0);
    println!(
        "U relock: {relock_u:.0} pairs/s, {per_pair:.2} server calls per pair (INFO commandstats); {}",
        u.cpu_text()
    );
    // U's floor: relock's two script calls per pair from a bare fred pool, same run.
    let u_floor = crate::bench::uncontended_floor(&url, args.tasks, args.connections, secs).await?;
    println!(
        "U floor (bare fred with relock's timeouts: acquire.lua and release.lua per pair, no relock): {:.0} pairs/s; {}",
        u_floor.pairs,
        u_floor.cpu_text()
    );
    if let (Some(theirs), Some(ours)) = (u_floor.client_cpu_us, u.client_cpu_us) {
        rows.push(Row {
            scenario:
                "U: client CPU per pair ÷ a bare fred client making the same two script calls"
                    .into(),
            relock: format!("{ours:.1} µs"),
            baseline: format!("bare fred {theirs:.1} µs"),
            ratio: ours / theirs.max(1e-9),
            target: "≤ 1.15 ×".into(),
            met: Some(ours <= theirs * 1.15),
        });
    }
    let mut best: Option<(String, f64)> = None;
    // redis-lock's client CPU per pair, reported beside the client CPU target's row.
    let mut redis_lock_cpu: Option<f64> = None;
    if let Some(bin) = peers {
        for lib in ["rslock", "redis-lock", "async-redis-lock"] {
            let (server_before, client_before) = (
                crate::bench::server_cpu(&url).await,
                crate::watchdog_bench::children_cpu_time(),
            );
            let out = peer(
                bin,
                &[
                    "u",
                    lib,
                    &args.seconds.to_string(),
                    &args.tasks.to_string(),
                    &url,
                ],
            )?;
            let out: Vec<&str> = out.iter().map(String::as_str).collect();
            match out.as_slice() {
                [name, "u", pairs, rate, errors] => {
                    let rate: f64 = rate.parse().unwrap_or(0.0);
                    let pairs: f64 = pairs.parse().unwrap_or(0.0);
                    // The same CPU figures as relock's: what a pair costs each side.
                    let cpu = crate::bench::Uncontended {
                        pairs: rate,
                        client_cpu_us: per_pair_us(
                            client_before,
                            crate::watchdog_bench::children_cpu_time(),
                            pairs,
                        ),
                        server_cpu_us: per_pair_us(
                            server_before,
                            crate::bench::server_cpu(&url).await,
                            pairs,
                        ),
                    };
                    println!(
                        "U {name}: {rate:.0} pairs/s ({errors} errors); {}",
                        cpu.cpu_text()
                    );
                    if best.as_ref().is_none_or(|(_, b)| rate > *b) {
                        best = Some((name.to_string(), rate));
                    }
                    if lib == "redis-lock" {
                        redis_lock_cpu = cpu.client_cpu_us;
                    }
                }
                other => println!("U {lib}: unexpected output {other:?}"),
            }
        }
        flush(&url).await?;
    }
    if let Some((name, rate)) = &best {
        rows.push(Row {
            scenario: "U: pairs/s, 64 tasks, own keys".into(),
            relock: format!("{relock_u:.0}"),
            baseline: format!("{name} {rate:.0}"),
            ratio: relock_u / rate,
            // The throughput target is against peers of the same semantics (Redisson-layout
            // clients); these SET-based peers do half the server's work per pair.
            target: "no target (SET-based peers)".into(),
            met: None,
        });
    }
    if let (Some(theirs), Some(ours)) = (redis_lock_cpu, u.client_cpu_us) {
        rows.push(Row {
            scenario: "U: client CPU per pair ÷ redis-lock's".into(),
            relock: format!("{ours:.1} µs"),
            baseline: format!("redis-lock {theirs:.1} µs"),
            ratio: ours / theirs.max(1e-9),
            target: "none (reported)".into(),
            met: None,
        });
    }
    rows.push(Row {
        scenario: "U: server calls per pair".into(),
        relock: format!("{per_pair:.2}"),
        baseline: "SET-based peers 4".into(),
        ratio: per_pair / 4.0,
        target: "none (reported)".into(),
        met: None,
    });
    rows.push(Row {
        scenario: "fair handoff: server commands (the release and the releaser's attempts)".into(),
        relock: format!("{fair_commands:.1}"),
        baseline: "the target, 20".into(),
        ratio: fair_commands / 20.0,
        target: "≤ 20".into(),
        met: Some(fair_commands <= 20.0),
    });
    rows.push(Row {
        scenario: "fair handoff: server commands, the release and a join (a releaser whose client has other waiters, no first attempt)".into(),
        relock: format!("{fair_steady:.1}"),
        baseline: "the target, 20".into(),
        ratio: fair_steady / 20.0,
        target: "≤ 20".into(),
        met: Some(fair_steady <= 20.0),
    });

    // H-wait, plain then fair.
    for fair in [false, true] {
        let subject = if fair {
            crate::bench::Subject::Fair
        } else {
            crate::bench::Subject::Plain
        };
        let h = contended(&url, 16, HOLD, secs, subject).await?;
        let lat = h.latencies;
        let (p50, p99) = (lat.percentile(50.0), lat.percentile(99.0));
        let kind = if fair { "fair" } else { "plain" };
        println!(
            "H-wait {kind}: {} handoffs, p50 {} p99 {}, {} timed out",
            lat.len(),
            ms(p50),
            ms(p99),
            h.lost_wakeups
        );
        let after_hold = p50.as_secs_f64() / floor.as_secs_f64().max(1e-9);
        // A fair handoff needs what the floor measures (one script call and one message); a
        // plain one adds the waiter's acquire.
        let target = if fair { 1.3 } else { 1.6 };
        rows.push(Row {
            scenario: format!(
                "H-wait {kind}: handoff p50 ÷ the bare-fred floor after the same {} ms hold ({} task hops inside relock)",
                HOLD.as_millis(),
                hops[usize::from(fair)]
            ),
            relock: ms(p50),
            baseline: format!("floor {}", ms(floor)),
            ratio: after_hold,
            target: format!("≤ {target} × floor"),
            met: Some(after_hold <= target),
        });
        rows.push(Row {
            scenario: format!("H-wait {kind}: handoff p50 ÷ the back-to-back floor"),
            relock: ms(p50),
            baseline: format!("floor {}", ms(hot_floor)),
            ratio: p50.as_secs_f64() / hot_floor.as_secs_f64().max(1e-9),
            target: "none (reported)".into(),
            met: None,
        });
        rows.push(Row {
            scenario: format!("H-wait {kind}: handoff p50 ÷ fred PING"),
            relock: ms(p50),
            baseline: format!("fred PING p50 {}", ms(ping_p50)),
            ratio: p50.as_secs_f64() / ping_p50.as_secs_f64().max(1e-9),
            target: "none (reported)".into(),
            met: None,
        });
        rows.push(Row {
            scenario: format!("H-wait {kind}: handoff p99"),
            relock: ms(p99),
            baseline: "the target, 1 ms".into(),
            ratio: p99.as_secs_f64() / 0.001,
            target: "≤ 1 ms".into(),
            met: Some(p99 <= Duration::from_millis(1)),
        });
    }
    drop(server);

    // Q on `nodes` masters, serial; then with one master stopped.
    let m = RedisMasters::start(args.nodes)?;
    let quorum = relock::QuorumClient::builder()
        .urls(m.urls())
        .node_timeout(NODE_TIMEOUT)
        .restart_quarantine(Duration::ZERO)
        .build()
        .await?;
    let qlock = quorum.lock("bench:q");
    let pair = || timed_pair(&qlock);
    pair().await?;
    let q = serial("Q", secs, pair).await?;
    println!(
        "Q relock: p50 {} p99 {} ({} pairs)",
        ms(q.p50),
        ms(q.p99),
        q.pairs
    );
    // What a majority round costs this client library on these masters, whatever the lock. The
    // floor the target is judged on: relock's node settings and the node timeout on every vote,
    // which a quorum lock cannot skip (Redlock bounds each node's answer). Then the same round on
    // fred's defaults, untimed, and the peers' vote, a SET NX PX (reported).
    let floor_lua = majority_round(&m.urls(), Vote::AcquireScript, Some(NODE_TIMEOUT), secs)
        .await?
        .percentile(50.0);
    let floor_bare = majority_round(&m.urls(), Vote::AcquireScript, None, secs)
        .await?
        .percentile(50.0);
    let floor_set = majority_round(&m.urls(), Vote::SetNx, None, secs)
        .await?
        .percentile(50.0);
    println!(
        "Q floor (bare fred, majority of {} answers): EVALSHA acquire.lua p50 {} with relock's node settings and a {} ms timeout per vote; on fred's defaults, untimed: EVALSHA {}, SET NX PX {}",
        args.nodes,
        ms(floor_lua),
        NODE_TIMEOUT.as_millis(),
        ms(floor_bare),
        ms(floor_set)
    );
    m[args.nodes / 2].pause()?;
    let paused = serial("Q-paused", secs, pair).await;
    m[args.nodes / 2].resume()?;
    let paused = paused?;
    println!("Q-paused relock: p50 {}", ms(paused.p50));
    quorum.shutdown().await;
    let mut best_q: Option<(String, Figures)> = None;
    if let Some(bin) = peers {
        for lib in ["rslock", "redis-lock"] {
            let mut a = vec!["q", lib];
            let s = args.seconds.to_string();
            a.push(&s);
            let urls = m.urls();
            a.extend(urls.iter().map(String::as_str));
            let out = peer(bin, &a)?;
            let out: Vec<&str> = out.iter().map(String::as_str).collect();
            match out.as_slice() {
                [name, "q", pairs, p50, p99, rate, stuck] => {
                    let fig = Figures::of_peer(pairs, p50, p99, rate);
                    println!(
                        "Q {name}: p50 {} p99 {} ({stuck} stuck)",
                        ms(fig.p50),
                        ms(fig.p99)
                    );
                    if fig.pairs > 0 && best_q.as_ref().is_none_or(|(_, b)| fig.p50 < b.p50) {
                        best_q = Some((name.to_string(), fig));
                    }
                }
                other => println!("Q {lib}: unexpected output {other:?}"),
            }
        }
    }
    if let Some((name, b)) = &best_q {
        let ratio = q.p50.as_secs_f64() / b.p50.as_secs_f64().max(1e-9);
        rows.push(Row {
            scenario: format!("Q: quorum acquire p50, {} masters", args.nodes),
            relock: ms(q.p50),
            baseline: format!("{name} {}", ms(b.p50)),
            ratio,
            target: "none (reported)".into(),
            met: None,
        });
    }
    rows.push(Row {
        scenario: "Q: relock ÷ its own vote's floor (bare fred with relock's node settings, EVALSHA acquire.lua, majority, node timeout per vote)"
            .into(),
        relock: ms(q.p50),
        baseline: format!(
            "floor {} (on fred's defaults, untimed: {}; SET NX PX {})",
            ms(floor_lua),
            ms(floor_bare),
            ms(floor_set)
        ),
        ratio: q.p50.as_secs_f64() / floor_lua.as_secs_f64().max(1e-9),
        target: "≤ 1.1 ×".into(),
        met: Some(q.p50.as_secs_f64() <= floor_lua.as_secs_f64() * 1.1),
    });
    let ratio = paused.p50.as_secs_f64() / q.p50.as_secs_f64().max(1e-9);
    rows.push(Row {
        scenario: "Q-paused: one master stopped, p50".into(),
        relock: ms(paused.p50),
        baseline: format!("Q {}", ms(q.p50)),
        ratio,
        target: "≤ 1.2 × Q".into(),
        met: Some(ratio <= 1.2),
    });

    println!("\n| scenario | relock | baseline (same run) | ratio | target | met |");
    println!("|---|---|---|---|---|---|");
    for r in &rows {
        let ratio = if r.ratio.is_nan() {
            "—".to_string()
        } else {
            format!("{:.2} ×", r.ratio)
        };
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            r.scenario,
            r.relock,
            r.baseline,
            ratio,
            r.target,
            match r.met {
                Some(true) => "yes",
                Some(false) => "no",
                None => "no target",
            }
        );
    }
    if let Some(path) = &args.json {
        // serde_json writes a NaN ratio (no baseline) as null.
        let text =
            serde_json::to_string_pretty(&rows).map_err(|e| CliError::Failed(e.to_string()))?;
        std::fs::write(path, text)
            .map_err(|e| CliError::Failed(format!("writing {}: {e}", path.display())))?;
    }
    Ok(())
}

/// Runs the peer bench binary and splits its one output line into words.
fn peer(bin: &str, args: &[&str]) -> Result<Vec<String>, CliError> {
    let out = Command::new(bin)
        .args(args)
        .output()
        .map_err(|e| CliError::Failed(format!("running {bin}: {e}")))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect())
}

/// Every command the server ran (scripts' own calls included), from `INFO commandstats`.
async fn server_calls(url: &str) -> Result<u64, CliError> {
    let client = fred_client(url).await?;
    let info: String = client
        .info(Some(fred::types::InfoKind::CommandStats))
        .await
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let _ = client.quit().await;
    Ok(info
        .lines()
        .filter(|l| l.starts_with("cmdstat_") && !l.starts_with("cmdstat_info:"))
        .filter_map(|l| l.split("calls=").nth(1))
        .filter_map(|r| r.split(',').next())
        .filter_map(|n| n.parse::<u64>().ok())
        .sum())
}

/// What one node is asked in a bare majority round.
#[derive(Debug, Clone, Copy)]
enum Vote {
    /// `SET k v NX PX 30000` (what the SET-based peers send).
    SetNx,
    /// `EVALSHA` of relock's `acquire.lua`, as a vote sends it.
    AcquireScript,
}

/// The quorum client's timeout per node in `compare`'s Q, and in its floor.
const NODE_TIMEOUT: Duration = Duration::from_millis(50);

/// The command timeout of a quorum node's connections with `QuorumClientBuilder`'s default
/// connect timeout (its `connect_timeout`, at least 1 s).
const QUORUM_NODE_COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// Latencies of a bare majority round: the same command to every node at once from one fred client
/// per node, timed until a majority has answered; the key is deleted everywhere between rounds
/// (untimed). The floor of a quorum acquire whose vote is that command, with no lock library.
/// `node_timeout`: `None`, fred's default settings and no timer; `Some(t)`, the fred settings
/// relock gives its connections (`ClientBuilder::fred_builder`) with the command timeout a
/// `QuorumClient` gives its nodes by default (its connect timeout, 5 s), and each vote bounded by
/// `t`, as relock bounds each node's answer. A quorum node's connections never reconnect by
/// themselves, and the floor's keep relock's reconnect policy: that costs a command nothing.
async fn majority_round(
    urls: &[String],
    vote: Vote,
    node_timeout: Option<Duration>,
    secs: Duration,
) -> Result<Latencies, CliError> {
    use fred::interfaces::{ClientLike, KeysInterface, LuaInterface};
    use futures_util::stream::{FuturesUnordered, StreamExt};
    let failed = |e: fred::error::Error| CliError::Failed(e.to_string());
    let mut clients = Vec::with_capacity(urls.len());
    for url in urls {
        clients.push(match node_timeout {
            None => fred_client(url).await?,
            Some(_) => relock_settings_client(url, QUORUM_NODE_COMMAND_TIMEOUT).await?,
        });
    }
    let mut sha = String::new();
    for c in &clients {
        sha = c.script_load(relock::lua::ACQUIRE).await.map_err(failed)?;
    }
    let majority = urls.len() / 2 + 1;
    let mut lat = Latencies::new();
    let mut no_majority = 0u64;
    let end = Instant::now() + secs;
    let mut n = 0u64;
    while Instant::now() < end {
        n += 1;
        let field = format!("floor:{n}");
        let t = Instant::now();
        let mut calls: FuturesUnordered<_> = clients
            .iter()
            .map(|c| {
                let (c, sha, field) = (c.clone(), sha.clone(), field.clone());
                let call = async move {
                    match vote {
                        Vote::SetNx => c
                            .set::<Option<String>, _, _>(
                                "bench:floor",
                                field,
                                Some(fred::types::Expiration::PX(30_000)),
                                Some(fred::types::SetOptions::NX),
                                false,
                            )
                            .await
                            .map(drop),
                        Vote::AcquireScript => c
                            .evalsha::<Vec<i64>, _, _, _>(
                                sha,
                                vec!["bench:floor:hash", "bench:floor:token"],
                                vec!["30000".to_string(), field, "1000".to_string()],
                            )
                            .await
                            .map(drop),
                    }
                };
                // Whether the node answered in time: one that did not counts as no vote, as in
                // relock (its command still runs, ahead of the round's DEL on its connection).
                async move {
                    match node_timeout {
                        None => call.await.map(|()| true),
                        Some(t) => match tokio::time::timeout(t, call).await {
                            Ok(r) => r.map(|()| true),
                            Err(_) => Ok(false),
                        },
                    }
                }
            })
            .collect();
        let mut answered = 0;
        while let Some(r) = calls.next().await {
            answered += usize::from(r.map_err(failed)?);
            if answered == majority {
                break;
            }
        }
        if answered == majority {
            lat.record(t.elapsed());
        } else {
            no_majority += 1;
        }
        while let Some(r) = calls.next().await {
            r.map_err(failed)?;
        }
        for c in &clients {
            let _: i64 = c
                .del(vec!["bench:floor", "bench:floor:hash"])
                .await
                .map_err(failed)?;
        }
    }
    for c in &clients {
        let _: i64 = c.del("bench:floor:token").await.map_err(failed)?;
        let _ = c.quit().await;
    }
    if no_majority > 0 {
        println!(
            "vote floor: {no_majority} of {n} rounds had no majority within the node timeout (not counted)"
        );
    }
    Ok(lat)
}

/// CPU µs per pair between two readings, over `pairs` pairs.
fn per_pair_us(
    before: Option<std::time::Duration>,
    after: Option<std::time::Duration>,
    pairs: f64,
) -> Option<f64> {
    match (before, after) {
        (Some(b), Some(a)) if pairs > 0.0 => Some(a.saturating_sub(b).as_secs_f64() * 1e6 / pairs),
        _ => None,
    }
}

/// How long H-wait's holders hold the lock, and the pause before each publish of the floor
/// that H-wait is held to.
const HOLD: Duration = Duration::from_millis(5);

/// p50 of the shortest handoff a lock built on fred could make, with no lock library: one
/// client runs a script that publishes a message (a release that names the next holder, as
/// the fair lock's does), and a task of the same runtime blocked on another client's
/// subscription wakes with it. Timed from the script's send to that task's wake-up, `n` times,
/// each after a pause of `idle` (a holder's hold: nothing runs on either side meanwhile).
async fn handoff_floor_p50(url: &str, idle: Duration, n: u32) -> Result<Duration, CliError> {
    use fred::interfaces::{EventInterface, LuaInterface, PubsubInterface};
    let failed = |e: fred::error::Error| CliError::Failed(e.to_string());
    let publisher = fred_client(url).await?;
    let config =
        fred::types::config::Config::from_url(url).map_err(|e| CliError::Failed(e.to_string()))?;
    let subscriber = fred::clients::SubscriberClient::new(config, None, None, None);
    subscriber.init().await.map_err(failed)?;
    subscriber
        .subscribe("bench:floor:channel")
        .await
        .map_err(failed)?;
    let mut messages = subscriber.message_rx();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    // The waiter: a task of its own, woken by the subscriber's message.
    let waiter = tokio::spawn(async move {
        while let Ok(_m) = messages.recv().await {
            if tx.send(Instant::now()).is_err() {
                return;
            }
        }
    });
    let script = "redis.call('publish', KEYS[1], ARGV[1]) return 1";
    let sha: String = publisher.script_load(script).await.map_err(failed)?;
    let mut lat = Latencies::new();
    for i in 0..n {
        if !idle.is_zero() {
            tokio::time::sleep(idle).await;
        }
        let t = Instant::now();
        let _: i64 = publisher
            .evalsha(
                sha.as_str(),
                vec!["bench:floor:channel"],
                vec![i.to_string()],
            )
            .await
            .map_err(failed)?;
        let woken = tokio::time::timeout(Duration::from_secs(2), rx.recv())
            .await
            .map_err(|_| CliError::Failed("the floor's message never came".into()))?
            .ok_or_else(|| CliError::Failed("the floor's subscriber ended".into()))?;
        lat.record(woken.saturating_duration_since(t));
    }
    waiter.abort();
    let _ = subscriber.quit().await;
    let _ = publisher.quit().await;
    Ok(lat.percentile(50.0))
}

/// p50 of 5000 serial PINGs from a fred client on this runtime.
async fn fred_ping_p50(url: &str) -> Result<Duration, CliError> {
    let client = fred_client(url).await?;
    let mut lat = Latencies::new();
    for _ in 0..5000 {
        let t = Instant::now();
        let _: String = client
            .ping(None)
            .await
            .map_err(|e| CliError::Failed(e.to_string()))?;
        lat.record(t.elapsed());
    }
    let _ = client.quit().await;
    Ok(lat.percentile(50.0))
}
