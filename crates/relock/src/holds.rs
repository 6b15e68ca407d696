//! The client's local record of the locks it holds: one [`Hold`] per (lock, owner).
//!
//! The hold count here mirrors the count in the lock hash. The watchdog renews the holds that
//! have a watchdog-managed guard, and guards read their "lost" signal from here, so reentrant
//! guards of one owner share one fate.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio::time::Instant;

use crate::keys::LockKeys;

/// Registry key: (lock name, owner field).
pub(crate) type HoldKey = (String, String);

#[derive(Debug)]
pub(crate) struct Hold {
    pub(crate) keys: Arc<LockKeys>,
    /// `<client_id>:<owner>`.
    pub(crate) field: String,
    pub(crate) token: u64,
    state: Mutex<HoldState>,
    /// Bumped whenever the lost flag or the watchdog count changes, to wake `lost()` callers.
    changed: watch::Sender<()>,
    /// Signalled when the hold leaves the registry (its last release finished).
    pub(crate) gone: Notify,
    /// Quorum holds: held by a renewal round and by a release, so that a renewal (which puts
    /// the lock back on nodes where it is free) is never sent after the release.
    pub(crate) gate: tokio::sync::Mutex<()>,
}

#[derive(Debug)]
struct HoldState {
    /// Guards alive for this hold; equals the server's hold count while all is well.
    count: u32,
    /// How many of those guards want the watchdog.
    watchdog: u32,
    lost: bool,
    /// The last guard went away and the release is under way; no new guard may join.
    releasing: bool,
    /// Local, conservative end of the lease: send time of the last successful acquire or renew
    /// plus the lease it set. Measured on the monotonic clock.
    valid_until: Instant,
}

impl Hold {
    pub(crate) fn new(
        keys: Arc<LockKeys>,
        field: String,
        token: u64,
        valid_until: Instant,
    ) -> Self {
        Hold {
            keys,
            field,
            token,
            state: Mutex::new(HoldState {
                count: 0,
                watchdog: 0,
                lost: false,
                releasing: false,
                valid_until,
            }),
            changed: watch::channel(()).0,
            gone: Notify::new(),
            gate: tokio::sync::Mutex::new(()),
        }
    }

    /// Adds a guard. Returns false if the hold is lost or being released (the caller must not
    /// use it).
    pub(crate) fn add_guard(&self, watchdog: bool, valid_until: Instant) -> bool {
        let mut s = self.state.lock().unwrap();
        if s.lost || s.releasing {
            return false;
        }
        s.count += 1;
        if watchdog {
            s.watchdog += 1;
        }
        s.valid_until = s.valid_until.max(valid_until);
        drop(s);
        self.changed.send_replace(());
        true
    }

    /// Removes a guard; returns the remaining count and whether the hold was lost.
    pub(crate) fn remove_guard(&self, watchdog: bool) -> (u32, bool) {
        let mut s = self.state.lock().unwrap();
        s.count = s.count.saturating_sub(1);
        s.releasing = s.count == 0;
        if watchdog {
            s.watchdog = s.watchdog.saturating_sub(1);
        }
        let out = (s.count, s.lost);
        drop(s);
        self.changed.send_replace(());
        out
    }

    /// The last guard went away and its release has not finished yet.
    pub(crate) fn is_releasing(&self) -> bool {
        self.state.lock().unwrap().releasing
    }

    pub(crate) fn count(&self) -> u32 {
        self.state.lock().unwrap().count
    }

    /// Whether the watchdog should renew this hold.
    pub(crate) fn wants_renewal(&self) -> bool {
        let s = self.state.lock().unwrap();
        s.watchdog > 0 && !s.lost
    }

    /// Marks the hold lost and wakes everyone waiting in `lost()`. Idempotent.
    pub(crate) fn mark_lost(&self) {
        if self.set_lost() {
            tracing::warn!(lock = %self.keys.lock, owner = %self.field, "lock lost while held");
        }
    }

    /// Marks the hold ended by its own client (shutdown): the same signal, without the warning.
    pub(crate) fn mark_ended(&self) {
        self.set_lost();
    }

    fn set_lost(&self) -> bool {
        let mut s = self.state.lock().unwrap();
        if s.lost {
            return false;
        }
        s.lost = true;
        drop(s);
        self.changed.send_replace(());
        true
    }

    /// Records a successful renewal sent at `sent_at`.
    pub(crate) fn renewed(&self, sent_at: Instant, lease: Duration) {
        let mut s = self.state.lock().unwrap();
        s.valid_until = s.valid_until.max(sent_at + lease);
    }

    pub(crate) fn valid_until(&self) -> Instant {
        self.state.lock().unwrap().valid_until
    }

    /// Lost, or its lease ran out on the local clock.
    pub(crate) fn is_lost(&self) -> bool {
        let s = self.state.lock().unwrap();
        s.lost || Instant::now() >= s.valid_until
    }

    /// Resolves once the hold is lost: marked lost, or its lease ran out with no watchdog to
    /// renew it. (With the watchdog on, running out is reported by the watchdog itself, which
    /// first retries failed renewals until the lease is over.)
    pub(crate) async fn lost(&self) {
        let mut rx = self.changed.subscribe();
        loop {
            let (lost, deadline) = {
                let s = self.state.lock().unwrap();
                (s.lost, (s.watchdog == 0).then_some(s.valid_until))
            };
            if lost {
                return;
            }
            match deadline {
                Some(at) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at) => {
                            // The lease may have been extended meanwhile; re-check.
                            if Instant::now() >= self.valid_until() && !self.wants_renewal() {
                                self.mark_lost();
                                return;
                            }
                        }
                        r = rx.changed() => if r.is_err() { return },
                    }
                }
                None => {
                    if rx.changed().await.is_err() {
                        return;
                    }
                }
            }
        }
    }
}
