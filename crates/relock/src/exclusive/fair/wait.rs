//! The fair wait loop: a first attempt that never joins the line, then subscribe, join the
//! line and sleep until a message names us (or hands us the lock), the holder's lease ends,
//! the heartbeat says to try, or the caller's deadline.

use std::pin::pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::client::inner::Inner;
use crate::client::pubsub;
use crate::client::pubsub::Subscription;
use crate::error::Result;
use crate::exclusive::attempt;
use crate::exclusive::attempt::{attempt, Attempt, Fresh, NO_TTL_RECHECK};
use crate::exclusive::fair::call::{FairCall, FairOutcome};
use crate::exclusive::fair::channel;
use crate::exclusive::fair::channel::Named;
use crate::exclusive::fair::first_lease::renew_first_lease;
use crate::exclusive::fair::heartbeat::spawn_heartbeats;
use crate::exclusive::fair::line::{Line, QueueEntry, Waiting};
use crate::exclusive::fair::settings::heartbeat;
use crate::exclusive::wait::{self, Start};
use crate::hold::guard::LockGuard;
use crate::hold::holds::Hold;
use crate::hold::kind::LockKeys;
use crate::hold::meter;
use crate::hold::reentry;

/// First re-check when the lock is free but another waiter is first; doubled each time.
const BEHIND_FIRST_CHECK: Duration = Duration::from_millis(10);
/// Longest re-check interval in that state.
const BEHIND_MAX_CHECK: Duration = Duration::from_secs(1);

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
        .get_or_init(|| spawn_heartbeats(Arc::downgrade(inner), inner.on_shutdown()));
    let entry = Arc::new(QueueEntry::new(keys, field, ticket, first_lease, replaces));
    line.insert(entry.clone());
    Waiting {
        inner: inner.clone(),
        entry,
    }
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
    let Joined {
        sub,
        deadline,
        first_lease,
        mut waiting,
        mut named,
    } = match join(inner, &keys, &mut fresh, wait).await? {
        Ok(joined) => joined,
        Err(done) => return Ok(done),
    };
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
            Ok(Attempt::Kind(FairOutcome::OutOfLine)) => {
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
            Ok(Attempt::Kind(FairOutcome::Behind(p))) if p > 0 => {
                fresh.succeeded();
                let sleep = backoff.min(Duration::from_millis(p as u64));
                backoff = (backoff * 2).min(BEHIND_MAX_CHECK);
                sleep
            }
            Ok(Attempt::Held(_) | Attempt::Kind(FairOutcome::Behind(_))) => continue,
        };
        reentry::warn_if_waiting_on_own_task(&inner.shared().holds, &keys.lock, &mut warned);
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

/// A waiter in the line: its subscription, its deadline, the first lease it asks for if
/// handed the lock, its registration, and its name on the channel.
struct Joined {
    sub: Subscription,
    deadline: Option<Instant>,
    first_lease: Option<Duration>,
    waiting: Waiting,
    named: Named,
}

/// The start of a fair wait: a first attempt that never joins the line (`Err`: its outcome,
/// a guard or given up), then the subscription, made before joining the line so that the
/// message naming us cannot pass us by, and the place in line.
async fn join(
    inner: &Arc<Inner>,
    keys: &Arc<LockKeys>,
    fresh: &mut Fresh,
    wait: Option<Duration>,
) -> Result<std::result::Result<Joined, Option<LockGuard>>> {
    let (sub, deadline) = match wait::start(inner, keys, fresh, FairCall(None), wait).await? {
        Start::Acquired(g) => return Ok(Err(Some(g))),
        Start::GaveUp => return Ok(Err(None)),
        Start::Wait { sub, deadline, .. } => (sub, deadline),
    };
    let first_lease = first_lease(inner, fresh.lease);
    let waiting = join_queue(
        inner,
        keys.clone(),
        fresh.field.clone(),
        0,
        first_lease,
        None,
    );
    let named = name(&sub, &waiting);
    Ok(Ok(Joined {
        sub,
        deadline,
        first_lease,
        waiting,
        named,
    }))
}

/// Joins the line again under `fresh`'s new field with `waiting`'s ticket, so that we keep
/// our place, and routes messages naming it; the old registration leaves the line in the
/// background once it is dropped.
fn rejoin(
    inner: &Arc<Inner>,
    keys: &Arc<LockKeys>,
    fresh: &Fresh,
    sub: &pubsub::Subscription,
    waiting: &Waiting,
    first_lease: Option<Duration>,
) -> (Waiting, Named) {
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
fn name(sub: &pubsub::Subscription, waiting: &Waiting) -> Named {
    let e = &waiting.entry;
    channel::name_waiter(sub, &e.field, e.wake.clone(), e.granted.clone())
}

/// The first lease a waiter asks for if a release hands it the lock, or `None` (it is told
/// to come and take it, as before handoff): with the watchdog, the heartbeat deadline (the
/// hold is renewed to the watchdog lease soon after, off the caller's path); a fixed lease
/// when it is no longer than that (it is then the hold's whole lease); never for a longer
/// fixed lease (a renewal would move its end), nor with `sync_replicas` (the grant must be
/// seen on replicas before anyone relies on it: the waiter's own acquire sends the `WAIT`).
fn first_lease(inner: &Inner, lease: Option<Duration>) -> Option<Duration> {
    if inner.settings().sync_replicas.is_some() {
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
        attempt::mutated_token(token),
        fresh.owner.clone(),
        fresh.task,
        valid_until,
    ));
    if !hold.add_guard(watchdog, valid_until) {
        // Its lease ran out meanwhile: the leave gives it back, the next attempt rejoins.
        entry.queued.store(true, Ordering::SeqCst);
        return Ok(None);
    }
    inner.shared().holds.insert(hold.clone());
    inner.watch_hold(&hold);
    meter::acquired(fresh.kind.label(), fresh.started.elapsed());
    meter::step("granted");
    if watchdog {
        renew_first_lease(inner, hold.clone());
    }
    Ok(Some(LockGuard::new(inner.clone(), hold, watchdog)))
}
