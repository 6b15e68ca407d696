//! `relock status NAME…` and `relock force-unlock NAME`: what Redis holds for a lock, and
//! deleting it by hand.

use relock_cli::shared::resolve_url;
use relock_cli::shared::{say, CliError};

/// `println!` that never panics on a closed stdout (`relock status … | head -c0`): what was
/// asked (a read, or a deletion) has happened, and nobody reads the rest.
macro_rules! println {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// A PTTL in words: "N ms left", "no expiry" (-1), or "gone".
fn lease_text(pttl_ms: Option<i64>) -> String {
    match pttl_ms {
        Some(-1) => "no expiry".to_string(),
        Some(ms) => format!("{ms} ms left"),
        None => "gone".to_string(),
    }
}

/// Options of `relock status`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  relock status nightly-report            # exit 0 if held, 1 if free, 2 if it cannot tell
  relock status --json jobs:a jobs:b
  relock status --quorum redis://a:6379,redis://b:6379,redis://c:6379 backup

With --quorum each master is read on its own: the lock is held when one owner field is on a
majority of them, free when no field can reach a majority even counting the masters that did
not answer, and unknown (exit 2) otherwise.

A fair lock's line is shown too; a spin lock is shown as a plain lock (the same keys); a
semaphore's or latch's count, a permit semaphore's permits and a rate limiter's config and
available permits are shown for their names. An owner field is labelled relock or redisson by its shape
(<client id>:<n> with a large n, or <uuid>:<thread id>).")]
pub(crate) struct StatusArgs {
    /// The locks' names.
    #[arg(required = true)]
    names: Vec<String>,
    /// Redis URL; else RELOCK_URL, else REDIS_URL, else redis://127.0.0.1:6379.
    #[arg(long)]
    url: Option<String>,
    #[command(flatten)]
    tls: relock_cli::shared::TlsArgs,
    /// Read the lock on each of these independent masters (a `relock run --quorum` or
    /// QuorumClient lock): one argument, the URLs separated by commas.
    #[arg(long, value_delimiter = ',', conflicts_with = "url")]
    quorum: Vec<String>,
    /// How long to wait for each master (connect and each read) with --quorum.
    #[arg(long, value_parser = relock_cli::shared::parse_duration, default_value = "2s", requires = "quorum")]
    node_timeout: std::time::Duration,
    /// One JSON object per lock, in an array.
    #[arg(long)]
    json: bool,
}

/// Options of `relock force-unlock`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:
  relock force-unlock --yes nightly-report

Without --yes it only shows what it would delete. Holders hear of it at once (their lost()
fires; a relock run's command gets SIGTERM); waiters are woken at once.")]
pub(crate) struct ForceUnlockArgs {
    /// The lock's name.
    name: String,
    /// Redis URL; else RELOCK_URL, else REDIS_URL, else redis://127.0.0.1:6379.
    #[arg(long)]
    url: Option<String>,
    #[command(flatten)]
    tls: relock_cli::shared::TlsArgs,
    /// Delete it (without this, only show what would be deleted).
    #[arg(long, short = 'y')]
    yes: bool,
}

#[derive(serde::Serialize)]
struct Json {
    name: String,
    held: bool,
    holders: Vec<JsonHolder>,
    pttl_ms: Option<i64>,
    counter: Option<u64>,
    counter_pttl_ms: Option<i64>,
    queue: Vec<JsonWaiter>,
    /// A read-write lock's mode (`read`, `write`); absent for a lock.
    #[serde(skip_serializing_if = "Option::is_none")]
    mode: Option<String>,
}

#[derive(serde::Serialize)]
struct JsonHolder {
    field: String,
    count: i64,
    layout: &'static str,
}

#[derive(serde::Serialize)]
struct JsonWaiter {
    field: String,
    position: usize,
    ticket: u64,
    deadline_ms: Option<i64>,
}

fn json(s: &relock::LockStatus) -> Json {
    Json {
        name: s.name.clone(),
        held: s.is_held(),
        holders: s
            .holders
            .iter()
            .map(|h| JsonHolder {
                field: h.field.clone(),
                count: h.count,
                layout: relock_cli::shared::layout_name(h.layout),
            })
            .collect(),
        pttl_ms: s.pttl_ms,
        counter: s.counter,
        counter_pttl_ms: s.counter_pttl_ms,
        queue: s
            .queue
            .iter()
            .map(|w| JsonWaiter {
                field: w.field.clone(),
                position: w.position,
                ticket: w.ticket,
                deadline_ms: w.deadline_ms,
            })
            .collect(),
        mode: s.mode.clone(),
    }
}

/// A free lock's JSON, as [`json`] writes it for a status with nothing in it.
fn free(name: &str) -> Json {
    Json {
        name: name.to_string(),
        held: false,
        holders: Vec::new(),
        pttl_ms: None,
        counter: None,
        counter_pttl_ms: None,
        queue: Vec::new(),
        mode: None,
    }
}

fn print(s: &relock::LockStatus, who: &[Option<relock::OwnerInfo>]) {
    if !s.is_held() {
        println!("{}: free", s.name);
    } else {
        // A watchdog holder renews its lease every third of it: the time left is not when it
        // ends, unless the holder stops.
        let lease = match s.pttl_ms {
            Some(ms) if ms >= 0 => format!("{ms} ms left unless its holder renews it"),
            other => lease_text(other),
        };
        match s.mode.as_deref() {
            Some(mode) => {
                let what = if mode == "write" {
                    "writing"
                } else {
                    "reading"
                };
                println!("{}: held for {what} (a read-write lock), {lease}", s.name)
            }
            None => println!("{}: held, {lease}", s.name),
        }
        for (i, h) in s.holders.iter().enumerate() {
            let named = match who.get(i) {
                Some(Some(o)) => {
                    format!(": `{}`, pid {} on {} ({})", o.name, o.pid, o.host, o.addr)
                }
                _ => String::new(),
            };
            println!(
                "  holder {} ({}), count {}{named}",
                h.field,
                relock_cli::shared::layout_name(h.layout),
                h.count
            );
        }
    }
    if let Some(c) = s.counter {
        println!("  fencing counter {c} ({})", lease_text(s.counter_pttl_ms));
    }
    for w in &s.queue {
        println!(
            "  waiting #{} {} ticket {} deadline {}",
            w.position + 1,
            w.field,
            w.ticket,
            w.deadline_ms.map_or("-".into(), |d| d.to_string())
        );
    }
}

/// A semaphore's, latch's or permit semaphore's count, as `relock status` shows it.
#[derive(serde::Serialize)]
struct Count {
    name: String,
    /// `count` (a semaphore's available permits, or a latch's count: the same layout) or
    /// `permit_semaphore` (it has a timeouts set).
    kind: &'static str,
    count: i64,
    /// A permit semaphore's permits whose lease has not ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    permits_held: Option<u64>,
}

/// A rate limiter's config and permits, for `--json`.
#[derive(serde::Serialize)]
struct Rate {
    name: String,
    /// `rate_limiter`.
    kind: &'static str,
    /// `overall` or `per_client`.
    #[serde(rename = "type")]
    rate_type: &'static str,
    rate: u64,
    interval_ms: u128,
    /// Absent without a keep-alive.
    #[serde(skip_serializing_if = "Option::is_none")]
    keep_alive_ms: Option<u128>,
    /// The permits available now; absent for a per-client limit (each client has its own).
    #[serde(skip_serializing_if = "Option::is_none")]
    available: Option<u64>,
}

/// An election's leader, beside its lock's status.
#[derive(serde::Serialize)]
struct JsonLeader {
    term: u64,
    value: String,
    owner: String,
    lease_ms: Option<u128>,
}

/// What `relock status` found under a name.
enum Found {
    /// A lock, and the leader of the election of that name if it is one.
    /// With who each holder is, where its client named itself.
    Lock(
        relock::LockStatus,
        Option<relock::Leader>,
        Vec<Option<relock::OwnerInfo>>,
    ),
    /// Nothing under the name: a free lock.
    Free(String),
    Count(Count),
    Rate(Rate),
    /// What went wrong for this name (it is not a lock, or could not be read).
    Failed(String, String),
}

/// `relock status`: exit 0 if every lock named is held, 1 otherwise. A semaphore's or
/// latch's count is shown and does not change the exit code.
pub(crate) async fn status(args: StatusArgs) -> Result<u8, CliError> {
    if !args.quorum.is_empty() {
        return quorum::status(&args).await;
    }
    let client = args.tls.connect(resolve_url(args.url.clone())).await?;
    let mut all = Vec::new();
    let mut held = true;
    for name in &args.names {
        // A lock is read on a fair handle, so its line shows too (empty for a plain lock).
        let found = match client.inspect(name).await {
            Ok(relock::Inspection::Lock(s)) => {
                held &= s.is_held();
                // An election's lock: its leader's value and term (none for a plain lock).
                let leader = if s.is_held() {
                    client.election(name).leader().await.ok().flatten()
                } else {
                    None
                };
                let lock = client.fair_lock(name);
                let mut who = Vec::new();
                for h in &s.holders {
                    who.push(lock.describe_owner(&h.field).await.ok().flatten());
                }
                Found::Lock(s, leader, who)
            }
            Ok(relock::Inspection::Nothing) => {
                held = false;
                Found::Free(name.clone())
            }
            Ok(relock::Inspection::Count(count)) => Found::Count(Count {
                name: name.clone(),
                kind: "count",
                count,
                permits_held: None,
            }),
            Ok(relock::Inspection::PermitSemaphore { available, held }) => Found::Count(Count {
                name: name.clone(),
                kind: "permit_semaphore",
                count: available,
                permits_held: Some(held),
            }),
            Ok(relock::Inspection::RateLimiter { config, available }) => Found::Rate(Rate {
                name: name.clone(),
                kind: "rate_limiter",
                rate_type: match config.rate_type() {
                    relock::RateType::PerClient => "per_client",
                    relock::RateType::Overall => "overall",
                },
                rate: config.rate(),
                interval_ms: config.interval().as_millis(),
                keep_alive_ms: config.keep_alive().map(|k| k.as_millis()),
                available,
            }),
            // Neither a lock nor a count.
            Ok(_) => Found::Failed(
                name.clone(),
                CliError::from(relock::Error::WrongType { key: name.clone() }).to_string(),
            ),
            // Said for this name; the others are still answered.
            Err(e) => Found::Failed(name.clone(), CliError::from(e).to_string()),
        };
        all.push(found);
    }
    client.shutdown().await;
    if args.json {
        let out: Vec<serde_json::Value> = all
            .iter()
            .map(|f| match f {
                Found::Lock(s, leader, who) => serde_json::to_value(json(s)).map(|mut v| {
                    for (i, o) in who.iter().enumerate() {
                        if let Some(o) = o {
                            v["holders"][i]["client"] = serde_json::json!({
                                "name": o.name, "host": o.host, "pid": o.pid, "addr": o.addr,
                            });
                        }
                    }
                    if let Some(l) = leader {
                        v["election"] = serde_json::json!(JsonLeader {
                            term: l.term,
                            value: l.value.clone(),
                            owner: l.owner.clone(),
                            lease_ms: l.lease_left.map(|d| d.as_millis()),
                        });
                    }
                    v
                }),
                Found::Free(name) => serde_json::to_value(free(name)),
                Found::Count(c) => serde_json::to_value(c),
                Found::Rate(r) => serde_json::to_value(r),
                Found::Failed(name, error) => {
                    Ok(serde_json::json!({ "name": name, "error": error }))
                }
            })
            .collect::<Result<_, _>>()
            .map_err(|e| CliError::Failed(e.to_string()))?;
        println!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| CliError::Failed(e.to_string()))?
        );
    } else {
        for f in &all {
            match f {
                Found::Lock(s, leader, who) => {
                    print(s, who);
                    if let Some(l) = leader {
                        println!(
                            "  election leader {} (value {:?}), term {}",
                            l.owner, l.value, l.term
                        );
                    }
                }
                Found::Free(name) => println!("{name}: free"),
                Found::Count(c) => match c.permits_held {
                    Some(n) => println!(
                        "{}: a permit-expirable semaphore, {} available, {n} held",
                        c.name,
                        c.count.max(0)
                    ),
                    None => println!(
                        "{}: a count of {} (a semaphore's available permits, or a count-down latch's count)",
                        c.name, c.count
                    ),
                },
                Found::Rate(r) => {
                    let keep = r
                        .keep_alive_ms
                        .map(|k| format!(", keep-alive {k} ms"))
                        .unwrap_or_default();
                    match r.available {
                        Some(n) => println!(
                            "{}: a rate limiter, {n} of {} permits available per {} ms (overall{keep})",
                            r.name, r.rate, r.interval_ms
                        ),
                        None => println!(
                            "{}: a rate limiter, {} permits per {} ms for each client (per client{keep})",
                            r.name, r.rate, r.interval_ms
                        ),
                    }
                }
                Found::Failed(name, error) => say(format_args!("{name}: {error}")),
            }
        }
    }
    // 2: could not tell for some name (1 means "free").
    let failed = all.iter().any(|f| matches!(f, Found::Failed(..)));
    Ok(if failed {
        2
    } else if held {
        0
    } else {
        1
    })
}

/// `relock force-unlock`: shows the holders, deletes the lock with `--yes`.
pub(crate) async fn force_unlock(args: ForceUnlockArgs) -> Result<u8, CliError> {
    let client = args.tls.connect(resolve_url(args.url.clone())).await?;
    let lock = client.fair_lock(&args.name);
    let r = async {
        let s = match lock.status().await {
            Ok(s) => s,
            // A data hash under the name (no lease, or fields that are not owners).
            Err(relock::Error::NotALock { key, found }) => {
                say(format_args!(
                    "`{key}` does not look like a lock ({found}): not deleted"
                ));
                return Ok(1);
            }
            Err(e) => return Err(e),
        };
        if !s.is_held() {
            println!("{}: free, nothing to delete", s.name);
            return Ok(0);
        }
        if let Some(h) = s
            .holders
            .iter()
            .find(|h| h.layout == relock::OwnerLayout::Unknown)
        {
            say(format_args!(
                "`{}` does not look like a lock (field `{}` is neither relock's nor Redisson's owner shape): not deleted",
                s.name, h.field
            ));
            return Ok(1);
        }
        if !args.yes {
            print(&s, &[]);
            say(format_args!("not deleted; pass --yes to delete `{}`", s.name));
            return Ok(1);
        }
        // A read-write lock's holders and waiters listen on its own channel: deleted through
        // it, so that they hear of it at once.
        let deleted = if s.mode.is_some() {
            client
                .read_write_lock(&args.name)
                .write_lock()
                .force_unlock()
                .await?
        } else {
            lock.force_unlock().await?
        };
        for h in &s.holders {
            println!(
                "deleted {}: holder {} ({}), count {}",
                s.name,
                h.field,
                relock_cli::shared::layout_name(h.layout),
                h.count
            );
        }
        if !deleted {
            println!("{}: released meanwhile, nothing deleted", s.name);
        }
        Ok::<u8, relock::Error>(0)
    }
    .await;
    client.shutdown().await;
    Ok(r?)
}

/// `relock status --quorum`: the lock on each master, and the verdict of a majority.
mod quorum {
    use std::time::Duration;

    use super::{json, lease_text, server_address, Json, StatusArgs};
    use relock_cli::shared::CliError;

    /// What a majority of the masters say about one lock.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
    #[serde(rename_all = "lowercase")]
    enum Verdict {
        /// One owner field is on a majority.
        Held,
        /// No field can reach a majority, even on the masters that did not answer.
        Free,
        /// Too many masters did not answer to tell.
        Unknown,
    }

    #[derive(serde::Serialize)]
    struct QuorumJson {
        name: String,
        verdict: Verdict,
        /// The field on a majority, when held.
        holder: Option<String>,
        masters: usize,
        majority: usize,
        /// Masters that answered and hold the majority's field (or, when not held, the most
        /// common field).
        held_on: usize,
        unreachable: usize,
        nodes: Vec<NodeJson>,
    }

    #[derive(serde::Serialize)]
    struct NodeJson {
        /// The master's URL, without credentials.
        url: String,
        /// What it holds, when it answered.
        status: Option<Json>,
        /// Why it did not answer.
        error: Option<String>,
    }

    /// Reads one lock on one master, within `limit` for the connection and the reads, with
    /// the command's TLS options. Errors in the command's words (its flags, not the library's).
    async fn read(
        url: &str,
        name: &str,
        limit: Duration,
        tls: &relock_cli::shared::TlsArgs,
    ) -> Result<relock::LockStatus, String> {
        let builder = relock::Client::builder()
            .url(url)
            .connect_timeout(limit)
            .command_timeout(limit)
            .connections(1);
        let client = tls.build(builder).await.map_err(|e| e.to_string())?;
        let s =
            tokio::time::timeout(limit.saturating_mul(4), client.fair_lock(name).status()).await;
        client.shutdown().await;
        match s {
            Ok(r) => r.map_err(|e| CliError::from(e).to_string()),
            Err(_) => Err(format!("no answer within {limit:?}")),
        }
    }

    /// The verdict on one lock from its per-master reads: the field with the most masters,
    /// and how many hold it.
    fn verdict(
        reads: &[Result<relock::LockStatus, String>],
    ) -> (Verdict, Option<String>, usize, usize) {
        let majority = reads.len() / 2 + 1;
        let unreachable = reads.iter().filter(|r| r.is_err()).count();
        let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
        for s in reads.iter().flatten() {
            for h in &s.holders {
                *counts.entry(h.field.as_str()).or_default() += 1;
            }
        }
        let best = counts
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(f, n)| (*f, *n));
        let most = best.map_or(0, |(_, n)| n);
        let verdict = if most >= majority {
            Verdict::Held
        } else if most + unreachable < majority {
            Verdict::Free
        } else {
            Verdict::Unknown
        };
        let holder = (verdict == Verdict::Held).then(|| best.map(|(f, _)| f.to_string()));
        (verdict, holder.flatten(), most, unreachable)
    }

    /// The same checks as `relock run --quorum`: at least 3 masters, none twice (one server
    /// listed twice would count its vote twice), a timeout above zero.
    fn validate(args: &StatusArgs) -> Result<(), CliError> {
        let urls: Vec<&str> = args.quorum.iter().map(|u| u.trim()).collect();
        if urls.len() < 3 || urls.iter().any(|u| u.is_empty()) {
            return Err(CliError::Failed(format!(
                "--quorum needs at least 3 master URLs separated by commas, got {:?}",
                urls.iter()
                    .map(|u| relock::redacted_url(u))
                    .collect::<Vec<_>>()
            )));
        }
        let mut seen = std::collections::HashSet::new();
        for u in &urls {
            let key = server_address(u).unwrap_or_else(|| u.to_ascii_lowercase());
            if !seen.insert(key) {
                return Err(CliError::Failed(format!(
                    "--quorum lists {} twice: each master may vote once",
                    relock::redacted_url(u)
                )));
            }
        }
        if args.node_timeout.is_zero() {
            return Err(CliError::Failed("--node-timeout must be above 0".into()));
        }
        Ok(())
    }

    pub(super) async fn status(args: &StatusArgs) -> Result<u8, CliError> {
        validate(args)?;
        let mut all = Vec::new();
        let mut code = 0u8;
        for name in &args.names {
            let reads = read_all(&args.quorum, name, args.node_timeout, &args.tls).await;
            let (verdict, holder, held_on, unreachable) = verdict(&reads);
            code = code.max(match verdict {
                Verdict::Held => 0,
                Verdict::Free => 1,
                Verdict::Unknown => 2,
            });
            all.push(QuorumJson {
                name: name.clone(),
                verdict,
                holder,
                masters: reads.len(),
                majority: reads.len() / 2 + 1,
                held_on,
                unreachable,
                nodes: args
                    .quorum
                    .iter()
                    .zip(&reads)
                    .map(|(url, r)| NodeJson {
                        url: relock::redacted_url(url),
                        status: r.as_ref().ok().map(json),
                        error: r.as_ref().err().cloned(),
                    })
                    .collect(),
            });
        }
        if args.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&all).map_err(|e| CliError::Failed(e.to_string()))?
            );
        } else {
            all.iter().for_each(print);
        }
        Ok(code)
    }

    fn print(q: &QuorumJson) {
        let head = match (q.verdict, &q.holder) {
            (Verdict::Held, Some(h)) => format!("held by {h}"),
            (Verdict::Held, None) | (Verdict::Free, _) => "free".into(),
            (Verdict::Unknown, _) => "unknown (too many masters did not answer)".into(),
        };
        println!(
            "{}: {head} — on {} of {} masters (majority {}), {} did not answer",
            q.name, q.held_on, q.masters, q.majority, q.unreachable
        );
        for n in &q.nodes {
            match (&n.status, &n.error) {
                (Some(s), _) if s.holders.is_empty() => println!("  {}: free", n.url),
                (Some(s), _) => {
                    let lease = lease_text(s.pttl_ms);
                    for h in &s.holders {
                        println!(
                            "  {}: holder {} ({}), count {}, {lease}{}",
                            n.url,
                            h.field,
                            h.layout,
                            h.count,
                            s.counter
                                .map_or(String::new(), |c| format!(", counter {c}"))
                        );
                    }
                }
                (None, Some(e)) => println!("  {}: no reading: {e}", n.url),
                (None, None) => println!("  {}: did not answer", n.url),
            }
        }
    }

    /// Reads `name` on every master at once, in the order of `urls`: a master that does not
    /// answer costs one timeout, not one per master.
    async fn read_all(
        urls: &[String],
        name: &str,
        limit: Duration,
        tls: &relock_cli::shared::TlsArgs,
    ) -> Vec<Result<relock::LockStatus, String>> {
        let tasks: Vec<_> = urls
            .iter()
            .map(|url| {
                let (url, name, tls) = (url.clone(), name.to_string(), tls.clone());
                tokio::spawn(async move { read(&url, &name, limit, &tls).await })
            })
            .collect();
        let mut out = Vec::with_capacity(tasks.len());
        for t in tasks {
            out.push(t.await.unwrap_or_else(|e| Err(format!("read failed: {e}"))));
        }
        out
    }
}

/// `host:port` of a Redis URL, lower-cased (6379 when it names no port): one server whatever
/// the URL's other parts (credentials, database, query).
fn server_address(url: &str) -> Option<String> {
    let u = url::Url::parse(url).ok()?;
    let host = match u.host()? {
        url::Host::Domain(d) => d.to_ascii_lowercase(),
        url::Host::Ipv4(a) => a.to_string(),
        url::Host::Ipv6(a) => a.to_string(),
    };
    Some(format!("{host}:{}", u.port().unwrap_or(6379)))
}
