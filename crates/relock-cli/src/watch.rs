//! `relock watch NAME`: a live view of one lock: acquisitions, releases, lease expiries,
//! re-entries and the fair line, one line per change.
//!
//! It refreshes on messages, never on a timer that polls: the lock's release channel (every
//! relock and Redisson release publishes there) and, when the server has them on, keyspace
//! notifications of the lock hash and the fair line. The one timer is the lease of the holder
//! last seen: when it runs out with no message, the lock is read once more, so that an expiry
//! shows even without keyspace notifications.
//!
//! Each message leads to one read of [`relock::Lock::status`], and the line printed is the
//! difference from the read before. The subscription is made before the first read, so a
//! change between the two is not missed.

use std::time::{Duration, SystemTime};

use fred::interfaces::{ClientLike, EventInterface, PubsubInterface};
use fred::types::{ClusterHash, CustomCommand};
use tokio::time::Instant;

use crate::run::resolve_url;
use crate::{say, CliError};

/// Options of `relock watch`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  relock watch nightly-report
  relock watch --json --enable-notifications jobs:a | jq .
  relock watch --count 1 deploy        # wait for the next change, then exit

Without keyspace notifications (notify-keyspace-events) the watch sees releases, expiries and
whoever holds the lock after them, but not a free lock being taken; --enable-notifications
turns them on (CONFIG SET, adding K, g, h, x and z to the server's flags).")]
pub(crate) struct Args {
    /// The lock's name.
    name: String,
    /// Redis URL; else RELOCK_URL, else REDIS_URL, else redis://127.0.0.1:6379.
    #[arg(long)]
    url: Option<String>,
    /// Exit after this many changes.
    #[arg(long)]
    count: Option<u64>,
    /// Exit after this long (e.g. 30s, 5m); default: until interrupted.
    #[arg(long = "for", value_parser = humantime::parse_duration)]
    duration: Option<Duration>,
    /// Turn on the keyspace notifications the watch needs, if they are off (CONFIG SET
    /// notify-keyspace-events, adding to what is set; it stays on after the watch).
    #[arg(long)]
    enable_notifications: bool,
    /// One JSON object per line.
    #[arg(long)]
    json: bool,
}

/// The keyspace event classes the watch reads: generic (del, expire), hash, expired, sorted set.
const NEEDED: [char; 4] = ['g', 'h', 'x', 'z'];

/// What woke the watch, strongest last: it names the change that the read then finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Cause {
    /// The holder's lease should have run out (the one timer).
    LeaseTimer,
    /// A message on the release channel.
    Channel,
    /// A keyspace event on the lock or its line; `taken` when it was a write that takes or
    /// re-enters a hold (hincrby, hset).
    Keyspace { taken: bool },
    /// The lock hash was deleted (force-unlock, DEL); a release's HDEL that empties the hash
    /// also sends `del`, after `hdel`, so it only names the change when no `hdel` came.
    Deleted,
    /// The lock hash expired.
    Expired,
    /// A hold's field was removed (`hdel`): a release.
    Released,
    /// The connection came back: anything may have happened meanwhile.
    Reconnected,
}

#[derive(serde::Serialize)]
struct Event<'a> {
    at: String,
    event: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    layout: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    count: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pttl_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    counter: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<Vec<&'a str>>,
}

impl<'a> Event<'a> {
    fn new(event: &'a str) -> Self {
        Event {
            at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            event,
            field: None,
            layout: None,
            count: None,
            pttl_ms: None,
            counter: None,
            line: None,
        }
    }

    fn holder(mut self, h: &'a relock::Holder, s: &relock::LockStatus) -> Self {
        self.field = Some(&h.field);
        self.layout = Some(layout(h.layout));
        self.count = Some(h.count);
        self.pttl_ms = s.pttl_ms;
        self.counter = s.counter;
        self
    }

    fn print(&self, json: bool) {
        if json {
            if let Ok(s) = serde_json::to_string(self) {
                println!("{s}");
            }
            return;
        }
        let mut out = format!("{} {:<9}", self.at, self.event);
        if let Some(f) = self.field {
            out.push_str(&format!(" {f} ({})", self.layout.unwrap_or("unknown")));
        }
        if let Some(c) = self.count {
            out.push_str(&format!(", count {c}"));
        }
        match self.pttl_ms {
            Some(-1) => out.push_str(", no expiry"),
            Some(ms) if self.count.is_some() => out.push_str(&format!(", {ms} ms left")),
            _ => {}
        }
        if let Some(c) = self.counter {
            out.push_str(&format!(", counter {c}"));
        }
        if let Some(line) = &self.line {
            if line.is_empty() {
                out.push_str(" nobody waiting");
            } else {
                out.push_str(&format!(" {} waiting: {}", line.len(), line.join(", ")));
            }
        }
        println!("{out}");
    }
}

fn layout(l: relock::OwnerLayout) -> &'static str {
    match l {
        relock::OwnerLayout::Relock => "relock",
        relock::OwnerLayout::Redisson => "redisson",
        _ => "unknown",
    }
}

/// The lines for the change from `before` to `now`, found by a read that `cause` prompted.
fn changes<'a>(
    before: &'a relock::LockStatus,
    now: &'a relock::LockStatus,
    cause: Cause,
) -> Vec<Event<'a>> {
    let mut out = Vec::new();
    for h in &before.holders {
        if !now.holders.iter().any(|n| n.field == h.field) {
            let what = match cause {
                Cause::Expired | Cause::LeaseTimer => "expired",
                Cause::Deleted => "deleted",
                _ => "released",
            };
            let mut e = Event::new(what);
            e.field = Some(&h.field);
            e.layout = Some(layout(h.layout));
            out.push(e);
        }
    }
    for h in &now.holders {
        match before.holders.iter().find(|b| b.field == h.field) {
            None => out.push(Event::new("acquired").holder(h, now)),
            Some(b) if b.count < h.count => out.push(Event::new("reentered").holder(h, now)),
            Some(b) if b.count > h.count => out.push(Event::new("unwound").holder(h, now)),
            Some(_) => {}
        }
    }
    let line = |s: &'a relock::LockStatus| s.queue.iter().map(|w| w.field.as_str()).collect();
    let (was, is): (Vec<&str>, Vec<&str>) = (line(before), line(now));
    if was != is {
        let mut e = Event::new("line");
        e.line = Some(is);
        out.push(e);
    }
    // A hold taken and let go between two reads leaves no holder to compare; the message that
    // woke the watch still says it happened.
    if before.holders.is_empty() && now.holders.is_empty() {
        if let Cause::Keyspace { taken: true } | Cause::Channel | Cause::Released = cause {
            out.insert(0, Event::new("passed"));
        }
    }
    out
}

/// `relock watch`: prints changes until `--count`, `--for`, SIGINT or SIGTERM; exit 0.
pub(crate) async fn watch(args: Args) -> Result<u8, CliError> {
    let url = resolve_url(args.url.clone());
    let client = relock::Client::builder()
        .url(url.as_str())
        .connections(1)
        .build()
        .await?;
    let r = watch_with(&client, &args).await;
    client.shutdown().await;
    r
}

async fn watch_with(client: &relock::Client, args: &Args) -> Result<u8, CliError> {
    let lock = client.fair_lock(&args.name);
    let names = lock.key_names()?;
    let conn = client.pool().next();
    let cluster = conn.is_clustered();
    let notifications = if cluster {
        // Keyspace notifications are per node and are not forwarded across a cluster.
        say(format_args!(
            "on a Redis Cluster the watch sees releases, expiries and holders after them, but not a free lock being taken"
        ));
        false
    } else {
        notifications(conn, args.enable_notifications).await?
    };

    // A subscriber of its own, with the client's settings (TLS, credentials, Sentinel), that
    // subscribes again after a reconnect.
    let sub = fred::clients::SubscriberClient::new(
        conn.client_config(),
        Some(conn.perf_config()),
        Some(conn.connection_config().clone()),
        conn.client_reconnect_policy(),
    );
    let mut messages = sub.message_rx();
    let mut keyspace = sub.keyspace_event_rx();
    let mut reconnects = sub.reconnect_rx();
    let init = tokio::time::timeout(Duration::from_secs(10), sub.init()).await;
    match init {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(CliError::Failed(format!("subscribing: {e}"))),
        Err(_) => {
            return Err(CliError::Failed(
                "subscribing: no connection within 10 s".into(),
            ))
        }
    }
    let manager = sub.manage_subscriptions();
    let r = async {
        let subscribed = if cluster {
            sub.ssubscribe(names.channel.as_str()).await
        } else {
            let db = conn.client_config().database.unwrap_or(0);
            let mut channels = vec![
                names.channel.clone(),
                format!("__keyspace@{db}__:{}", names.lock),
            ];
            if notifications {
                channels.extend(names.queue.iter().map(|q| format!("__keyspace@{db}__:{q}")));
            }
            sub.subscribe(channels).await
        };
        subscribed.map_err(|e| CliError::Failed(format!("subscribing: {e}")))?;
        // Subscribed first, read second: a change in between is in a message.
        let mut seen = lock.status().await?;
        snapshot(&seen, args.json);
        let stop_at = args.duration.map(|d| Instant::now() + d);
        let mut changed = 0u64;
        loop {
            if args.count.is_some_and(|n| changed >= n) {
                return Ok(0);
            }
            let lease_end = lease_end(&seen);
            let cause = tokio::select! {
                m = messages.recv() => match m {
                    Ok(_) => Cause::Channel,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => Cause::Reconnected,
                    Err(_) => return Err(CliError::Failed("the subscription ended".into())),
                },
                e = keyspace.recv() => match e {
                    Ok(e) => keyspace_cause(&e.operation),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => Cause::Reconnected,
                    Err(_) => return Err(CliError::Failed("the subscription ended".into())),
                },
                _ = reconnects.recv() => Cause::Reconnected,
                _ = sleep_until(lease_end) => Cause::LeaseTimer,
                _ = sleep_until(stop_at) => return Ok(0),
                _ = crate::signals::received() => return Ok(0),
            };
            // Everything else already delivered is folded into the same read.
            let mut cause = cause;
            while let Ok(m) = messages.try_recv() {
                let _ = m;
                cause = cause.max(Cause::Channel);
            }
            while let Ok(e) = keyspace.try_recv() {
                cause = cause.max(keyspace_cause(&e.operation));
            }
            let now = match lock.status().await {
                Ok(s) => s,
                Err(e) => {
                    say(format_args!("reading `{}`: {e}", args.name));
                    continue;
                }
            };
            for e in changes(&seen, &now, cause) {
                e.print(args.json);
                changed += 1;
            }
            seen = now;
        }
    }
    .await;
    manager.abort();
    let _ = sub.quit().await;
    r
}

fn keyspace_cause(operation: &str) -> Cause {
    match operation {
        "expired" => Cause::Expired,
        "del" => Cause::Deleted,
        "hdel" => Cause::Released,
        "hincrby" | "hset" => Cause::Keyspace { taken: true },
        _ => Cause::Keyspace { taken: false },
    }
}

/// When the lease of what `s` shows runs out (a few ms after, so that the read finds it gone).
fn lease_end(s: &relock::LockStatus) -> Option<Instant> {
    match s.pttl_ms {
        Some(ms) if ms >= 0 && s.is_held() => {
            Some(Instant::now() + Duration::from_millis(ms as u64 + 5))
        }
        _ => None,
    }
}

async fn sleep_until(t: Option<Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

fn snapshot(s: &relock::LockStatus, json: bool) {
    if s.holders.is_empty() {
        let mut e = Event::new("free");
        e.counter = s.counter;
        e.print(json);
    }
    for h in &s.holders {
        Event::new("held").holder(h, s).print(json);
    }
    if !s.queue.is_empty() {
        let mut e = Event::new("line");
        e.line = Some(s.queue.iter().map(|w| w.field.as_str()).collect());
        e.print(json);
    }
}

/// Whether keyspace notifications of the classes the watch needs are on; turns them on when
/// `enable` (adding to the server's flags, never removing one). Without them, says what the
/// watch will miss.
async fn notifications(conn: &fred::clients::Client, enable: bool) -> Result<bool, CliError> {
    let get = CustomCommand::new_static("CONFIG", ClusterHash::FirstKey, false);
    let flags: Result<Vec<String>, _> = conn
        .custom(get, vec!["GET", "notify-keyspace-events"])
        .await;
    let flags = match flags {
        Ok(v) => v.get(1).cloned().unwrap_or_default(),
        Err(e) => {
            say(format_args!(
                "cannot read notify-keyspace-events ({e}); watching releases only"
            ));
            return Ok(false);
        }
    };
    let has =
        |f: &str| f.contains('K') && (f.contains('A') || NEEDED.iter().all(|c| f.contains(*c)));
    if has(&flags) {
        return Ok(true);
    }
    if !enable {
        say(format_args!(
            "keyspace notifications are off (notify-keyspace-events=\"{flags}\"): a free lock being taken is not seen, only releases, expiries and the holders after them; pass --enable-notifications to turn them on"
        ));
        return Ok(false);
    }
    let mut wanted = flags.clone();
    for c in std::iter::once('K').chain(NEEDED) {
        if !wanted.contains(c) {
            wanted.push(c);
        }
    }
    let set = CustomCommand::new_static("CONFIG", ClusterHash::FirstKey, false);
    let r: Result<String, _> = conn
        .custom(set, vec!["SET", "notify-keyspace-events", wanted.as_str()])
        .await;
    match r {
        Ok(_) => {
            say(format_args!(
                "keyspace notifications turned on: notify-keyspace-events=\"{wanted}\" (was \"{flags}\")"
            ));
            Ok(true)
        }
        Err(e) => Err(CliError::Failed(format!(
            "could not turn keyspace notifications on (CONFIG SET notify-keyspace-events {wanted}): {e}"
        ))),
    }
}
