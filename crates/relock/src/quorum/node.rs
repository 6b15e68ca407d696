//! One master of a quorum: its connection set (replaced, never reconnected, when it breaks),
//! when it may vote (its run id and uptime, the restart quarantine), and the connection a lock
//! is pinned to on it.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::time::Instant;

use crate::client::inner::Inner;

pub(crate) struct Node {
    /// The URL as given (with credentials): only for connecting (and, without its
    /// credentials, for telling servers apart: `Node::url`).
    pub(crate) url: String,
    /// The URL without credentials: for every message.
    pub(crate) name: String,
    pub(crate) conn: RwLock<Option<Arc<Inner>>>,
    pub(crate) state: Mutex<NodeState>,
    /// Since when a new set of connections is on its way (its set broke: a vote or check got
    /// a connection error, or fred said so), until its first attempt fails or it is checked:
    /// a waiter waits for it rather than give up (see `is_reconnecting`).
    pub(crate) reconnecting: Mutex<Option<Instant>>,
}

#[derive(Debug, Default)]
pub(crate) struct NodeState {
    /// The server's run id when last checked; a new one means it restarted.
    pub(crate) run_id: Option<String>,
    /// When it may vote; `None` until its uptime is known (after connecting or an error).
    pub(crate) eligible_at: Option<Instant>,
    /// When its connections were last replaced, and the wait before the next set.
    pub(crate) replaced_at: Option<Instant>,
    pub(crate) replace_delay: Duration,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("url", &self.name)
            .field("connected", &self.conn.read().unwrap().is_some())
            .finish_non_exhaustive()
    }
}

/// Whether a node may vote now.
#[derive(Debug)]
pub(crate) enum Eligibility {
    Yes(Arc<Inner>),
    Quarantined(Duration),
    Unavailable(String),
}

impl Node {
    /// Whether a new set of connections is on its way (see `reconnecting`).
    pub(crate) fn is_reconnecting(&self) -> bool {
        // Bounded: a set that never comes back does not keep a waiter waiting.
        const AT_MOST: Duration = Duration::from_secs(5);
        self.reconnecting
            .lock()
            .unwrap()
            .is_some_and(|since| since.elapsed() < AT_MOST)
            // Failed, and about to be replaced.
            || self.conn().is_some_and(|c| *c.pool_failed().borrow())
    }

    /// The node's set broke (or is being replaced): see `reconnecting`.
    pub(crate) fn mark_reconnecting(&self, on: bool) {
        let mut r = self.reconnecting.lock().unwrap();
        *r = match (on, *r) {
            (true, Some(since)) => Some(since),
            (true, None) => Some(Instant::now()),
            (false, _) => None,
        };
    }

    pub(crate) fn eligibility(&self) -> Eligibility {
        let Some(conn) = self.conn.read().unwrap().clone() else {
            if self.reconnecting.lock().unwrap().is_some() {
                return Eligibility::Unavailable("reconnecting".into());
            }
            return Eligibility::Unavailable("not connected yet".into());
        };
        match self.state.lock().unwrap().eligible_at {
            None => Eligibility::Unavailable("uptime not known yet (just (re)connected)".into()),
            Some(at) => {
                let now = Instant::now();
                if at <= now {
                    Eligibility::Yes(conn)
                } else {
                    Eligibility::Quarantined(at - now)
                }
            }
        }
    }

    /// The connection, whether or not the node may vote (releases go everywhere).
    pub(crate) fn conn(&self) -> Option<Arc<Inner>> {
        self.conn.read().unwrap().clone()
    }

    /// A call failed for connection reasons: the node may have restarted; it votes again once
    /// its uptime has been checked.
    /// The URL as given (with credentials): for `redact::identity`, never to be shown.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    pub(crate) fn suspect(&self) {
        self.state.lock().unwrap().eligible_at = None;
    }

    /// Records what a check of `conn` found (the server's run id, and its uptime in whole
    /// seconds) and when the node may vote: once `quarantine` has passed since its start.
    /// Nothing if the set was replaced meanwhile (the new one gets its own check).
    pub(crate) fn note_instance(
        &self,
        conn: &Arc<Inner>,
        uptime: u64,
        run_id: String,
        quarantine: Duration,
    ) {
        // The connection's lock, then the state's (as `replace_dead`): the set cannot be
        // replaced between this check and the update.
        let current = self.conn.read().unwrap();
        if !current.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
            return; // replaced meanwhile: the new connections get their own check
        }
        let mut state = self.state.lock().unwrap();
        let same_instance = state.run_id.as_deref() == Some(run_id.as_str());
        if state.run_id.is_some() && !same_instance {
            tracing::warn!(node = %self.name, "node restarted (new run id); quarantined");
        }
        state.run_id = Some(run_id);
        // Whole seconds, rounded down: the server started no later than `now - uptime`, so
        // the quarantine ends no earlier than it should.
        let wait = quarantine.saturating_sub(Duration::from_secs(uptime));
        let at = Instant::now() + wait;
        state.eligible_at = Some(match state.eligible_at {
            // The same instance: each check bounds its start from above, and the earliest
            // bound is the tightest. (Taking the latest, every check while the uptime still
            // read 0 put the end 250 ms further: a quarantine under a second lasted one.)
            Some(prev) if same_instance => prev.min(at),
            // Another instance, or the first check: a quarantine that is running is never
            // shortened.
            Some(prev) if prev > at && prev > Instant::now() => prev,
            _ => at,
        });
    }
}

/// The connection a lock uses on a node: always the same one for one lock name.
pub(crate) fn pinned<'a>(conn: &'a Inner, name: &str) -> &'a fred::clients::Client {
    let clients = conn.pool().clients();
    &clients[pin_index(name, clients.len())]
}

pub(crate) fn pin_index(name: &str, connections: usize) -> usize {
    let mut h = DefaultHasher::new();
    name.hash(&mut h);
    (h.finish() as usize) % connections.max(1)
}
