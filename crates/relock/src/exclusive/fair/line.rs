//! The fair lock's waiting line as this client knows it: one [`QueueEntry`] per waiting
//! `lock()` call, by the field its hold will have if granted, and [`Line`], the client's
//! registry of them (its per-client state, with its shutdown step: leave every line). The fair
//! wait loop registers and retires entries ([`Waiting`], which leaves the line on drop); the
//! heartbeat refreshes them.
//!
//! On the server the line is one sorted set per lock (field → ticket, and each field's
//! heartbeat deadline and first lease beside it). A waiter that stops waiting for any reason
//! (acquired, timed out, dropped, failed) drops its [`Waiting`], which takes the entry out of
//! the line in the background. If even that fails, the entry stops being refreshed and every
//! script that touches the line evicts it after its heartbeat deadline: leaving cannot be lost.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dashmap::DashMap;
use tokio::sync::{Mutex as AsyncMutex, Notify};
use tokio::time::Instant;

use tracing::Instrument;

use crate::client::inner::{Inner, KindState, Round};
use crate::client::redact;
use crate::client::scripts;
use crate::error::Result;
use crate::hold::keys::prefixed;
use crate::hold::kind::LockKeys;

scripts::scripts! {
    /// Drop one count of a fair lock's hold (or the whole hold) and hand the lock to the next in
    /// line (or tell it).
    FAIR_RELEASE = writes "fair_release.lua" ["release", "mint", "queue", "handoff"];
    /// Fair lock: take it when free and first in line, or join the queue.
    FAIR_ACQUIRE = writes "fair_acquire.lua" ["mint", "shape", "queue", "handoff"];
    /// Fair lock: a client's batch heartbeat for its waiters; evicts dead ones.
    FAIR_HEARTBEAT = writes "fair_heartbeat.lua" ["mint", "queue", "handoff"];
    /// Fair lock: a waiter leaves the queue (and the next one is told if it was first).
    FAIR_LEAVE = writes "fair_leave.lua" ["mint", "queue", "handoff"];
    /// Fair lock: delete it whoever holds it, and tell the first in line.
    FAIR_FORCE_UNLOCK = writes "fair_force_unlock.lua" ["shape", "queue"];
}

/// A fair lock's waiting line, beside the lock's own keys (`lua/lib/queue.lua` has the layout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueKeys {
    /// One sorted set: owner → ticket (arrival order), `alive:<owner>` → heartbeat deadline
    /// (server ms), `lease:<owner>` → the first lease it asks for if handed the lock while it
    /// waits.
    pub(crate) line: String,
    /// `<owner>=<token>` of the waiter handed the lock last, for as long as that lease lasts.
    pub(crate) grant: String,
}

/// Scores of the line's tickets are at least this (the server clock in µs); deadlines and first
/// leases score below it.
pub(crate) const TICKET_MIN: i64 = 1_000_000_000_000_000;

impl QueueKeys {
    /// The line of the fair lock `name`.
    pub(crate) fn of(name: &str) -> Self {
        QueueKeys {
            line: prefixed("relock_fair_line", name),
            grant: prefixed("relock_fair_grant", name),
        }
    }

    /// KEYS of the fair-line scripts that take the group (lock, line, counter, grant): the
    /// counter and the grant record because a release, a leave or a heartbeat may hand the lock
    /// to the first waiter (`lua/lib/handoff.lua`). The channels go with the arguments: an ACL
    /// user needs a channel grant for them, not a key grant
    /// ([`guide::operations`](crate::guide::operations#least-privilege-acl-users)).
    pub(crate) fn group(&self, keys: &LockKeys) -> [String; 4] {
        [
            keys.lock.clone(),
            self.line.clone(),
            keys.token.clone(),
            self.grant.clone(),
        ]
    }
}

/// The channel of relock's fair-lock messages (`<field>`: you are first and the lock is free;
/// `<field>=<token>`: you hold it), which the line's waiters listen on
/// ([`LockKeys::wake`]). Not Redisson's `redisson_lock__channel`: a Redisson `RLock` waiter of
/// the same name decodes that channel's messages as numbers, and logs an error for anything
/// else.
pub(crate) fn fair_channel(name: &str) -> String {
    prefixed("relock_fair_channel", name)
}

/// One waiter in a line, as this client knows it.
#[derive(Debug)]
pub(crate) struct QueueEntry {
    pub(crate) keys: Arc<LockKeys>,
    /// Its line's keys.
    pub(crate) line: QueueKeys,
    pub(crate) field: String,
    /// The ticket the server gave us (0: none yet), sent back so that a waiter evicted while
    /// alive rejoins at its old place.
    pub(crate) ticket: AtomicI64,
    /// Whether the server may have us in line (set before every "wait" attempt, cleared when
    /// an attempt is granted or we have left).
    pub(crate) queued: AtomicBool,
    /// Held by an attempt in flight and by the leave, so a leave never overtakes an attempt
    /// that would put us back in line.
    pub(crate) gate: Arc<AsyncMutex<()>>,
    /// Woken by a message naming us, or by the heartbeat when we should try now.
    pub(crate) wake: Arc<Notify>,
    /// The first lease this waiter asks for if a release hands it the lock (direct handoff),
    /// or `None`: it is told to come and take it instead.
    pub(crate) first_lease: Option<Duration>,
    /// The token of a handoff message naming us (0: none yet), set by the dispatcher.
    pub(crate) granted: Arc<AtomicU64>,
    /// The send time of the latest call whose reply showed this field in line (an attempt, a
    /// heartbeat): a handoff to this field happened after that call ran, so no earlier than
    /// this instant, from which its lease is counted
    /// ([`guide::safety`](crate::guide::safety#direct-handoff)).
    pub(crate) in_line_at: Mutex<Option<Instant>>,
    /// The field this entry replaces (a rejoin after an attempt whose outcome was unknown):
    /// its first join takes that field's place in line (`fair_acquire.lua`, ARGV[11]).
    pub(crate) replaces: Option<String>,
}

impl QueueEntry {
    pub(crate) fn new(
        keys: Arc<LockKeys>,
        field: String,
        ticket: i64,
        first_lease: Option<Duration>,
        replaces: Option<String>,
    ) -> Self {
        QueueEntry {
            line: QueueKeys::of(&keys.lock),
            keys,
            field,
            ticket: AtomicI64::new(ticket),
            queued: AtomicBool::new(false),
            gate: Arc::new(AsyncMutex::new(())),
            wake: Arc::new(Notify::new()),
            first_lease,
            granted: Arc::new(AtomicU64::new(0)),
            in_line_at: Mutex::new(None),
            replaces,
        }
    }

    /// Records a reply that showed this field in line, to a call sent at `sent`.
    pub(crate) fn seen_in_line(&self, sent: Instant) {
        let mut at = self.in_line_at.lock().unwrap();
        if at.is_none_or(|a| a < sent) {
            *at = Some(sent);
        }
    }

    /// Whether a reply has shown this field in line: from then on the server does not put the
    /// field back in line once it is out (evicted, or handed the lock), so a field is handed
    /// the lock at most once, after every such reply was computed.
    pub(crate) fn joined(&self) -> bool {
        self.in_line_at.lock().unwrap().is_some()
    }
}

/// This client's waiters in fair lines, by field: the fair lock's state per client
/// (`Inner::state::<Line>()`).
#[derive(Debug, Default)]
pub(crate) struct Line {
    entries: DashMap<String, Arc<QueueEntry>>,
    /// Started with the client's first fair waiter (`fair::join_queue`).
    pub(crate) heartbeats: std::sync::OnceLock<()>,
}

impl Line {
    pub(crate) fn insert(&self, entry: Arc<QueueEntry>) {
        self.entries.insert(entry.field.clone(), entry);
    }

    /// Removes `entry` (not a newer entry under the same field).
    pub(crate) fn remove(&self, entry: &Arc<QueueEntry>) {
        self.entries
            .remove_if(&entry.field, |_, e| Arc::ptr_eq(e, entry));
    }

    /// Every registered entry.
    pub(crate) fn all(&self) -> Vec<Arc<QueueEntry>> {
        self.entries.iter().map(|e| e.value().clone()).collect()
    }

    /// The entries that may be in a line on the server (for the heartbeat).
    pub(crate) fn queued(&self) -> Vec<Arc<QueueEntry>> {
        self.entries
            .iter()
            .filter(|e| e.queued.load(Ordering::SeqCst))
            .map(|e| e.value().clone())
            .collect()
    }

    /// How many entries may be in a line (for inspection).
    pub(crate) fn queued_count(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| e.queued.load(Ordering::SeqCst))
            .count()
    }

    /// Fields of the waiters on `lock` (for inspection).
    pub(crate) fn fields_of(&self, lock: &str) -> Vec<String> {
        self.entries
            .iter()
            .filter(|e| e.keys.lock == lock)
            .map(|e| e.field.clone())
            .collect()
    }
}

/// Takes `entry` out of its line on the server (`fair_leave.lua`), handing the lock to (or
/// telling) the next waiter if it was first, and giving back a grant a release handed it that
/// it never took. Unbounded: callers bound it. `grace_ms`: the fencing counter's life once
/// seeded (a handoff mints a token).
pub(crate) async fn leave(
    conn: &fred::clients::Client,
    entry: &QueueEntry,
    publish: &str,
    grace_ms: u64,
) -> std::result::Result<(), fred::error::Error> {
    let group = entry.line.group(&entry.keys);
    FAIR_LEAVE
        .run::<i64>(
            conn,
            group.to_vec(),
            vec![
                entry.field.clone(),
                publish.into(),
                grace_ms.to_string(),
                entry.keys.wake.clone(),
            ],
        )
        .await
        .map(drop)
}

/// A waiter's registration in the line; leaving is done on drop.
#[derive(Debug)]
pub(crate) struct Waiting {
    pub(crate) inner: Arc<Inner>,
    pub(crate) entry: Arc<QueueEntry>,
}

/// Runs `fair_leave.lua` for `entry`, bounded by the command timeout.
pub(crate) async fn leave_queue(inner: &Inner, entry: &QueueEntry) -> Result<()> {
    let call = leave(inner.conn(), entry, inner.publish_cmd(), inner.grace_ms());
    match tokio::time::timeout(inner.settings().command_timeout, call).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(inner.error("fair_leave", &entry.keys.lock, e)),
        Err(_) => Err(crate::Error::Timeout {
            operation: "fair_leave",
            server: inner.server(),
            timeout: inner.settings().command_timeout,
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
                let limit = inner.settings().command_timeout;
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
                    let leave = leave(
                        inner.conn(),
                        &entry,
                        inner.publish_cmd(),
                        inner.grace_ms(),
                    );
                    let error = match tokio::time::timeout(limit, leave).await {
                        Ok(Ok(())) => None,
                        Ok(Err(e)) => Some(redact::in_text(&e.to_string(), &inner.settings().url)),
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
            self.inner.shared().tracker.spawn(leave);
        } else {
            // No runtime: the heartbeat stops, and the deadline evicts us.
            let entry = &self.entry;
            self.inner.state::<Line>().remove(entry);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lines_keys_share_the_locks_slot() {
        let q = QueueKeys::of("orders:42");
        assert_eq!(q.line, "relock_fair_line:{orders:42}");
        assert_eq!(q.grant, "relock_fair_grant:{orders:42}");
        assert_eq!(fair_channel("orders:42"), "relock_fair_channel:{orders:42}");
        let t = QueueKeys::of("orders:{42}:a");
        assert_eq!(t.line, "relock_fair_line:orders:{42}:a");
        let slot = |k: &str| fred::util::redis_keyslot(k.as_bytes());
        for name in ["orders:42", "orders:{42}:a"] {
            let q = QueueKeys::of(name);
            for k in [&q.line, &q.grant, &fair_channel(name)] {
                assert_eq!(slot(k), slot(name), "{k}");
            }
        }
    }
}
