//! `relock status NAME…` and `relock force-unlock NAME`: what Redis holds for a lock, and
//! deleting it by hand.

use crate::run::resolve_url;
use crate::{say, CliError};

/// Options of `relock status`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  relock status nightly-report            # exit 0 if held, 1 if free, 2 if it cannot tell
  relock status --json jobs:a jobs:b

A fair lock's line is shown too. An owner field is labelled relock or redisson by its shape
(<client id>:<n> with a large n, or <uuid>:<thread id>).")]
pub(crate) struct StatusArgs {
    /// The locks' names.
    #[arg(required = true)]
    names: Vec<String>,
    /// Redis URL; else RELOCK_URL, else REDIS_URL, else redis://127.0.0.1:6379.
    #[arg(long)]
    url: Option<String>,
    /// One JSON object per lock, in an array.
    #[arg(long)]
    json: bool,
}

/// Options of `relock force-unlock`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:
  relock force-unlock --yes nightly-report

Without --yes it only shows what it would delete. Holders learn of it at their next renewal
(their lost() fires); waiters are woken at once.")]
pub(crate) struct ForceUnlockArgs {
    /// The lock's name.
    name: String,
    /// Redis URL; else RELOCK_URL, else REDIS_URL, else redis://127.0.0.1:6379.
    #[arg(long)]
    url: Option<String>,
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
                layout: layout(h.layout),
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
    }
}

fn layout(l: relock::OwnerLayout) -> &'static str {
    match l {
        relock::OwnerLayout::Relock => "relock",
        relock::OwnerLayout::Redisson => "redisson",
        _ => "unknown",
    }
}

fn print(s: &relock::LockStatus) {
    if !s.is_held() {
        println!("{}: free", s.name);
    } else {
        let lease = match s.pttl_ms {
            Some(-1) => "no expiry".to_string(),
            Some(ms) => format!("{ms} ms left"),
            None => "gone".to_string(),
        };
        println!("{}: held, {lease}", s.name);
        for h in &s.holders {
            println!(
                "  holder {} ({}), count {}",
                h.field,
                layout(h.layout),
                h.count
            );
        }
    }
    if let Some(c) = s.counter {
        println!(
            "  fencing counter {c} ({} ms left)",
            s.counter_pttl_ms.unwrap_or(-2)
        );
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

/// `relock status`: exit 0 if every lock named is held, 1 otherwise.
pub(crate) async fn status(args: StatusArgs) -> Result<u8, CliError> {
    let client = relock::Client::connect(resolve_url(args.url)).await?;
    let mut all = Vec::new();
    let mut held = true;
    for name in &args.names {
        // The fair handle reads the line too; for a plain lock it is just empty.
        let s = client.fair_lock(name).status().await;
        let s = match s {
            Ok(s) => s,
            Err(e) => {
                client.shutdown().await;
                return Err(e.into());
            }
        };
        held &= s.is_held();
        all.push(s);
    }
    client.shutdown().await;
    if args.json {
        let out: Vec<Json> = all.iter().map(json).collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| CliError::Failed(e.to_string()))?
        );
    } else {
        all.iter().for_each(print);
    }
    Ok(if held { 0 } else { 1 })
}

/// `relock force-unlock`: shows the holders, deletes the lock with `--yes`.
pub(crate) async fn force_unlock(args: ForceUnlockArgs) -> Result<u8, CliError> {
    let client = relock::Client::connect(resolve_url(args.url)).await?;
    let lock = client.fair_lock(&args.name);
    let r = async {
        let s = lock.status().await?;
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
            print(&s);
            say(format_args!("not deleted; pass --yes to delete `{}`", s.name));
            return Ok(1);
        }
        let deleted = lock.force_unlock().await?;
        for h in &s.holders {
            println!(
                "deleted {}: holder {} ({}), count {}",
                s.name,
                h.field,
                layout(h.layout),
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
