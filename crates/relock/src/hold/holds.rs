//! The client's local record of the holds it has: one [`Hold`] per successful fresh
//! acquisition, with its own field on the server.
//!
//! # Per-hold identity
//! Every fresh acquisition gets a field that no other hold ever had (`<client_id>:<n>`, `n`
//! from a per-client sequence with a random start). Everything that belongs to a hold (its
//! re-entries, renewals, releases, the clean-up after an acquire whose reply was lost) names
//! that field, and the scripts act only on that field. So a command that arrives late, twice
//! or out of order can only touch the hold it was sent for: never a later hold of the same
//! task or owner, which has another field.
//! [`guide::safety`](crate::guide::safety#one-hold-one-identity-nothing-but-a-hold-can-end-shorten-or-resurrect-it)
//! has the argument.
//!
//! The local guard count mirrors the count in the lock hash. The watchdog renews holds that
//! have a watchdog guard; guards read their "lost" signal from here, so the re-entrant guards
//! of one hold share one fate.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use dashmap::DashMap;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::hold::kind::LockKeys;
use crate::hold::lease::{Lease, Renewal};
use crate::hold::meter;
use crate::hold::owner::Owner;

/// The code that calls `lock()`: its tokio task, or outside any task (inside `block_on`) its
/// thread. Recorded on each hold to answer "held by the current task" and to warn about a task
/// waiting on its own hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Caller {
    Task(tokio::task::Id),
    Thread(std::thread::ThreadId),
}

impl Caller {
    pub(crate) fn current() -> Self {
        match tokio::task::try_id() {
            Some(id) => Caller::Task(id),
            None => Caller::Thread(std::thread::current().id()),
        }
    }
}

#[derive(Debug)]
pub(crate) struct Hold {
    pub(crate) keys: Arc<LockKeys>,
    /// This hold's own field in the lock hash: `<client_id>:<n>`, never reused.
    pub(crate) field: String,
    pub(crate) token: u64,
    /// The explicit owner ([`Owner::scope`] or per-task mode) whose later `lock()` calls
    /// re-enter this hold; `None` for a hold that is re-entered only through its scope.
    pub(crate) owner: Option<Owner>,
    /// The code that acquired it, to warn when it waits on its own hold.
    pub(crate) task: Caller,
    /// When it was granted, for the hold-time metric.
    pub(crate) granted_at: Instant,
    /// Its guards. Taken around a guard's joining, and around the count read that decides
    /// whether a loss is reported, so that a guard either sees the loss or is counted in it.
    guards: Mutex<Guards>,
    /// Its local end, loss and release: the rules every lease follows (`hold::lease`). Ended
    /// when its last guard goes.
    lease: Lease,
    /// Signalled when the hold leaves the registry (its last release finished).
    pub(crate) gone: Notify,
    /// One call at a time that must not overlap another of the same hold, as its backend and
    /// kind take it: a renewal round and a release, where a renewal may put the lock back
    /// where it is missing (it must never be sent after the release); and the calls that set
    /// the lease (a handoff's settle, which may shorten it, a re-entry, an extension), so that
    /// one answered out of order never leaves the local lease past the server's.
    pub(crate) gate: tokio::sync::Mutex<()>,
}

#[derive(Debug)]
struct Guards {
    /// Guards alive for this hold; equals the server's hold count while all is well.
    count: u32,
    /// How many of those guards want the watchdog.
    watchdog: u32,
}

impl Hold {
    pub(crate) fn new(
        keys: Arc<LockKeys>,
        field: String,
        token: u64,
        owner: Option<Owner>,
        task: Caller,
        valid_until: Instant,
    ) -> Self {
        Hold {
            keys,
            field,
            token,
            owner,
            task,
            granted_at: Instant::now(),
            guards: Mutex::new(Guards {
                count: 0,
                watchdog: 0,
            }),
            lease: Lease::of_hold(valid_until),
            gone: Notify::new(),
            gate: tokio::sync::Mutex::new(()),
        }
    }

    /// Adds a guard. Returns false if the hold is lost or its last guard has gone (the caller
    /// must not use it).
    pub(crate) fn add_guard(&self, watchdog: bool, valid_until: Instant) -> bool {
        let mut g = self.guards.lock().unwrap();
        // A hold whose local deadline has passed is lost, even if nobody has looked yet: a new
        // guard must not revive it.
        if !self.lease.join(valid_until) {
            return false;
        }
        g.count += 1;
        if watchdog {
            g.watchdog += 1;
        }
        true
    }

    /// Removes a guard (synchronously: a dropped guard stops counting at once); returns the
    /// remaining count and whether the hold was lost. At 0 the hold is "releasing": no guard
    /// can join it any more.
    pub(crate) fn remove_guard(&self, watchdog: bool) -> (u32, bool) {
        let mut g = self.guards.lock().unwrap();
        g.count = g.count.saturating_sub(1);
        if g.count == 0 {
            self.lease.mark_ended();
        }
        if watchdog {
            g.watchdog = g.watchdog.saturating_sub(1);
        }
        (g.count, self.lease.is_marked_lost())
    }

    /// The last guard went away.
    pub(crate) fn is_releasing(&self) -> bool {
        self.lease.is_ended()
    }

    /// Can take another guard: not lost, not released, lease not run out locally.
    pub(crate) fn is_live(&self) -> bool {
        self.lease.is_live()
    }

    pub(crate) fn count(&self) -> u32 {
        self.guards.lock().unwrap().count
    }

    /// Whether the watchdog should renew this hold.
    pub(crate) fn wants_renewal(&self) -> bool {
        self.guards.lock().unwrap().watchdog > 0 && !self.lease.is_marked_lost()
    }

    /// Marks the hold lost and wakes everyone waiting in `lost()`. Idempotent. A hold that
    /// still has guards is reported once, as a `warn` event with the lock, the hold's field and
    /// `reason`.
    pub(crate) fn mark_lost(&self, reason: &'static str) {
        if self.lease.mark_lost() {
            self.report_lost(reason);
        }
    }

    /// The report of a loss that this hold's lease has just recorded.
    fn report_lost(&self, reason: &'static str) {
        if self.count() > 0 {
            meter::lost(self.keys.kind.label());
            tracing::warn!(lock = %self.keys.lock, field = %self.field, reason, "lock lost while held");
        }
    }

    /// Marks the hold ended by its own client (shutdown, or forgotten without a runtime): the
    /// same signal, without the warning.
    pub(crate) fn mark_ended(&self) {
        self.lease.mark_lost();
    }

    /// Records a successful renewal sent at `sent_at` (the lease's rules: one that comes after
    /// the local deadline marks the hold lost rather than reviving it).
    pub(crate) fn renewed(&self, sent_at: Instant, lease: Duration) -> Renewal {
        let r = self.lease.renewed(sent_at, lease);
        if r == Renewal::Late {
            self.report_lost("a renewal was answered after the local lease deadline");
        }
        r
    }

    pub(crate) fn valid_until(&self) -> Instant {
        self.lease.valid_until()
    }

    /// Whether every guard of it wants the watchdog (none has a fixed lease of its own).
    pub(crate) fn only_watchdog_guards(&self) -> bool {
        let g = self.guards.lock().unwrap();
        g.count > 0 && g.count == g.watchdog
    }

    /// The server's lease was set to exactly `lease` by a call sent at `sent`.
    pub(crate) fn settled(&self, sent: Instant, lease: Duration) {
        self.lease.settled(sent, lease);
    }

    /// Lost, or its lease ran out on the local clock.
    pub(crate) fn is_lost(&self) -> bool {
        self.lease.is_lost()
    }

    /// Resolves once the hold has ended: marked lost, its last guard gone (released), or its
    /// local deadline passed. Unlike [`lost`](Self::lost) it marks nothing (a watcher's wait
    /// must not turn an unobserved lease end into a reported loss).
    pub(crate) async fn ended(&self) {
        self.lease.ended().await
    }

    /// Resolves once the hold is lost: marked lost, or its local `valid_until` passed, with or
    /// without a watchdog (a renewal that succeeds moves `valid_until` first). So it never
    /// resolves later than `valid_until`, whatever the watchdog is doing.
    pub(crate) async fn lost(&self) {
        if self.lease.lost().await {
            self.report_lost(
                "its lease ran out on the local clock (renewals failing, or a fixed lease ending)",
            );
        }
    }
}

/// The holds of one client, indexed by lock name. A client has at most one live hold per lock
/// name (the lock is exclusive); a lost or releasing one may sit beside it for a moment.
#[derive(Debug, Default)]
pub(crate) struct Holds {
    by_lock: DashMap<String, Vec<Arc<Hold>>>,
}

impl Holds {
    pub(crate) fn insert(&self, hold: Arc<Hold>) {
        self.by_lock
            .entry(hold.keys.lock.clone())
            .or_default()
            .push(hold);
    }

    /// Takes `hold` out of the registry (once) and tells anyone waiting for it to go.
    pub(crate) fn remove(&self, hold: &Arc<Hold>) {
        let removed = self
            .by_lock
            .remove_if_mut(&hold.keys.lock, |_, v| {
                v.retain(|h| !Arc::ptr_eq(h, hold));
                v.is_empty()
            })
            .is_some();
        if !removed {
            if let Some(mut v) = self.by_lock.get_mut(&hold.keys.lock) {
                v.retain(|h| !Arc::ptr_eq(h, hold));
            }
        }
        hold.gone.notify_waiters();
    }

    /// Whether `hold` is still in the registry.
    pub(crate) fn contains(&self, hold: &Arc<Hold>) -> bool {
        self.by_lock
            .get(&hold.keys.lock)
            .is_some_and(|v| v.iter().any(|h| Arc::ptr_eq(h, hold)))
    }

    /// The first hold of `lock` that satisfies `pred`.
    pub(crate) fn find(&self, lock: &str, pred: impl Fn(&Hold) -> bool) -> Option<Arc<Hold>> {
        self.by_lock
            .get(lock)
            .and_then(|v| v.iter().find(|h| pred(h)).cloned())
    }

    /// Every hold of `lock`.
    pub(crate) fn of_lock(&self, lock: &str) -> Vec<Arc<Hold>> {
        self.by_lock
            .get(lock)
            .map(|v| v.clone())
            .unwrap_or_default()
    }

    /// Every hold, for the watchdog and shutdown.
    pub(crate) fn all(&self) -> Vec<Arc<Hold>> {
        self.by_lock
            .iter()
            .flat_map(|e| e.value().clone())
            .collect()
    }

    /// Holds with at least one guard.
    pub(crate) fn held(&self) -> usize {
        self.by_lock
            .iter()
            .map(|e| e.value().iter().filter(|h| h.count() > 0).count())
            .sum()
    }

    pub(crate) fn clear(&self) {
        let all = self.all();
        self.by_lock.clear();
        for h in all {
            h.gone.notify_waiters();
        }
    }
}

/// Makes the fields of one client's holds: `<client_id>:<n>`, with `n` from a sequence that
/// starts at a random point, so that two incarnations of a process with the same client id
/// do not reuse each other's fields either.
#[derive(Debug)]
pub(crate) struct FieldMaker {
    prefix: String,
    next: std::sync::atomic::AtomicU64,
}

impl FieldMaker {
    pub(crate) fn new(client_id: &str) -> Self {
        // 62 random bits: far from wrapping, never negative in a Lua double's integer range
        // (fields are strings; only their uniqueness matters).
        let start = uuid::Uuid::new_v4().as_u64_pair().0 >> 2;
        FieldMaker {
            prefix: format!("{client_id}:"),
            next: std::sync::atomic::AtomicU64::new(start),
        }
    }

    /// A field that no hold of this client has had.
    pub(crate) fn next(&self) -> String {
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{}{n}", self.prefix)
    }
}
