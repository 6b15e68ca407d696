//! The fair lock's waiting line as this client knows it: one [`QueueEntry`] per waiting
//! `lock()` call, by the field its hold will have if granted. The fair wait loop (`fair`)
//! registers and retires entries; the heartbeat refreshes them; shutdown leaves them all.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dashmap::DashMap;
use tokio::sync::{Mutex as AsyncMutex, Notify};
use tokio::time::Instant;

use crate::client::scripts;
use crate::hold::kind::LockKeys;

/// One waiter in a line, as this client knows it.
#[derive(Debug)]
pub(crate) struct QueueEntry {
    pub(crate) keys: Arc<LockKeys>,
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
    /// this instant, from which its lease is counted (`docs/safety.md`).
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
    let Some(group) = entry.keys.queue_group() else {
        return Ok(());
    };
    scripts::FAIR_LEAVE
        .run::<i64>(
            conn,
            group.to_vec(),
            vec![
                entry.field.clone(),
                publish.into(),
                grace_ms.to_string(),
                entry.keys.wake_channel().to_string(),
            ],
        )
        .await
        .map(drop)
}
