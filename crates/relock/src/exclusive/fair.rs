//! The fair lock's waiting line: the client's registry of queued waiters, their heartbeat
//! scheduler, leaving the line, and the fair wait loop.
//!
//! On the server the line is two sorted sets per lock (field → ticket, field → heartbeat
//! deadline). Each waiting `lock()` call has its own [`QueueEntry`] under the field its hold
//! will have if granted. A waiter that stops waiting for any reason (acquired, timed out,
//! dropped, failed) drops its [`Waiting`], which takes the entry out of the line in the
//! background. If even that fails, the entry stops being refreshed and every script that
//! touches the line evicts it after its heartbeat deadline: leaving cannot be lost.
//!
//! After an attempt whose outcome is unknown, the waiter's field is retired (see
//! `lock::Fresh`): it leaves the line under the old field and rejoins under a new one with
//! its old ticket, so it keeps its place.

use std::pin::pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tracing::Instrument;

use crate::client::builder::ClientBuilder;
use crate::client::handle::{Client, Inner, KindState, Round};
use crate::client::scripts;
use crate::client::settings::{KindSetting, MAX_LEASE};
use crate::error::{Error, Result};
use crate::exclusive::attempt::{attempt, AcquireCall, Attempt, Fresh, NO_TTL_RECHECK};
use crate::exclusive::channel::LOCK_CHANNEL;
use crate::exclusive::fair_line::{Line, QueueEntry, QueueKeys};
use crate::exclusive::wait::{self, Start};
use crate::hold::guard::LockGuard;
use crate::hold::holds::Hold;
use crate::hold::kind::{CallContext, HoldKind, LockKeys, ScriptCall};
use crate::hold::reentry;
use crate::hold::wake::Format;

/// The fair lock's own client setting ([`ClientBuilder::fair_heartbeat`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FairSettings {
    heartbeat: Duration,
}

impl Default for FairSettings {
    fn default() -> Self {
        FairSettings {
            heartbeat: Duration::from_secs(5),
        }
    }
}

impl KindSetting for FairSettings {
    fn check(&self) -> Result<()> {
        if self.heartbeat < Duration::from_millis(100) || self.heartbeat > MAX_LEASE {
            return Err(Error::invalid(
                "fair_heartbeat",
                format!(
                    "{}: use at least 100 ms (waiters refresh every deadline/5) and at most 30 years",
                    crate::error::Human(self.heartbeat)
                ),
            ));
        }
        Ok(())
    }
}

impl ClientBuilder {
    /// How long a fair-lock waiter keeps its place in line without a heartbeat. Each client
    /// refreshes its waiters every deadline/5, so a waiter whose process died stops holding
    /// up the line after at most this long. It is also the first lease of a watchdog hold
    /// that a release hands to a waiter (renewed to the watchdog lease soon after), so a
    /// waiter that died just before it was handed the lock holds it no longer than this.
    /// Default: 5 s; at least 100 ms.
    pub fn fair_heartbeat(self, deadline: Duration) -> Self {
        self.kind_setting(FairSettings {
            heartbeat: deadline,
        })
    }
}

/// The client's fair heartbeat deadline.
pub(crate) fn heartbeat(inner: &Inner) -> Duration {
    inner.settings.kind::<FairSettings>().heartbeat
}

/// The fair lock's holds: fields of the lock's hash like a plain lock's (renewed with them),
/// released by `fair_release.lua`, which hands the lock to the first in line.
#[derive(Debug)]
pub(crate) struct Fair;

/// The fair lock's [`HoldKind`].
pub(crate) static FAIR: Fair = Fair;

impl HoldKind for Fair {
    fn label(&self) -> &'static str {
        "fair"
    }

    fn release(&self, keys: &LockKeys, field: &str, all: bool, ctx: &CallContext) -> ScriptCall {
        // It may hand the lock on, minting the next holder's token: the whole queue group.
        ScriptCall {
            script: &crate::exclusive::fair_line::FAIR_RELEASE,
            keys: QueueKeys::of(&keys.lock).group(keys).to_vec(),
            args: vec![
                field.to_string(),
                crate::exclusive::hash_hold::release_mode(all).into(),
                ctx.publish.into(),
                ctx.grace_ms.to_string(),
                keys.channel.clone(),
                keys.wake.clone(),
            ],
            coalesce: false,
        }
    }

    fn renewal_group(&self) -> &'static str {
        crate::exclusive::hash_hold::LOCK_HOLDS
    }

    fn renew(&self, batch: &[(&LockKeys, &str)], lease_ms: u64, _: &CallContext) -> ScriptCall {
        crate::exclusive::hash_hold::renew(batch, lease_ms)
    }

    fn wake(&self) -> Format {
        LOCK_CHANNEL
    }
}

/// First re-check when the lock is free but another waiter is first; doubled each time.
const BEHIND_FIRST_CHECK: Duration = Duration::from_millis(10);
/// Longest re-check interval in that state.
const BEHIND_MAX_CHECK: Duration = Duration::from_secs(1);

/// A waiter's registration in the line; leaving is done on drop.
#[derive(Debug)]
pub(crate) struct Waiting {
    inner: Arc<Inner>,
    pub(crate) entry: Arc<QueueEntry>,
}

/// Registers a waiter under `field` on a fair lock, with the ticket it had (0 if none), and
/// starts the client's heartbeat scheduler if this is its first waiter.
pub(crate) fn join_queue(
    inner: &Arc<Inner>,
    keys: Arc<LockKeys>,
    field: String,
    ticket: i64,
    first_lease: Option<Duration>,
    replaces: Option<String>,
) -> Waiting {
    let line = inner.state::<Line>();
    line.heartbeats
        .get_or_init(|| spawn_heartbeats(Arc::downgrade(inner), inner.shutdown.subscribe()));
    let entry = Arc::new(QueueEntry::new(keys, field, ticket, first_lease, replaces));
    line.insert(entry.clone());
    Waiting {
        inner: inner.clone(),
        entry,
    }
}

/// Runs `fair_leave.lua` for `entry`, bounded by the command timeout.
pub(crate) async fn leave_queue(inner: &Inner, entry: &QueueEntry) -> Result<()> {
    let call = crate::exclusive::fair_line::leave(
        inner.pool.next(),
        entry,
        inner.publish_cmd(),
        inner.grace_ms(),
    );
    match tokio::time::timeout(inner.settings.command_timeout, call).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(inner.error("fair_leave", &entry.keys.lock, e)),
        Err(_) => Err(crate::Error::Timeout {
            operation: "fair_leave",
            server: inner.server(),
            timeout: inner.settings.command_timeout,
        }),
    }
}

impl KindState for Line {
    /// Leaves every line this client's waiters are in. In the first round after any attempt
    /// in flight (which could put a waiter back in line), as a waiter's own leave does; in the
    /// late round only the waiters back in line since, each waiting at most one command
    /// timeout for its gate (a waiter's future kept alive but no longer polled can hold it for
    /// good). A waiter already out is not sent again.
    fn at_shutdown(&self, inner: &Arc<Inner>, work: &mut tokio::task::JoinSet<()>, round: Round) {
        for entry in self.all() {
            if round == Round::Late && !entry.queued.load(Ordering::SeqCst) {
                continue;
            }
            let inner = inner.clone();
            work.spawn(async move {
                let limit = inner.settings.command_timeout;
                let _gate = match round {
                    Round::First => entry.gate.lock().await,
                    Round::Late => match tokio::time::timeout(limit, entry.gate.lock()).await {
                        Ok(g) => g,
                        Err(_) => return,
                    },
                };
                if entry.queued.swap(false, Ordering::SeqCst) {
                    // Not `leave_queue`: once shutdown has begun, the client's errors all read
                    // "shut down", and this warning must say why the leave failed.
                    let leave = crate::exclusive::fair_line::leave(
                        inner.pool.next(),
                        &entry,
                        inner.publish_cmd(),
                        inner.grace_ms(),
                    );
                    let error = match tokio::time::timeout(limit, leave).await {
                        Ok(Ok(())) => None,
                        Ok(Err(e)) => Some(crate::client::redact::in_text(&e.to_string(), &inner.settings.url)),
                        Err(_) => Some(format!("no reply within {}", crate::error::Human(limit))),
                    };
                    if let Some(error) = error {
                        tracing::warn!(lock = %entry.keys.lock, %error, "leaving the line at shutdown failed; the heartbeat deadline will evict us");
                    }
                }
            });
        }
    }
}

impl Client {
    /// Fair-lock waiters of this client that may be in a line right now.
    pub fn queued_waiters(&self) -> usize {
        self.inner.state::<Line>().queued_count()
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let (inner, entry) = (self.inner.clone(), self.entry.clone());
        let span = tracing::debug_span!("leave", lock = %entry.keys.lock, field = %entry.field);
        let leave = async move {
            // After any attempt in flight, which could put us back in line.
            let _gate = entry.gate.clone().lock_owned().await;
            if entry.queued.swap(false, Ordering::SeqCst) {
                if let Err(e) = leave_queue(&inner, &entry).await {
                    tracing::debug!(error = %e, "could not leave the queue; the heartbeat deadline will evict us");
                }
            }
            inner.state::<Line>().remove(&entry);
        }
        .instrument(span);
        if tokio::runtime::Handle::try_current().is_ok() {
            self.inner.shared.tracker.spawn(leave);
        } else {
            // No runtime: the heartbeat stops, and the deadline evicts us.
            let entry = &self.entry;
            self.inner.state::<Line>().remove(entry);
        }
    }
}

/// Starts the client's heartbeat scheduler: every heartbeat deadline / 5 it refreshes the
/// deadline of each queued waiter (100 per script call), which also evicts dead waiters and
/// tells us which of ours should try now.
fn spawn_heartbeats(inner: Weak<Inner>, shutdown: watch::Receiver<bool>) {
    let Some((runtime, period)) = inner
        .upgrade()
        .map(|i| (i.runtime.clone(), heartbeat(&i) / 5))
    else {
        return;
    };
    runtime.spawn(crate::hold::every::every(
        inner,
        shutdown,
        period,
        move |inner| async move {
            beat_all(&inner).await;
            Some(period)
        },
    ));
}

async fn beat_all(inner: &Arc<Inner>) {
    let entries = inner.state::<Line>().queued();
    if entries.is_empty() {
        return;
    }
    let calls = inner
        .batches(&entries, |e| e.keys.lock.as_str())
        .into_iter()
        .map(|batch| {
            let inner = inner.clone();
            let span = tracing::debug_span!("heartbeat", waiters = batch.len());
            async move {
                beat_batch(&inner, &batch).await;
                true
            }
            .instrument(span)
        });
    // The first batch alone, then the rest at once (see `all_succeed`: one NOSCRIPT, not one
    // per batch in flight, on a server that lacks the script).
    let period = heartbeat(inner) / 5;
    crate::hold::watchdog::all_succeed(calls, crate::hold::watchdog::first_alone(period)).await;
}

async fn beat_batch(inner: &Inner, batch: &[Arc<QueueEntry>]) {
    let hb = heartbeat(inner);
    let mut keys = Vec::with_capacity(batch.len() * 6);
    let mut args = Vec::with_capacity(2 * batch.len() + 3);
    args.push(hb.as_millis().to_string());
    args.push(inner.publish_cmd().to_string());
    args.push(inner.grace_ms().to_string());
    for e in batch {
        keys.extend(e.line.group(&e.keys));
        args.push(e.field.clone());
        args.push(e.keys.wake.clone());
    }
    let limit = inner.settings.command_timeout.min(hb / 5);
    let sent = tokio::time::Instant::now();
    let call =
        crate::exclusive::fair_line::FAIR_HEARTBEAT.run::<Vec<i64>>(inner.pool.next(), keys, args);
    let outcome = match tokio::time::timeout(limit, call).await {
        Ok(Ok(reply)) => crate::client::scripts::one_each(reply, batch.len()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no reply within {}", crate::error::Human(limit))),
    };
    match outcome {
        Ok(results) => {
            for (e, r) in batch.iter().zip(results) {
                let (in_line, try_now) = beat(r);
                if in_line {
                    // In line when the script ran: a later handoff's lease counts from here.
                    e.seen_in_line(sent);
                }
                if try_now {
                    e.wake.notify_one();
                }
            }
        }
        Err(cause) => {
            tracing::warn!(%cause, waiters = batch.len(), "fair-queue heartbeat failed; retrying next period");
        }
    }
}

/// One waiter's heartbeat answer: (in line when the script ran, try now). 1: in line; 2: first
/// in line while the lock is free (our wake-up may have been lost); 0: out of line: handed the
/// lock (its message may have been lost) or evicted (a stall longer than the deadline), and
/// trying reports the grant or rejoins. Any other number is read as 2.
pub(crate) fn beat(answer: i64) -> (bool, bool) {
    (answer != 0, answer != 1)
}

/// The fair acquire loop: a first attempt that never joins the line, then subscribe, join
/// the line and sleep until a message names us (or hands us the lock), the holder's lease
/// ends, the heartbeat says to try, or the caller's deadline.
pub(crate) async fn acquire_fair(
    inner: &Arc<Inner>,
    keys: Arc<LockKeys>,
    mut fresh: Fresh,
    wait: Option<Duration>,
) -> Result<Option<LockGuard>> {
    // Subscribed before joining the line, so the message naming us cannot pass us by.
    let (sub, deadline) = match wait::start(inner, &keys, &mut fresh, FairCall(None), wait).await? {
        Start::Acquired(g) => return Ok(Some(g)),
        Start::GaveUp => return Ok(None),
        Start::Wait { sub, deadline, .. } => (sub, deadline),
    };
    let first_lease = first_lease(inner, fresh.lease);
    let mut waiting = join_queue(
        inner,
        keys.clone(),
        fresh.field.clone(),
        0,
        first_lease,
        None,
    );
    let mut named = name(&sub, &waiting);
    let mut backoff = BEHIND_FIRST_CHECK;
    let mut warned = false;
    loop {
        let wake = waiting.entry.wake.clone();
        let mut woken = pin!(wake.notified());
        woken.as_mut().enable();
        // A release handed us the lock and said so: no round trip.
        if let Some(g) = take_handoff(inner, &keys, &fresh, &waiting.entry).await? {
            return Ok(Some(g));
        }
        let mode = FairCall(Some(waiting.entry.clone()));
        let sleep = match attempt(inner, &keys, &fresh, mode).await {
            Err(e) => {
                // The outcome is unknown: the field is retired (its clean-up runs in the
                // background, and can only touch that field). Wait on under a new field,
                // keeping our ticket so we keep our place; the old registration leaves the
                // line in the background.
                let r = fresh.after_error(inner, e).await;
                (waiting, named) = rejoin(inner, &keys, &fresh, &sub, &waiting, first_lease);
                r?;
                continue;
            }
            Ok(Attempt::Acquired(g)) => return Ok(Some(g)),
            Ok(Attempt::OutOfLine) => {
                // Evicted, or handed the lock whose lease ran out before we took it: rejoin at
                // our ticket under a new field (a field is handed the lock at most once).
                fresh.succeeded();
                fresh.retire(inner);
                (waiting, named) = rejoin(inner, &keys, &fresh, &sub, &waiting, first_lease);
                continue;
            }
            Ok(Attempt::Held(p)) if p > 0 => {
                fresh.succeeded();
                fresh.refused("held");
                backoff = BEHIND_FIRST_CHECK;
                Duration::from_millis(p as u64 + 1)
            }
            Ok(Attempt::Held(-1)) => NO_TTL_RECHECK,
            // The lock is free and the first waiter is about to take it (it was woken by
            // the same lease end as we were), or it is dead. Nobody tells us which, nor
            // the new holder's lease: look again soon, then less and less often, and never
            // later than its heartbeat deadline.
            Ok(Attempt::Behind(p)) if p > 0 => {
                fresh.succeeded();
                let sleep = backoff.min(Duration::from_millis(p as u64));
                backoff = (backoff * 2).min(BEHIND_MAX_CHECK);
                sleep
            }
            Ok(Attempt::Held(_) | Attempt::Behind(_)) => continue,
        };
        reentry::warn_if_waiting_on_own_task(&inner.shared.holds, &keys.lock, &mut warned);
        if inner.park(sleep, deadline, woken).await?.is_none() {
            // A handoff that came just as the deadline passed is still ours to take; one
            // not taken is given back by the leave (dropping `waiting`).
            if let Some(g) = take_handoff(inner, &keys, &fresh, &waiting.entry).await? {
                return Ok(Some(g));
            }
            drop(named);
            return Ok(None);
        }
    }
}

/// Joins the line again under `fresh`'s new field with `waiting`'s ticket, so that we keep
/// our place, and routes messages naming it; the old registration leaves the line in the
/// background once it is dropped.
fn rejoin(
    inner: &Arc<Inner>,
    keys: &Arc<LockKeys>,
    fresh: &Fresh,
    sub: &crate::client::pubsub::Subscription,
    waiting: &Waiting,
    first_lease: Option<Duration>,
) -> (Waiting, crate::exclusive::channel::Named) {
    let ticket = waiting.entry.ticket.load(Ordering::SeqCst);
    let new = join_queue(
        inner,
        keys.clone(),
        fresh.field.clone(),
        ticket,
        first_lease,
        Some(waiting.entry.field.clone()),
    );
    let named = name(sub, &new);
    (new, named)
}

/// Routes messages naming `waiting`'s field to it.
fn name(
    sub: &crate::client::pubsub::Subscription,
    waiting: &Waiting,
) -> crate::exclusive::channel::Named {
    let e = &waiting.entry;
    crate::exclusive::channel::name_waiter(sub, &e.field, e.wake.clone(), e.granted.clone())
}

/// The first lease a waiter asks for if a release hands it the lock, or `None` (it is told
/// to come and take it, as before handoff): with the watchdog, the heartbeat deadline (the
/// hold is renewed to the watchdog lease soon after, off the caller's path); a fixed lease
/// when it is no longer than that (it is then the hold's whole lease); never for a longer
/// fixed lease (a renewal would move its end), nor with `sync_replicas` (the grant must be
/// seen on replicas before anyone relies on it: the waiter's own acquire sends the `WAIT`).
fn first_lease(inner: &Inner, lease: Option<Duration>) -> Option<Duration> {
    if inner.settings.sync_replicas.is_some() {
        return None;
    }
    let heartbeat = heartbeat(inner);
    match lease {
        None => Some(heartbeat),
        Some(l) if l <= heartbeat => Some(l),
        Some(_) => None,
    }
}

/// Takes a grant that a release handed this waiter (its message carried the token), if one
/// came and is usable: the hold is recorded as an acquire's would be, with the lease counted
/// from the latest call that showed us in line (the handoff ran after it). `None`: no grant,
/// or too little of its lease is known to be left; the next attempt then reports the grant
/// with the lease the server has left.
///
/// # Cancel safety
/// Nothing is taken until the line entry's gate is held; from there on it does not await. A
/// grant not taken is given back when the `Waiting` is dropped (`fair_leave.lua`).
async fn take_handoff(
    inner: &Arc<Inner>,
    keys: &Arc<LockKeys>,
    fresh: &Fresh,
    entry: &Arc<QueueEntry>,
) -> Result<Option<LockGuard>> {
    if entry.granted.load(Ordering::SeqCst) == 0 {
        return Ok(None);
    }
    let (Some(first), Some(seen)) = (entry.first_lease, *entry.in_line_at.lock().unwrap()) else {
        return Ok(None);
    };
    let valid_until = seen + first;
    // Less than half of it known to be left (a long stall since we were last seen in line):
    // ask the server, which knows the lease left.
    if valid_until.saturating_duration_since(tokio::time::Instant::now()) < first / 2 {
        entry.granted.store(0, Ordering::SeqCst);
        return Ok(None);
    }
    // Shutdown's leave of the line holds the gate too: either it gave the grant back first
    // (and we do not take it), or we record the hold first (and shutdown releases it).
    let _gate = entry.gate.clone().lock_owned().await;
    inner.check_running()?;
    let token = entry.granted.swap(0, Ordering::SeqCst);
    if token == 0 || !entry.queued.swap(false, Ordering::SeqCst) {
        return Ok(None);
    }
    let watchdog = fresh.lease.is_none();
    let hold = Arc::new(Hold::new(
        keys.clone(),
        entry.field.clone(),
        crate::exclusive::attempt::mutated_token(token),
        fresh.owner.clone(),
        fresh.task,
        valid_until,
    ));
    if !hold.add_guard(watchdog, valid_until) {
        // Its lease ran out meanwhile: the leave gives it back, the next attempt rejoins.
        entry.queued.store(true, Ordering::SeqCst);
        return Ok(None);
    }
    inner.shared.holds.insert(hold.clone());
    inner.watch_hold(&hold);
    crate::hold::meter::acquired(fresh.kind.label(), fresh.started.elapsed());
    crate::hold::meter::step("granted");
    if watchdog {
        crate::exclusive::attempt::renew_first_lease(inner, hold.clone());
    }
    Ok(Some(LockGuard::new(inner.clone(), hold, watchdog)))
}

/// The fair lock's attempt: `fair_acquire.lua`, without joining the line (`None`: `try_lock`,
/// and the first attempt) or as the waiter `entry` (joining the line, or staying in it, if
/// not granted).
#[derive(Debug, Clone)]
pub(crate) struct FairCall(pub(crate) Option<Arc<QueueEntry>>);

impl AcquireCall for FairCall {
    fn call(
        &self,
        inner: &Inner,
        keys: &LockKeys,
        _: &str,
        args: &mut Vec<String>,
    ) -> (&'static scripts::Script, Vec<String>) {
        let [lock, queue, alive, seq, token, handoff] = match &self.0 {
            Some(e) => e.line.group(keys),
            None => QueueKeys::of(&keys.lock).group(keys),
        };
        let (join, ticket, first_lease, joined) = match &self.0 {
            Some(e) => {
                // Set before sending: if the reply is lost we may be in line.
                e.queued.store(true, Ordering::SeqCst);
                (
                    "wait",
                    e.ticket.load(Ordering::SeqCst),
                    e.first_lease.map_or(0, |l| l.as_millis()),
                    e.joined(),
                )
            }
            None => ("try", 0, 0, false),
        };
        args.extend([
            heartbeat(inner).as_millis().to_string(),
            join.to_string(),
            ticket.to_string(),
            inner.publish_cmd().to_string(),
            first_lease.to_string(),
            u8::from(joined).to_string(),
            keys.wake.clone(),
        ]);
        if let Some(e) = &self.0 {
            if let Some(retired) = e.replaces.as_ref().filter(|_| !joined) {
                args.push(retired.clone());
            }
        }
        (
            &crate::exclusive::fair_line::FAIR_ACQUIRE,
            vec![lock, token, queue, alive, seq, handoff],
        )
    }

    /// A leave of the line must not overtake this attempt (it would put us back).
    fn gate(&self) -> Option<Arc<tokio::sync::Mutex<()>>> {
        self.0.as_ref().map(|e| e.gate.clone())
    }

    fn noted(&self, reply: &[i64], sent: tokio::time::Instant) {
        let Some(e) = &self.0 else { return };
        match ticket_in_line(reply) {
            Some(ticket) => {
                e.ticket.store(ticket, Ordering::SeqCst);
                // In line when the script ran: any handoff to this field comes after it.
                e.seen_in_line(sent);
            }
            None => e.queued.store(false, Ordering::SeqCst),
        }
    }
}

/// The waiter's ticket, if a fair acquire's reply leaves it in line; `None` if the script
/// took it out of the line (a grant) or it is out of line and was not put back.
pub(crate) fn ticket_in_line(reply: &[i64]) -> Option<i64> {
    match *reply {
        [0, _, _, -2, _] => None,
        [0, _, ticket, _, _] => Some(ticket),
        _ => None,
    }
}
