//! One acquire script call for a fresh hold of a single-server lock (plain or fair), run to
//! its end whatever its caller does, and the state a fresh acquisition carries between its
//! calls.
//!
//! The call runs to its end (in the caller's task while the caller polls it, then in a tracked
//! task: `detach`) so that a reply arriving after the caller gave up still becomes a guard,
//! whose drop releases it; and an attempt whose outcome is unknown is cleaned up under its own
//! field, which the caller then retires.

use std::pin::pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::OwnedMutexGuard;
use tokio::time::Instant;

use crate::client::batch;
use crate::client::inner::Inner;
use crate::client::lock_scripts;
use crate::client::scripts;
use crate::error::{Error, Result};
use crate::exclusive::channel;
use crate::exclusive::clean_up::{clean_up_refused_grant, clean_up_unknown_outcome, CleanUps};
use crate::hold::guard::LockGuard;
use crate::hold::holds;
use crate::hold::holds::Hold;
use crate::hold::kind::LockKeys;
use crate::hold::kind::{Coalescible, HoldKind};
use crate::hold::meter;
use crate::hold::owner::Owner;
use crate::hold::wake;

/// How long a waiter sleeps when the holder's key has no TTL (a foreign holder), between
/// checks. Release messages still wake it at once.
pub(crate) const NO_TTL_RECHECK: Duration = Duration::from_secs(1);

/// What one attempt came to: a guard, held by someone else, or an outcome of the kind's own
/// (`K`, [`AcquireCall::Outcome`]).
pub(crate) enum Attempt<K> {
    Acquired(LockGuard),
    /// Held by someone else; their remaining lease in ms (-1: no expiry, -2: just vanished).
    Held(i64),
    /// What the kind's reply says beyond granted or held.
    Kind(K),
}

/// What an exclusive kind's attempt sends and how its reply is read: each kind answers in its
/// own file (`PlainCall` in `lock`, `FairCall` in `fair`, `SideCall` in `rwlock`), and nothing
/// here names a kind. The grant path is shared: a kind reads its reply into
/// [`Reply::Granted`] (a token, and the lease left where a release handed it over) or
/// [`Reply::Held`]; [`read_grant`] reads the shapes every lock script shares (`[1, token]`,
/// `[3, token, pttl]`, `[0, pttl]`), and a kind with outcomes of its own reads those first.
pub(crate) trait AcquireCall: Clone + Send + Sync + 'static {
    /// What its replies say beyond granted or held (`Infallible` for a kind with nothing
    /// more to say).
    type Outcome: Send + 'static;
    /// The script and its keys. `args` holds what every acquire sends (lease ms, field,
    /// grace ms); the kind appends its own. Called right before the call is sent.
    fn call(
        &self,
        inner: &Inner,
        keys: &LockKeys,
        field: &str,
        args: &mut Vec<String>,
    ) -> (&'static scripts::Script, Vec<String>);
    /// A gate held for the attempt's whole call, so that a leave of the kind's line cannot
    /// overtake it.
    fn gate(&self) -> Option<Arc<tokio::sync::Mutex<()>>> {
        None
    }
    /// How the call may go in the client's coalesced batch, if it may; such a call is also
    /// worth a wait for this client's own release in flight.
    fn coalesced(&self) -> Option<Coalescible> {
        None
    }
    /// Reads the reply of a call sent at `sent` (a kind may note what it says, as a fair
    /// waiter its place in line).
    fn read(&self, reply: &[i64], sent: Instant) -> Reply<Self::Outcome> {
        let _ = sent;
        read_grant(reply)
    }
    /// After a grant became a hold (recorded, watched), before the guard is handed out:
    /// `handed`, if a release handed the hold over with a first lease of its own.
    fn granted(&self, inner: &Arc<Inner>, hold: &Arc<Hold>, handed: bool, watchdog: bool) {
        let _ = (inner, hold, handed, watchdog);
    }
    /// Whether a holder excludes every other, so that what local waiters know of the lock
    /// (held, until when) holds for this caller too; false for the sides of a read-write lock
    /// (a reader may share).
    fn exclusive(&self) -> bool {
        true
    }
    /// How the messages on the lock's channel read.
    fn wake(&self) -> wake::Format {
        channel::LOCK_CHANNEL
    }
    /// Whether its holds get the hold watch (`client::hold_watch`: a subscription to the
    /// lock's channel, so that a force-unlock fires `lost()` at once). A kind that never
    /// subscribes says no: its holders learn of a deletion at their next renewal.
    fn watched(&self) -> bool {
        true
    }
}

/// A fresh acquisition in progress: the field it asks for, and who will own the hold.
#[derive(Debug)]
pub(crate) struct Fresh {
    /// The field this acquisition asks for. Retired (replaced by a new one) after any attempt
    /// whose outcome is unknown, so that the clean-up of that attempt, wherever and whenever
    /// it lands, can only remove what that attempt took.
    pub(crate) field: String,
    pub(crate) owner: Option<Owner>,
    /// The task that called `lock()` (the attempt runs in a task of its own).
    pub(crate) task: holds::Caller,
    /// When `lock()` was called, for the wait-time metric.
    pub(crate) started: Instant,
    /// Acquire script calls made so far, for the `acquire` span.
    pub(crate) attempts: Arc<std::sync::atomic::AtomicU32>,
    /// When the latest attempt was sent, in µs after `started`: a run of errors is budgeted
    /// from the attempt that began it, not from when its timeout ran out.
    last_try: std::sync::atomic::AtomicU64,
    /// The clean-ups of this acquisition's attempts whose outcome is unknown (one task for
    /// all of them, however many attempts an outage costs).
    clean_ups: Arc<CleanUps>,
    /// The lock kind: its fields and its metrics' label.
    pub(crate) kind: &'static dyn HoldKind,
    /// The fixed lease asked for, or `None` for the watchdog's.
    pub(crate) lease: Option<Duration>,
    retry: Retry,
}

impl Fresh {
    pub(crate) fn new(
        inner: &Inner,
        kind: &'static dyn HoldKind,
        owner: Option<Owner>,
        lease: Option<Duration>,
    ) -> Self {
        Fresh {
            field: kind.field(inner.new_field()),
            owner,
            task: holds::Caller::current(),
            started: Instant::now(),
            attempts: Arc::default(),
            last_try: Default::default(),
            clean_ups: Arc::default(),
            kind,
            lease,
            retry: Retry::default(),
        }
    }

    /// Counts an attempt that did not grant, by cause.
    pub(crate) fn refused(&self, cause: &'static str) {
        meter::failed_attempt(self.kind.label(), cause);
    }

    /// After a failed attempt: retires the field, then waits a backoff and returns `Ok` to
    /// try again, or returns the error once retrying is pointless or the budget (one command
    /// timeout from the first error in a row) is spent.
    pub(crate) async fn after_error(&mut self, inner: &Inner, e: Error) -> Result<()> {
        meter::failed_attempt(self.kind.label(), meter::cause(&e));
        self.field = self.kind.field(inner.new_field());
        let tried = Duration::from_micros(self.last_try.load(Ordering::Relaxed));
        self.retry.after(inner, e, self.started + tried).await
    }

    /// Replaces the field without an error (a fair waiter out of line rejoins under a new
    /// field: see `fair_acquire.lua`).
    pub(crate) fn retire(&mut self, inner: &Inner) {
        self.field = self.kind.field(inner.new_field());
    }

    /// An attempt got a reply: the run of errors (its budget, backoff, warning) is over.
    pub(crate) fn succeeded(&mut self) {
        self.retry = Retry {
            patience: self.retry.patience,
            ..Retry::default()
        };
    }

    /// After a transient error that is not an attempt's (the subscription of a waiter): waits a
    /// backoff and returns `Ok` to go on, or the error, under the same budget as the attempts.
    pub(crate) async fn wait_out(&mut self, inner: &Inner, e: Error) -> Result<()> {
        self.retry.after(inner, e, Instant::now()).await
    }

    /// Says how long the caller waits: a waiting call (`lock()`, `try_lock_for`) retries
    /// through an outage until its own deadline (`None`: as long as it takes), not just one
    /// command timeout; `try_lock` (`waits == false`) keeps the one-timeout budget.
    pub(crate) fn set_wait(&mut self, waits: bool, deadline: Option<Instant>) {
        self.retry.patience = if waits {
            Patience::Until(deadline)
        } else {
            Patience::OneTimeout
        };
    }
}

/// Backoff for transient errors: a stale connection after a Redis restart, a timeout.
#[derive(Debug)]
struct Retry {
    /// The end of the budget of the current run of errors (one command timeout from the
    /// attempt that began it); `None` while no error is in a row.
    give_up: Option<Instant>,
    backoff: Duration,
    patience: Patience,
    /// Whether this run of errors was reported as an outage.
    warned: bool,
}

/// How long transient errors in a row are retried.
#[derive(Debug, Clone, Copy)]
enum Patience {
    /// One command timeout from the attempt that began the run of errors (`try_lock`).
    OneTimeout,
    /// Until the caller's deadline (`None`: for ever): a waiting call waits through an
    /// outage as it waits for a holder.
    Until(Option<Instant>),
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            give_up: None,
            backoff: Duration::from_millis(5),
            patience: Patience::OneTimeout,
            warned: false,
        }
    }
}

impl Retry {
    /// After a transient error of an attempt sent at `tried`: waits a backoff and returns `Ok`
    /// to try again, or the error once the budget is spent.
    async fn after(&mut self, inner: &Inner, e: Error, tried: Instant) -> Result<()> {
        if !e.is_transient() {
            return Err(e);
        }
        let now = Instant::now();
        let budget = *self
            .give_up
            .get_or_insert(tried + inner.settings().command_timeout);
        let (give_up, cap) = match self.patience {
            Patience::OneTimeout => (Some(budget), Duration::from_millis(200)),
            // Past one command timeout this is an outage, not a blip: try once a second.
            Patience::Until(deadline) if now >= budget => (deadline, Duration::from_secs(1)),
            Patience::Until(deadline) => (deadline, Duration::from_millis(200)),
        };
        if give_up.is_some_and(|g| now + self.backoff >= g) {
            return Err(e);
        }
        if matches!(self.patience, Patience::Until(_)) && now >= budget && !self.warned {
            self.warned = true;
            tracing::warn!(error = %e, "Redis does not answer; a waiting call keeps trying until its deadline");
        } else {
            tracing::debug!(error = %e, "acquire failed; retrying under a new field");
        }
        tokio::time::sleep(self.backoff).await;
        self.backoff = (self.backoff * 2).min(cap);
        inner.check_running()
    }
}

/// One acquire script call for `fresh`. It runs to its end even if the caller gives up (in
/// the caller's task while it is polled, then in a tracked task: `detach`), so that a reply
/// arriving after the caller gave up still becomes a guard, and that guard's drop releases it.
/// Errors are returned as they are; the caller retires the field and decides whether to
/// try again.
pub(crate) async fn attempt<M: AcquireCall>(
    inner: &Arc<Inner>,
    keys: &Arc<LockKeys>,
    fresh: &Fresh,
    mode: M,
) -> Result<Attempt<M::Outcome>> {
    // Nothing new is sent once shutdown has begun: it could be granted after shutdown
    // took its list of holds to release.
    inner.check_running()?;
    fresh.attempts.fetch_add(1, Ordering::Relaxed);
    let since = fresh.started.elapsed().as_micros();
    fresh.last_try.store(since as u64, Ordering::Relaxed);
    // A leave of the line must not overtake this attempt (it would put us back).
    let gate = match mode.gate() {
        Some(g) => Some(g.lock_owned().await),
        None => None,
    };
    let task = attempt_task(AttemptArgs {
        inner: inner.clone(),
        keys: keys.clone(),
        field: fresh.field.clone(),
        owner: fresh.owner.clone(),
        task: fresh.task,
        clean_ups: fresh.clean_ups.clone(),
        started: fresh.started,
        fixed_lease: fresh.lease,
        mode,
        _gate: gate,
    });
    inner.shared().run(task).await?
}

/// Waits (bounded by the command timeout) while a release of this lock by this client is in
/// flight: the lock is about to be free, and trying before the release lands would only cost
/// a round trip and a wake-up. (Not needed for safety: a fresh acquisition has its own field,
/// which no release of an older hold can touch.)
pub(crate) async fn await_local_release(inner: &Inner, lock: &str, deadline: Option<Instant>) {
    let Some(hold) = inner.shared().holds.find(lock, |h| h.is_releasing()) else {
        return;
    };
    let mut gone = pin!(hold.gone.notified());
    gone.as_mut().enable();
    if inner.shared().holds.contains(&hold) {
        let mut until = Instant::now() + inner.settings().command_timeout;
        if let Some(d) = deadline {
            until = until.min(d);
        }
        let _ = tokio::time::timeout_at(until, gone).await;
    }
}

struct AttemptArgs<M> {
    inner: Arc<Inner>,
    keys: Arc<LockKeys>,
    field: String,
    owner: Option<Owner>,
    task: holds::Caller,
    clean_ups: Arc<CleanUps>,
    started: Instant,
    fixed_lease: Option<Duration>,
    mode: M,
    _gate: Option<OwnedMutexGuard<()>>,
}

async fn attempt_task<M: AcquireCall>(a: AttemptArgs<M>) -> Result<Attempt<M::Outcome>> {
    let AttemptArgs {
        inner,
        keys,
        field,
        owner,
        task,
        clean_ups,
        started,
        fixed_lease,
        mode,
        _gate,
    } = a;
    let watchdog = fixed_lease.is_none();
    let lease = fixed_lease.unwrap_or(inner.settings().watchdog_lease);
    let conn = inner.conn();
    let sent = Instant::now();
    let reply = match send(&inner, conn, &keys, &field, lease, &mode).await {
        Ok(r) => r,
        Err(e) => {
            let err = inner.error("acquire", &keys.lock, e);
            // A WRONGTYPE reply means the script ran and changed nothing.
            if !matches!(err, Error::WrongType { .. }) {
                clean_up_unknown_outcome(&inner, &keys, &clean_ups, &field, lease);
            }
            return Err(err);
        }
    };
    let (token, valid_until, handed) = match granted(
        &inner,
        &keys,
        &field,
        lease,
        sent,
        &reply,
        mode.read(&reply, sent),
    )
    .await?
    {
        Ok(grant) => grant,
        Err(not_granted) => return Ok(not_granted),
    };
    if let Some((wanted, timeout)) = inner.settings().sync_replicas {
        on_replicas(&inner, conn, &keys, &field, lease, wanted, timeout).await?;
    }
    let hold = Arc::new(Hold::new(
        keys.clone(),
        field,
        mutated_token(token as u64),
        owner,
        task,
        valid_until,
    ));
    if !hold.add_guard(watchdog, valid_until) {
        // The reply took longer than the lease: the grant may already have expired
        // and been taken by someone else. Drop it (under its own field); the caller
        // retires the field and tries again.
        clean_up_refused_grant(&inner, &keys, &hold.field, lease).await;
        return Err(Error::Timeout {
            operation: "acquire",
            server: inner.server(),
            timeout: lease,
        });
    }
    // Shutdown waits for this task before it releases every recorded hold, so this
    // one is released (and reported lost) too if the client is shutting down.
    inner.shared().holds.insert(hold.clone());
    if mode.watched() {
        inner.watch_hold(&hold);
    }
    meter::acquired(keys.kind.label(), started.elapsed());
    meter::step("granted");
    mode.granted(&inner, &hold, handed, watchdog);
    Ok(Attempt::Acquired(LockGuard::new(
        inner.clone(),
        hold,
        watchdog,
    )))
}

/// Sends the kind's acquire call on `conn` (or in the client's coalesced batch, where the
/// kind allows it), and returns its reply as integers.
async fn send<M: AcquireCall>(
    inner: &Inner,
    conn: &fred::clients::Client,
    keys: &LockKeys,
    field: &str,
    lease: Duration,
    mode: &M,
) -> std::result::Result<Vec<i64>, fred::error::Error> {
    let mut args = vec![
        lease.as_millis().to_string(),
        field.to_string(),
        inner.grace_ms().to_string(),
    ];
    let (script, script_keys) = mode.call(inner, keys, field, &mut args);
    meter::step("attempt.sent");
    let reply = match (&inner.batcher(), mode.coalesced()) {
        (Some(b), Some(how)) => {
            let op = batch::Op {
                script,
                keys: script_keys,
                args,
                how,
            };
            b.run::<Vec<i64>>(op).await
        }
        _ => script.run::<Vec<i64>>(conn, script_keys, args).await,
    };
    meter::step("attempt.replied");
    reply
}

/// A grant's token, the local end of its lease (conservative: see `guide::safety`) and
/// whether a release handed it over; or what the attempt came to instead (`Err`: held, or
/// the kind's own outcome). A grant with no lease left, or a reply no script sends, is a
/// protocol error (a grant given back first under its own field).
async fn granted<K>(
    inner: &Arc<Inner>,
    keys: &Arc<LockKeys>,
    field: &str,
    lease: Duration,
    sent: Instant,
    raw: &[i64],
    reply: Reply<K>,
) -> Result<std::result::Result<(i64, Instant, bool), Attempt<K>>> {
    match reply {
        Reply::Granted { token, handed_ms } => Ok(Ok(match handed_ms {
            None => (token, sent + lease, false),
            // Handed to this field by a release before this call ran: the lease it has left
            // is counted from this call's send time, which is no later than the server ran it.
            Some(ms) => (token, sent + Duration::from_millis(ms).min(lease), true),
        })),
        Reply::Held(pttl) => Ok(Err(Attempt::Held(pttl))),
        Reply::Kind(outcome) => Ok(Err(Attempt::Kind(outcome))),
        Reply::HandedWithoutLease(pttl) => {
            // Handed this field with no lease left to count on (none, or a key made
            // persistent by hand): give it back under its own field rather than keep it.
            clean_up_refused_grant(inner, keys, field, lease).await;
            Err(protocol(
                inner,
                format!("a handed-over hold with a PTTL of {pttl}"),
            ))
        }
        Reply::Unexpected => Err(protocol(inner, format!("unexpected acquire reply {raw:?}"))),
    }
}

/// Before anyone relies on a grant, it must be on `wanted` replicas (`WAIT` on the
/// connection that ran the acquire); else it is given back and the caller told why.
async fn on_replicas(
    inner: &Arc<Inner>,
    conn: &fred::clients::Client,
    keys: &Arc<LockKeys>,
    field: &str,
    lease: Duration,
    wanted: u32,
    timeout: Duration,
) -> Result<()> {
    // Boxed: fred's WAIT future is several KB, and most clients never send it.
    let acked = Box::pin(wait_replicas(conn, &keys.lock, wanted, timeout)).await;
    if acked.as_ref().is_ok_and(|a| *a >= i64::from(wanted)) {
        return Ok(());
    }
    clean_up_refused_grant(inner, keys, field, lease).await;
    Err(match acked {
        Ok(acked) => Error::ReplicationFailed {
            name: keys.lock.clone(),
            acked: acked.max(0) as u32,
            wanted,
            timeout,
        },
        Err(e) => inner.error("wait", &keys.lock, e),
    })
}

/// What an acquire script's reply says, as its kind reads it ([`AcquireCall::read`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reply<K> {
    /// Granted under `token`; a hold handed over by a release has `handed_ms` of lease left.
    Granted { token: i64, handed_ms: Option<u64> },
    /// Handed over, with this PTTL: no lease left to count on.
    HandedWithoutLease(i64),
    /// As [`Attempt::Held`].
    Held(i64),
    /// As [`Attempt::Kind`].
    Kind(K),
    /// A shape no acquire script sends.
    Unexpected,
}

/// Reads the reply shapes every lock's acquire script shares, of any length and values:
/// `[1, token]` granted, `[3, token, pttl]` handed over with `pttl` left, `[0, pttl]` held.
pub(crate) fn read_grant<K>(reply: &[i64]) -> Reply<K> {
    // A token is positive (a count from 1, or the clock in µs): anything else would wrap to a
    // fence above every later holder's.
    match *reply {
        [1, token] if token > 0 => Reply::Granted {
            token,
            handed_ms: None,
        },
        [3, token, pttl] if token > 0 && pttl > 0 => Reply::Granted {
            token,
            handed_ms: Some(pttl as u64),
        },
        [1, _] => Reply::Unexpected,
        [3, token, _] if token <= 0 => Reply::Unexpected,
        [3, _, pttl] => Reply::HandedWithoutLease(pttl),
        [0, pttl] => Reply::Held(pttl),
        _ => Reply::Unexpected,
    }
}

/// An acquire reply of a shape the caller cannot use: a protocol error.
fn protocol(inner: &Inner, what: String) -> Error {
    Error::Redis {
        operation: "acquire",
        server: inner.server(),
        source: fred::error::Error::new(fred::error::ErrorKind::Protocol, what),
    }
}

/// `WAIT wanted timeout` on the connection that ran the acquire (on a cluster, to the node
/// that owns the lock's slot): how many replicas acknowledged every write sent before it.
async fn wait_replicas(
    conn: &fred::clients::Client,
    lock: &str,
    wanted: u32,
    timeout: Duration,
) -> std::result::Result<i64, fred::error::Error> {
    use fred::interfaces::{ClusterInterface, ServerInterface};
    let ms = timeout.as_millis() as i64;
    let slot = fred::types::Key::from(lock).cluster_hash();
    match conn
        .cached_cluster_state()
        .and_then(|s| s.get_server(slot).cloned())
    {
        Some(node) => {
            conn.with_cluster_node(node)
                .wait(i64::from(wanted), ms)
                .await
        }
        None => conn.wait(i64::from(wanted), ms).await,
    }
}

/// The token a new hold carries: the script's, unless a chaos mutant (`relock::mutant`)
/// breaks that.
pub(crate) fn mutated_token(token: u64) -> u64 {
    crate::seam::token(token)
}

/// One more guard on `hold`, run to its end whatever the caller does (`detach`): a reply that
/// arrives after the caller gave up still becomes a guard, whose drop takes the count off
/// again.
pub(crate) async fn reenter(
    inner: &Arc<Inner>,
    keys: Arc<LockKeys>,
    hold: Arc<Hold>,
    lease: Option<Duration>,
) -> Result<LockGuard> {
    let work = inner.clone();
    let task = inner.shared().run(async move {
        let inner = work;
        let watchdog = lease.is_none();
        let lease = lease.unwrap_or(inner.settings().watchdog_lease);
        // One lease-setting call of this hold at a time (see `renew_first_lease`).
        let gated = hold.clone();
        let _gate = gated.gate.lock().await;
        let sent = Instant::now();
        // Every key whose TTL is the hold's lease (a read hold's timeout key too).
        let script_keys = keys.kind.lease_keys(&keys, &hold.field);
        let reply: Option<i64> = lock_scripts::REENTER
            .run(
                inner.conn(),
                script_keys,
                vec![lease.as_millis().to_string(), hold.field.clone()],
            )
            .await
            .map_err(|e| inner.error("reenter", &keys.lock, e))?;
        let lost = || Error::LockLost {
            name: keys.lock.clone(),
        };
        match reply {
            Some(_) if hold.add_guard(watchdog, sent + lease) => {
                Ok(LockGuard::new(inner, hold, watchdog))
            }
            // The hold's last guard went meanwhile: its release removes this count too.
            Some(_) => Err(lost()),
            None => {
                hold.mark_lost(
                    "a re-entry found the hold gone (expired, deleted or force-unlocked)",
                );
                Err(lost())
            }
        }
    });
    task.await?
}
