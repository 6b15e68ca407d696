//! The fair lock's waiting line as this client knows it: one [`QueueEntry`] per waiting
//! `lock()` call, by the field its hold will have if granted. The fair wait loop (`fair`)
//! registers and retires entries; the heartbeat refreshes them; shutdown leaves them all.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dashmap::DashMap;
use tokio::sync::{Mutex as AsyncMutex, Notify};
use tokio::time::Instant;

use crate::hold::keys::prefixed;
use crate::hold::kind::LockKeys;

crate::client::scripts::scripts! {
    /// Drop one count of a fair lock's hold (or the whole hold) and hand the lock to the next in
    /// line (or tell it).
    FAIR_RELEASE = writes "fair_release.lua" ["release", "mint", "queue", "handoff"];
    /// Fair lock: take it when free and first in line, or join the queue.
    FAIR_ACQUIRE = writes "fair_acquire.lua" ["mint", "shape", "queue", "handoff"];
    /// Fair lock: a client's batch heartbeat for its waiters; evicts dead ones.
    FAIR_HEARTBEAT = writes "fair_heartbeat.lua" ["mint", "queue", "handoff"];
    /// Fair lock: a waiter leaves the queue (and the next one is told if it was first).
    FAIR_LEAVE = writes "fair_leave.lua" ["mint", "queue", "handoff"];
}

/// The sorted sets (and sequence) of a fair lock's waiting line, beside the lock's own keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueKeys {
    /// owner → ticket: arrival order.
    pub(crate) queue: String,
    /// owner → heartbeat deadline (server ms).
    pub(crate) alive: String,
    /// The ticket sequence (INCR).
    pub(crate) seq: String,
    /// owner → the first lease it asks for if handed the lock while it waits; then, once
    /// handed it, owner → its token (`lua/lib/queue.lua`).
    pub(crate) handoff: String,
}

impl QueueKeys {
    /// The line of the fair lock `name`.
    pub(crate) fn of(name: &str) -> Self {
        QueueKeys {
            queue: prefixed("relock_fair_queue", name),
            alive: prefixed("relock_fair_alive", name),
            seq: prefixed("relock_fair_seq", name),
            handoff: prefixed("relock_fair_handoff", name),
        }
    }

    /// KEYS of the fair-queue scripts that take the group (lock, queue, alive, seq, counter,
    /// handoff): the counter and the handoff hash because a release, a leave or a heartbeat
    /// may hand the lock to the first waiter (`lua/lib/handoff.lua`). The channels go with
    /// the arguments: an ACL user needs a channel grant for them, not a key grant
    /// ([`guide::operations`](crate::guide::operations#least-privilege-acl-users)).
    pub(crate) fn group(&self, keys: &LockKeys) -> [String; 6] {
        [
            keys.lock.clone(),
            self.queue.clone(),
            self.alive.clone(),
            self.seq.clone(),
            keys.token.clone(),
            self.handoff.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lines_keys_share_the_locks_slot() {
        let q = QueueKeys::of("orders:42");
        assert_eq!(q.queue, "relock_fair_queue:{orders:42}");
        assert_eq!(q.alive, "relock_fair_alive:{orders:42}");
        assert_eq!(q.seq, "relock_fair_seq:{orders:42}");
        assert_eq!(q.handoff, "relock_fair_handoff:{orders:42}");
        assert_eq!(fair_channel("orders:42"), "relock_fair_channel:{orders:42}");
        let t = QueueKeys::of("orders:{42}:a");
        assert_eq!(t.alive, "relock_fair_alive:orders:{42}:a");
        let slot = |k: &str| fred::util::redis_keyslot(k.as_bytes());
        for name in ["orders:42", "orders:{42}:a"] {
            let q = QueueKeys::of(name);
            for k in [&q.queue, &q.alive, &q.seq, &q.handoff, &fair_channel(name)] {
                assert_eq!(slot(k), slot(name), "{k}");
            }
        }
    }
}
