//! A toy ticket lock (test-only): an exclusive kind that follows `docs/architecture.md`'s "What a
//! new kind adds", with an acquire reply and channel messages of its own.
//!
//! Waiters join a line in arrival order (`toy_ticket_line:{name}`); a free lock goes to the first
//! of the line. The acquire script replies `[1, token]` (granted), `[0, pttl]` (held, nobody
//! ahead) or `[2, n]` (`n` waiters ahead). Its channel (`toy_ticket__channel:{name}`) carries
//! `next` (one waiter looks) and `all` (every waiter looks).
// Nothing here is reachable from outside the crate: the kind is compiled for tests only.
#![allow(unreachable_pub)]

use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::client::handle::Client;
use crate::client::inner::Inner;
use crate::client::pubsub::Subscription;
use crate::client::scripts;
use crate::client::scripts::Script;
use crate::error::Result;
use crate::exclusive::acquire::{acquire_exclusive, acquire_spans, ExclusiveAcquire, Plan};
use crate::exclusive::attempt::{attempt, read_grant, AcquireCall, Attempt, Fresh, Reply};
use crate::exclusive::wait::{self, Start};
use crate::exclusive::{hash_field_holds, queries};
use crate::hold::distributed_lock;
use crate::hold::guard::LockGuard;
use crate::hold::keys::prefixed;
use crate::hold::kind::{CallContext, HoldKind, LockKeys, ScriptCall};
use crate::hold::reentry::{self, Target};
use crate::hold::wake::{Format, Waiters, Waking};

scripts::scripts! {
    /// Toy ticket lock: take the lock if free and first in line, else join (or keep) the line.
    TOY_TICKET_ACQUIRE = writes "toy_ticket_acquire.lua" ["mint", "shape"];
    /// Toy ticket lock: drop a hold; on the last count, tell the waiters.
    TOY_TICKET_RELEASE = writes "toy_ticket_release.lua" ["release"];
    /// Toy ticket lock: a waiter that gave up leaves the line.
    TOY_TICKET_LEAVE = writes "toy_ticket_leave.lua" [];
}

/// How long a waiter keeps its place in line without attempting again: a waiter that died
/// stops holding up the line after this.
const WAITER_TIMEOUT: Duration = Duration::from_secs(3);

/// The longest a waiter sleeps between attempts: well inside [`WAITER_TIMEOUT`], so that a
/// live waiter keeps its place, and the bound on a lost message.
const RECHECK: Duration = Duration::from_secs(1);

// --- The channel's format -------------------------------------------------------------------

/// The ticket lock channel's format.
pub(crate) static TICKET_CHANNEL: Format =
    Format::new("toy_ticket", || Arc::new(TicketChannel::default()));

/// One ticket channel's state: the messages so far, so that a woken waiter that is not first
/// passes its wake-up on at most once per message.
#[derive(Debug, Default)]
pub(crate) struct TicketChannel {
    messages: AtomicU64,
}

/// What one message on the channel says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Message {
    /// `next`: one waiter looks.
    Next,
    /// `all`, or anything else (a force-unlock's `0`): every waiter looks.
    All,
}

/// Reads one message: any text is one of the two.
pub(crate) fn read_message(payload: &str) -> Message {
    if payload == "next" {
        Message::Next
    } else {
        Message::All
    }
}

impl Waking for TicketChannel {
    fn deliver(&self, payload: &str, waiters: &dyn Waiters) {
        self.messages.fetch_add(1, Ordering::SeqCst);
        match read_message(payload) {
            Message::Next => waiters.one(),
            Message::All => waiters.all(true),
        }
    }
}

/// A waiter woken by a message that found others ahead: the message was for another local
/// waiter, so pass the wake-up on, at most once per message (`passed`: the last one passed).
fn pass_on(sub: &Subscription, passed: &mut u64) {
    let Some(channel) = sub.waking::<TicketChannel>() else {
        return;
    };
    let seen = channel.messages.load(Ordering::SeqCst);
    if seen != *passed {
        *passed = seen;
        sub.wake_next();
    }
}

// --- Keys and the holds' kind -----------------------------------------------------------------

/// The line of the lock `name` (field → arrival) and its heartbeats (field → deadline).
fn line_keys(name: &str) -> [String; 2] {
    [
        prefixed("toy_ticket_line", name),
        prefixed("toy_ticket_alive", name),
    ]
}

/// The keys of the ticket lock `name`: Redisson's lock hash and fencing counter, its own channel.
fn ticket_keys(name: &str) -> Result<LockKeys> {
    LockKeys::publishing_on(name, &TICKET, "toy_ticket__channel")
}

/// The ticket lock's holds: one field of the lock's hash (renewed as a plain hold), released by
/// its own script, which tells the line.
#[derive(Debug)]
pub(crate) struct Ticket;

/// The ticket lock's [`HoldKind`].
pub(crate) static TICKET: Ticket = Ticket;

impl HoldKind for Ticket {
    fn label(&self) -> &'static str {
        "toy_ticket"
    }

    fn release(&self, keys: &LockKeys, field: &str, all: bool, ctx: &CallContext) -> ScriptCall {
        let [line, _] = line_keys(&keys.lock);
        ScriptCall {
            script: &TOY_TICKET_RELEASE,
            keys: vec![keys.lock.clone(), line],
            args: vec![
                field.to_string(),
                hash_field_holds::release_mode(all).into(),
                ctx.publish.into(),
                keys.channel.clone(),
            ],
            coalesce: None,
        }
    }

    fn renewal_group(&self) -> &'static str {
        hash_field_holds::LOCK_HOLDS
    }

    fn renew(&self, batch: &[(&LockKeys, &str)], lease_ms: u64, _: &CallContext) -> ScriptCall {
        hash_field_holds::renew(batch, lease_ms)
    }

    fn wake(&self) -> Format {
        TICKET_CHANNEL
    }
}

// --- The attempt and its reply ------------------------------------------------------------------

/// What the ticket lock's reply says beyond granted or held: this many waiters are ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ahead(pub(crate) u64);

/// Reads `toy_ticket_acquire.lua`'s reply: `[2, n]` first, then the shapes every lock shares.
pub(crate) fn read_reply(reply: &[i64]) -> Reply<Ahead> {
    match *reply {
        [2, n] if n > 0 => Reply::Kind(Ahead(n as u64)),
        [2, _] => Reply::Unexpected,
        _ => read_grant(reply),
    }
}

/// The ticket lock's attempt: `try` (never joins the line) or as a waiter (`join`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TicketCall {
    join: bool,
}

impl AcquireCall for TicketCall {
    type Outcome = Ahead;

    fn call(
        &self,
        _: &Inner,
        keys: &LockKeys,
        _: &str,
        args: &mut Vec<String>,
    ) -> (&'static Script, Vec<String>) {
        let [line, alive] = line_keys(&keys.lock);
        args.extend([
            if self.join { "wait" } else { "try" }.to_string(),
            WAITER_TIMEOUT.as_millis().to_string(),
        ]);
        (
            &TOY_TICKET_ACQUIRE,
            vec![keys.lock.clone(), keys.token.clone(), line, alive],
        )
    }

    fn read(&self, reply: &[i64], _: tokio::time::Instant) -> Reply<Ahead> {
        read_reply(reply)
    }

    fn wake(&self) -> Format {
        TICKET_CHANNEL
    }
}

// --- The wait -------------------------------------------------------------------------------------

/// The fields a waiter put in line; those it did not leave by a grant leave when it goes (in a
/// tracked task), so a waiter that gave up does not hold up the line until its timeout.
struct InLine {
    inner: Arc<Inner>,
    keys: Arc<LockKeys>,
    fields: Vec<String>,
}

impl Drop for InLine {
    fn drop(&mut self) {
        if self.fields.is_empty() {
            return;
        }
        let (inner, keys, fields) = (
            self.inner.clone(),
            self.keys.clone(),
            std::mem::take(&mut self.fields),
        );
        let tracker = inner.shared().tracker.clone();
        tracker.spawn(async move {
            let [line, alive] = line_keys(&keys.lock);
            for field in fields {
                let _: std::result::Result<i64, _> = TOY_TICKET_LEAVE
                    .run(
                        inner.conn(),
                        vec![keys.lock.clone(), line.clone(), alive.clone()],
                        vec![field, inner.publish_cmd().into(), keys.channel.clone()],
                    )
                    .await;
            }
        });
    }
}

/// The ticket lock's wait: the shared start (a `try` attempt, then the subscription), then
/// attempts as a waiter in line, each followed by a park until a message or [`RECHECK`].
async fn ticket_wait(
    inner: &Arc<Inner>,
    keys: Arc<LockKeys>,
    mut fresh: Fresh,
    wait: Option<Duration>,
) -> Result<Option<LockGuard>> {
    let first = TicketCall { join: false };
    let (sub, deadline) = match wait::start(inner, &keys, &mut fresh, first, wait).await? {
        Start::Acquired(g) => return Ok(Some(g)),
        Start::GaveUp => return Ok(None),
        Start::Wait { sub, deadline, .. } => (sub, deadline),
    };
    let mut in_line = InLine {
        inner: inner.clone(),
        keys: keys.clone(),
        fields: Vec::new(),
    };
    let mut warned = false;
    let mut woken_by_message = false;
    let mut passed = 0;
    loop {
        let mut woken = pin!(sub.notified());
        woken.as_mut().enable();
        if !in_line.fields.contains(&fresh.field) {
            // Before the call: if its reply is lost, the field may be in line.
            in_line.fields.push(fresh.field.clone());
        }
        let sleep = match attempt(inner, &keys, &fresh, TicketCall { join: true }).await {
            Err(e) => {
                woken_by_message = false;
                fresh.after_error(inner, e).await?;
                continue;
            }
            Ok(Attempt::Acquired(g)) => {
                in_line.fields.retain(|f| *f != fresh.field);
                return Ok(Some(g));
            }
            Ok(Attempt::Held(p)) if p > 0 => Duration::from_millis(p as u64 + 1).min(RECHECK),
            Ok(Attempt::Held(-1)) => RECHECK,
            Ok(Attempt::Held(_)) => continue,
            Ok(Attempt::Kind(Ahead(_))) => {
                if std::mem::take(&mut woken_by_message) {
                    pass_on(&sub, &mut passed);
                }
                RECHECK
            }
        };
        fresh.succeeded();
        fresh.refused("held");
        reentry::warn_if_waiting_on_own_task(&inner.shared().holds, &keys.lock, &mut warned);
        match inner.park(sleep, deadline, woken).await? {
            None => return Ok(None),
            Some(w) => woken_by_message = w,
        }
    }
}

// --- The handle -------------------------------------------------------------------------------------

/// A toy ticket lock: first come, first served, through a line of its own.
#[derive(Debug, Clone)]
pub(crate) struct TicketLock {
    inner: Arc<Inner>,
    name: Arc<str>,
    /// The keys, or `None` for a bad name (reported by the first operation).
    keys: Option<Arc<LockKeys>>,
    lease: Option<Duration>,
}

impl Client {
    /// A handle to the toy ticket lock called `name`.
    pub(crate) fn toy_ticket_lock(&self, name: impl Into<String>) -> TicketLock {
        let name = self.inner.named(name.into());
        TicketLock {
            inner: self.inner.clone(),
            keys: ticket_keys(&name).ok().map(Arc::new),
            name: name.into(),
            lease: None,
        }
    }
}

impl TicketLock {
    fn keys(&self) -> Result<Arc<LockKeys>> {
        queries::keys(&self.keys, || ticket_keys(&self.name))
    }

    async fn acquire(&self, wait: Option<Duration>) -> Result<Option<LockGuard>> {
        let inner = &self.inner;
        // The spans are made here (a macro), so their target is this module.
        let name = &*self.name;
        let lock = ExclusiveAcquire {
            inner,
            keys: self.keys(),
            lease: self.lease,
            spans: acquire_spans!(name),
        };
        let plan = |keys: &Arc<LockKeys>| {
            Ok(
                match reentry::resolve(
                    inner.shared().id,
                    inner.settings().reentrancy,
                    &inner.shared().holds,
                    &keys.lock,
                )? {
                    Target::Reenter(hold) => Plan::Reenter(hold),
                    Target::Fresh { owner } => Plan::Fresh { owner, with: () },
                },
            )
        };
        acquire_exclusive(lock, wait, plan, |keys, fresh, (), wait| {
            ticket_wait(inner, keys, fresh, wait)
        })
        .await
    }

    /// Whether anyone holds it.
    pub(crate) async fn is_locked(&self) -> Result<bool> {
        queries::is_locked(&self.inner, &*self.keys()?).await
    }

    /// Deletes it whoever holds it, and wakes its waiters.
    pub(crate) async fn force_unlock(&self) -> Result<bool> {
        queries::force_unlock(&self.inner, self.keys(), |keys, ctx| {
            queries::delete_and_publish(keys, ctx, true)
        })
        .await
    }

    /// How many waiters are in its line.
    pub(crate) async fn waiting(&self) -> Result<u64> {
        use fred::interfaces::SortedSetsInterface;
        let [line, _] = line_keys(&self.keys()?.lock);
        self.inner
            .pool()
            .next()
            .zcard(line.as_str())
            .await
            .map_err(|e| self.inner.error("zcard", &line, e))
    }

    fn resource(&self) -> String {
        queries::resource(&self.inner, &self.name)
    }

    fn resources(&self) -> Vec<String> {
        vec![self.resource()]
    }
}

distributed_lock::lock_methods!(
    TicketLock,
    errors: "As [`Lock::lock`](crate::Lock::lock).",
    cancel: "As [`Lock::lock`](crate::Lock::lock); a waiter that gives up leaves the line.",
    doc_make: "let client = relock::Client::connect(&url).await?; let make = |name: &str| client.toy_ticket_lock(name);"
);

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::Mutex;

    use relock_testkit::{wait_until, RedisServer, Value};

    #[test]
    fn next_wakes_one_and_anything_else_wakes_all() {
        assert_eq!(read_message("next"), Message::Next);
        assert_eq!(read_message("all"), Message::All);
        // A force-unlock's message, and text no script sends.
        assert_eq!(read_message("0"), Message::All);
        assert_eq!(read_message(""), Message::All);
    }

    #[test]
    fn replies_read_as_granted_held_or_waiters_ahead() {
        assert_eq!(
            read_reply(&[1, 7]),
            Reply::Granted {
                token: 7,
                handed_ms: None
            }
        );
        assert_eq!(read_reply(&[0, 2500]), Reply::Held(2500));
        assert_eq!(read_reply(&[2, 3]), Reply::Kind(Ahead(3)));
        assert_eq!(read_reply(&[2, 0]), Reply::Unexpected);
        assert_eq!(read_reply(&[2, 1, 1]), Reply::Unexpected);
    }

    /// Records every message on a channel (for a client that only listens).
    #[derive(Debug, Default)]
    struct Recorder(Mutex<Vec<String>>);
    impl Waking for Recorder {
        fn deliver(&self, payload: &str, _: &dyn Waiters) {
            self.0.lock().unwrap().push(payload.to_string());
        }
    }
    static RECORDER: Format = Format::new("toy_ticket_recorder", || Arc::new(Recorder::default()));

    #[tokio::test]
    async fn waiters_on_three_clients_are_served_in_arrival_order_and_told_next_or_all() {
        let server = RedisServer::start().unwrap();
        let url = server.url();
        let (holder, a, b, listener) = (
            Client::connect(&url).await.unwrap(),
            Client::connect(&url).await.unwrap(),
            Client::connect(&url).await.unwrap(),
            Client::connect(&url).await.unwrap(),
        );
        let name = "toy:ticket";
        let channel = "toy_ticket__channel:{toy:ticket}";
        let heard = listener
            .inner
            .pubsub()
            .subscribe(channel, RECORDER)
            .await
            .unwrap();

        let held = holder.toy_ticket_lock(name).lock().await.unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let waiter = |client: &Client, who: &'static str| {
            let (lock, order) = (client.toy_ticket_lock(name), order.clone());
            tokio::spawn(async move {
                let g = lock.try_lock_for(Duration::from_secs(20)).await.unwrap();
                let g = g.expect("granted within its wait");
                order.lock().unwrap().push((who, g.fencing_token()));
                g.unlock().await.unwrap();
            })
        };
        let line = holder.toy_ticket_lock(name);
        let in_line = |n: u64| {
            let line = line.clone();
            move || {
                let line = line.clone();
                async move { line.waiting().await.unwrap() == n }
            }
        };
        let first = waiter(&a, "a");
        wait_until(Duration::from_secs(5), "a in line", in_line(1))
            .await
            .unwrap();
        let second = waiter(&b, "b");
        wait_until(Duration::from_secs(5), "b in line", in_line(2))
            .await
            .unwrap();

        // A caller that only tries never joins the line, and is told how many are ahead.
        assert!(b.toy_ticket_lock(name).try_lock().await.unwrap().is_none());
        assert_eq!(line.waiting().await.unwrap(), 2);
        let reply = server
            .cmd(&[
                "EVAL",
                lua::TOY_TICKET_ACQUIRE,
                "4",
                name,
                "redisson_lock_token:{toy:ticket}",
                "toy_ticket_line:{toy:ticket}",
                "toy_ticket_alive:{toy:ticket}",
                "30000",
                "someone:1",
                "60000",
                "try",
                "3000",
            ])
            .unwrap();
        let Value::Array(Some(items)) = reply else {
            panic!("not an array: {reply:?}")
        };
        let reply: Vec<i64> = items.iter().map(|v| v.as_int().unwrap()).collect();
        assert_eq!(reply, [2, 2]);
        assert_eq!(read_reply(&reply), Reply::Kind(Ahead(2)));

        let token = held.fencing_token();
        held.unlock().await.unwrap();
        first.await.unwrap();
        second.await.unwrap();
        let order = order.lock().unwrap().clone();
        assert_eq!(
            order.iter().map(|(who, _)| *who).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert!(token < order[0].1 && order[0].1 < order[1].1, "{order:?}");
        assert!(!line.is_locked().await.unwrap());
        assert_eq!(line.waiting().await.unwrap(), 0);

        // Released with two in line: every waiter looks; then one in line, then none.
        let recorder = heard.waking::<Recorder>().unwrap();
        wait_until(Duration::from_secs(5), "three release messages", || async {
            recorder.0.lock().unwrap().len() >= 3
        })
        .await
        .unwrap();
        assert_eq!(*recorder.0.lock().unwrap(), ["all", "next", "next"]);
        for c in [holder, a, b, listener] {
            c.shutdown().await;
        }
    }

    #[tokio::test]
    async fn the_methods_every_kind_gets_run_their_body_under_the_hold_and_re_enter_it() {
        let server = RedisServer::start().unwrap();
        let client = Client::connect(&server.url()).await.unwrap();
        let lock = client.toy_ticket_lock("toy:ticket:with");
        let nested = async |guard: &LockGuard| {
            let again = lock.lock().await.unwrap();
            assert_eq!(again.fencing_token(), guard.fencing_token());
            again.unlock().await.unwrap();
            guard.fencing_token()
        };
        let a = lock.with(nested).await.unwrap();
        let b = lock.with_until_lost(nested).await.unwrap();
        let c = lock
            .try_with(async |g| Ok::<_, crate::Error>(nested(g).await))
            .await
            .unwrap();
        let d = lock
            .try_with_until_lost(async |g| Ok::<_, crate::Error>(nested(g).await))
            .await
            .unwrap();
        assert!(a < b && b < c && c < d, "{a} {b} {c} {d}");
        assert!(!lock.is_locked().await.unwrap());
        assert_eq!(server.command_calls("zadd").unwrap(), 0, "nobody waited");
        client.shutdown().await;
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_leaves_the_line_and_the_next_is_served() {
        let server = RedisServer::start().unwrap();
        let (holder, other) = (
            Client::connect(&server.url()).await.unwrap(),
            Client::connect(&server.url()).await.unwrap(),
        );
        let name = "toy:ticket:leave";
        let lock = holder.toy_ticket_lock(name);
        let held = lock.lock().await.unwrap();
        // Gives up after its wait: it was first in line, and leaves it.
        let quitter = other.toy_ticket_lock(name);
        let gave_up = tokio::spawn(async move {
            quitter
                .try_lock_for(Duration::from_millis(300))
                .await
                .unwrap()
                .is_none()
        });
        assert!(gave_up.await.unwrap());
        wait_until(Duration::from_secs(2), "the quitter left", || async {
            lock.waiting().await.unwrap() == 0
        })
        .await
        .unwrap();
        held.unlock().await.unwrap();
        // The line is empty: anyone takes the free lock at once.
        let g = other.toy_ticket_lock(name).try_lock().await.unwrap();
        assert!(g.is_some());
        drop(g);
        for c in [holder, other] {
            c.shutdown().await;
        }
    }
}
