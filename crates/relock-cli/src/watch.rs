//! `relock watch NAME`: a live view of one lock: acquisitions, releases, lease expiries,
//! re-entries and the fair line, one line per change.
//!
//! It refreshes on messages, never on a timer that polls: the lock's release channel (every
//! relock and Redisson release publishes there; a read-write lock's channel of its own is
//! heard too, as a cue to read) and, when the server has them on, keyspace
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
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;

use relock_cli::shared::resolve_url;
use relock_cli::shared::{say, CliError};

/// Options of `relock watch`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  relock watch nightly-report
  relock watch --json --enable-notifications jobs:a | jq .
  relock watch --count 1 deploy        # wait for the next change, then exit
  relock watch --election scheduler    # an election's leaders, terms and values

Without keyspace notifications (notify-keyspace-events) the watch sees releases, expiries and
whoever holds the lock after them, but not a free lock being taken; --enable-notifications
turns them on (CONFIG SET, adding K, g, h, x and z to the server's flags).")]
pub(crate) struct Args {
    /// The lock's name.
    name: String,
    /// Redis URL; else RELOCK_URL, else REDIS_URL, else redis://127.0.0.1:6379.
    #[arg(long)]
    url: Option<String>,
    #[command(flatten)]
    tls: relock_cli::shared::TlsArgs,
    /// Exit after this many changes.
    #[arg(long)]
    count: Option<u64>,
    /// Exit after this long (e.g. 30s, 5m); default: until interrupted.
    #[arg(long = "for", value_parser = relock_cli::shared::parse_duration)]
    duration: Option<Duration>,
    /// Turn on the keyspace notifications the watch needs, if they are off (CONFIG SET
    /// notify-keyspace-events, adding to what is set; it stays on after the watch).
    #[arg(long)]
    enable_notifications: bool,
    /// One JSON object per line.
    #[arg(long)]
    json: bool,
    /// Watch NAME as an election (`relock elect`, `client.election`): its leaders, their terms
    /// and values (elected, value, resigned, expired) instead of its lock's holders.
    #[arg(long, conflicts_with = "enable_notifications")]
    election: bool,
}

/// The keyspace event classes the watch reads: generic (del, expire), hash, expired, sorted set.
const NEEDED: [char; 4] = ['g', 'h', 'x', 'z'];

/// What one batch of messages said happened, before the read that follows it.
#[derive(Debug, Default, Clone, Copy)]
struct Batch {
    /// Messages on the release channel: one per release (Redisson's `0`, or for a fair lock
    /// the field of the waiter it wakes) and per force-unlock. (A fair line's eviction also
    /// wakes its new first waiter; those are rare.)
    unlock_messages: u64,
    /// A field of the lock hash was set or incremented (`hset`, `hincrby`): a take, a
    /// re-entry, or Redisson's decrement before its `del`.
    take: bool,
    /// A field of the lock hash was removed (`hdel`): relock's release.
    hdel: bool,
    /// The lock hash was deleted (`del`): after a release's last field, or by force-unlock.
    del: bool,
    /// A `del` not right after a field's removal (`hdel`, or Redisson's `hincrby -1`):
    /// force-unlock. Decided on the order of the events, across batches.
    bare_del: bool,
    /// The last event on the lock hash removed or decremented a field (so a `del` right after
    /// it is that release's); carried from one batch to the next.
    after_release_op: bool,
    /// The lock hash expired.
    expired: bool,
    /// The lease last seen should have run out (the one timer).
    lease_timer: bool,
    /// The connection came back: anything may have happened meanwhile.
    reconnected: bool,
}

impl Batch {
    /// A message on a subscribed channel. The lock's channel has one per release, counted; a
    /// read-write lock's only asks for a read: its read releases publish only when the lock's
    /// life shortens or it ends, so its messages are not one per release.
    fn message(&mut self, m: &fred::types::Message, rw_channel: &str) {
        if &*m.channel != rw_channel {
            self.unlock_messages += 1;
        }
    }

    fn keyspace(&mut self, e: &fred::types::KeyspaceEvent, lock: &str) {
        if e.key.as_str() != Some(lock) {
            return; // the fair line: the read shows it
        }
        let op = e.operation.as_str();
        match op {
            "hset" | "hincrby" | "hincrbyfloat" => self.take = true,
            "hdel" => self.hdel = true,
            "del" => {
                self.bare_del |= !self.after_release_op;
                self.del = true;
            }
            "expired" => self.expired = true,
            _ => {}
        }
        // `hincrby` is a take or Redisson's decrement before its `del`: both may precede one.
        self.after_release_op = matches!(op, "hdel" | "hincrby");
    }

    /// The word for a holder that the read no longer finds.
    fn gone(&self) -> &'static str {
        if self.reconnected {
            "gone" // while disconnected: released, expired or lost with the server's data
        } else if self.bare_del {
            "deleted" // a DEL with no field change before it: force-unlock
        } else if (self.expired || self.lease_timer) && !self.hdel && !self.del {
            "expired"
        } else {
            "released"
        }
    }
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
        self.layout = Some(relock_cli::shared::layout_name(h.layout));
        self.count = Some(h.count);
        self.pttl_ms = s.pttl_ms;
        self.counter = s.counter;
        self
    }

    /// The line to print, ending with a newline.
    fn line(&self, json: bool) -> String {
        let mut text = if json {
            serde_json::to_string(self).unwrap_or_default()
        } else {
            self.text()
        };
        text.push('\n');
        text
    }

    /// Prints the line; false when stdout is closed (unlike `println!`, never panics).
    fn print(&self, json: bool) -> bool {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        out.write_all(self.line(json).as_bytes())
            .and_then(|()| out.flush())
            .is_ok()
    }

    fn text(&self) -> String {
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
        out
    }
}

/// The lines for the change from `before` to `now`, found by the read after `batch`.
fn changes<'a>(
    before: &'a relock::LockStatus,
    now: &'a relock::LockStatus,
    batch: &Batch,
) -> Vec<Event<'a>> {
    let mut out = Vec::new();
    for h in &before.holders {
        if !now.holders.iter().any(|n| n.field == h.field) {
            let mut e = Event::new(batch.gone());
            e.field = Some(&h.field);
            e.layout = Some(relock_cli::shared::layout_name(h.layout));
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
    out
}

/// Holds taken and let go between two reads: every release and force-unlock sends one message
/// on the lock's channel, so the messages that the reads did not account for (as `released` or
/// `deleted` lines) are holds nobody saw. The messages of one script can come before or after
/// the read that shows its release, so this is a running balance.
#[derive(Debug, Default)]
struct Unseen {
    balance: i64,
}

impl Unseen {
    /// How many holds passed unseen, given the batch and the releases its read showed.
    fn passed(&mut self, batch: &Batch, shown_releases: usize) -> u64 {
        if batch.reconnected {
            self.balance = 0; // messages may have been lost with the connection
            return 0;
        }
        self.balance += batch.unlock_messages as i64 - shown_releases as i64;
        if self.balance > 0 {
            let n = self.balance as u64;
            self.balance = 0;
            n
        } else {
            0
        }
    }
}

/// `relock watch`: prints changes until `--count`, `--for`, SIGINT or SIGTERM; exit 0.
pub(crate) async fn watch(args: Args) -> Result<u8, CliError> {
    let url = resolve_url(args.url.clone());
    let client = args
        .tls
        .build(relock::Client::builder().url(url.as_str()).connections(1))
        .await?;
    let r = if args.election {
        watch_election(&client, &args).await
    } else {
        watch_with(&client, &args).await
    };
    // It holds nothing, so there is nothing to wait for when the server is gone.
    let _ = tokio::time::timeout(Duration::from_secs(1), client.shutdown()).await;
    r
}

/// One change of an election, as `relock watch --election` prints it.
#[derive(serde::Serialize)]
struct ElectionLine {
    at: String,
    event: &'static str,
    term: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    owner: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lease_ms: Option<u128>,
}

impl ElectionLine {
    fn of(e: &relock::LeaderEvent) -> Option<Self> {
        let at = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
        let leader = |event, l: &relock::Leader| ElectionLine {
            at: at.clone(),
            event,
            term: l.term,
            value: Some(l.value.clone()),
            owner: Some(l.owner.clone()),
            lease_ms: l.lease_left.map(|d| d.as_millis()),
        };
        let ended = |event, term| ElectionLine {
            at: at.clone(),
            event,
            term,
            value: None,
            owner: None,
            lease_ms: None,
        };
        Some(match e {
            relock::LeaderEvent::Elected(l) => leader("elected", l),
            relock::LeaderEvent::ValueChanged(l) => leader("value", l),
            relock::LeaderEvent::Resigned { term } => ended("resigned", *term),
            relock::LeaderEvent::Expired { term } => ended("expired", *term),
            _ => return None,
        })
    }

    fn line(&self, json: bool) -> String {
        let mut out = if json {
            serde_json::to_string(self).unwrap_or_default()
        } else {
            let mut t = format!("{} {:<9} term {}", self.at, self.event, self.term);
            if let (Some(v), Some(o)) = (&self.value, &self.owner) {
                t.push_str(&format!(", value {v:?}, leader {o}"));
            }
            t
        };
        out.push('\n');
        out
    }
}

/// `relock watch --election`: the election's changes, from [`relock::Election::observe`]
/// (its messages and its lock's, re-read after a reconnect and at the leader's lease end).
async fn watch_election(client: &relock::Client, args: &Args) -> Result<u8, CliError> {
    let election = client.election(&args.name);
    let mut stop = std::pin::pin!(relock_cli::shared::signals::received());
    let stop_at = args.duration.and_then(|d| Instant::now().checked_add(d));
    // The state at start, not counted as a change (as the lock's watch prints its holder);
    // the observation reports what changed since that read, so a term that ends before its
    // first read is still shown ending.
    let now = election.leader().await?;
    let mut changes = election.observe_since(now.clone());
    let at = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
    let snapshot = match &now {
        Some(l) => ElectionLine {
            event: "leader",
            ..ElectionLine::of(&relock::LeaderEvent::Elected(l.clone())).expect("a line")
        },
        None => ElectionLine {
            at,
            event: "no leader",
            term: 0,
            value: None,
            owner: None,
            lease_ms: None,
        },
    };
    if !write_line(snapshot.line(args.json)).await {
        return Ok(0);
    }
    let mut changed = 0u64;
    loop {
        if args.count.is_some_and(|n| changed >= n) {
            return Ok(0);
        }
        let next = tokio::select! {
            n = changes.next() => n,
            _ = sleep_until(stop_at) => return Ok(0),
            _ = &mut stop => return Ok(0),
        };
        let Some(event) = next else { return Ok(0) };
        let Some(line) = ElectionLine::of(&event?) else {
            continue;
        };
        let written = tokio::select! {
            r = write_line(line.line(args.json)) => r,
            _ = &mut stop => return Ok(0),
        };
        if !written {
            return Ok(0);
        }
        changed += 1;
    }
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
    // A read-write lock's releases go to a channel of its own (Redisson's `redisson_rwlock`,
    // named as the lock's channel is): heard too, so that its holds show without keyspace
    // notifications (and on a Cluster, which never forwards them).
    let rw_channel = names
        .channel
        .replacen("redisson_lock__channel:", "redisson_rwlock:", 1);
    let r = async {
        let subscribed = if cluster {
            sub.ssubscribe(vec![names.channel.clone(), rw_channel.clone()])
                .await
        } else {
            let db = conn.client_config().database.unwrap_or(0);
            let mut channels = vec![
                names.channel.clone(),
                rw_channel.clone(),
                format!("__keyspace@{db}__:{}", names.lock),
            ];
            if notifications {
                channels.extend(names.queue.iter().map(|q| format!("__keyspace@{db}__:{q}")));
            }
            sub.subscribe(channels).await
        };
        subscribed.map_err(|e| CliError::Failed(format!("subscribing: {e}")))?;
        // Subscribed first, read second: a change in between is in a message. The read below
        // is after any (re)connection so far: the connection's own events up to here (fred
        // reports the first connection as one) say nothing the read does not show.
        while reconnects.try_recv().is_ok() {}
        let mut stop = std::pin::pin!(relock_cli::shared::signals::received());
        let mut seen = tokio::select! {
            r = lock.status() => r?,
            _ = &mut stop => return Ok(0),
        };
        if !snapshot(&seen, args.json) {
            return Ok(0);
        }
        let stop_at = args.duration.and_then(|d| Instant::now().checked_add(d));
        let mut changed = 0u64;
        let mut unseen = Unseen::default();
        let mut errors = sub.error_rx();
        let mut troubled = false;
        let mut after_release_op = false;
        loop {
            if args.count.is_some_and(|n| changed >= n) {
                return Ok(0);
            }
            let lease_end = lease_end(&seen);
            let mut batch = Batch {
                after_release_op,
                ..Batch::default()
            };
            tokio::select! {
                m = messages.recv() => match m {
                    Ok(m) => batch.message(&m, &rw_channel),
                    Err(RecvError::Lagged(_)) => batch.reconnected = true,
                    Err(_) => return Err(CliError::Failed("the subscription ended".into())),
                },
                e = keyspace.recv() => match e {
                    Ok(e) => batch.keyspace(&e, &names.lock),
                    Err(RecvError::Lagged(_)) => batch.reconnected = true,
                    Err(_) => return Err(CliError::Failed("the subscription ended".into())),
                },
                _ = reconnects.recv() => batch.reconnected = true,
                e = errors.recv() => {
                    // Once per outage, not once per reconnect attempt.
                    if let (Ok((e, _)), false) = (e, troubled) {
                        say(format_args!("connection trouble ({e}); the view resumes when it is back"));
                        troubled = true;
                    }
                    continue;
                }
                _ = sleep_until(lease_end) => batch.lease_timer = true,
                _ = sleep_until(stop_at) => return Ok(0),
                _ = &mut stop => return Ok(0),
            };
            // Whatever else has already arrived goes into the same read (never waiting for
            // more: a short hold would be over before the read).
            loop {
                if let Ok(m) = messages.try_recv() {
                    batch.message(&m, &rw_channel);
                } else if let Ok(e) = keyspace.try_recv() {
                    batch.keyspace(&e, &names.lock);
                } else {
                    break;
                }
            }
            let now = tokio::select! {
                r = lock.status() => r,
                _ = &mut stop => return Ok(0),
            };
            let now = match now {
                Ok(s) => {
                    troubled = false;
                    s
                }
                Err(e) => {
                    say(format_args!("reading `{}`: {e}", args.name));
                    continue;
                }
            };
            after_release_op = batch.after_release_op;
            let mut events = changes(&seen, &now, &batch);
            // A read-write lock's releases are not one message each: they are not counted, and
            // its shown releases must not leave the balance owing.
            let shown = if seen.mode.is_some() || now.mode.is_some() {
                0
            } else {
                events
                    .iter()
                    .filter(|e| e.event == "released" || e.event == "deleted")
                    .count()
            };
            for _ in 0..unseen.passed(&batch, shown) {
                events.insert(0, Event::new("passed"));
            }
            for e in events {
                if args.count.is_some_and(|n| changed >= n) {
                    break;
                }
                // Written without blocking the loop: a reader that stops reading (a full pipe)
                // must not keep a SIGTERM from ending the watch.
                let line = e.line(args.json);
                let written = tokio::select! {
                    r = write_line(line) => r,
                    _ = &mut stop => return Ok(0),
                };
                if !written {
                    return Ok(0); // stdout closed (`| head`): nobody is reading
                }
                changed += 1;
            }
            seen = now;
        }
    }
    .await;
    manager.abort();
    let _ = tokio::time::timeout(Duration::from_secs(1), sub.quit()).await;
    r
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

/// Prints the state at start; false when stdout is closed.
/// Writes `line` to stdout; false when stdout is closed.
async fn write_line(line: String) -> bool {
    use tokio::io::AsyncWriteExt;
    let mut out = tokio::io::stdout();
    out.write_all(line.as_bytes()).await.is_ok() && out.flush().await.is_ok()
}

fn snapshot(s: &relock::LockStatus, json: bool) -> bool {
    let mut printed = true;
    if s.holders.is_empty() {
        let mut e = Event::new("free");
        e.counter = s.counter;
        printed &= e.print(json);
    }
    for h in &s.holders {
        printed &= Event::new("held").holder(h, s).print(json);
    }
    if !s.queue.is_empty() {
        let mut e = Event::new("line");
        e.line = Some(s.queue.iter().map(|w| w.field.as_str()).collect());
        printed &= e.print(json);
    }
    printed
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
