//! A watchdog hold that a release handed over starts with a first lease of its own (the
//! heartbeat deadline), which is brought to the watchdog lease off the caller's path.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::client::inner::Inner;
use crate::client::scripts;
use crate::hold::holds::Hold;

scripts::scripts! {
    /// A handed-over hold brought to its own watchdog lease.
    SETTLE = writes "settle.lua" [];
}

/// A watchdog hold that a handoff granted has the first lease (the heartbeat deadline), not
/// the watchdog's. Where that first lease is longer than the watchdog lease, it is set to the
/// watchdog lease at the hold's first renewal, a renewal period (lease/3) after the grant
/// (`settle.lua`): a holder that crashes after that is replaced within its own lease, as after
/// a fresh grant. Where it is shorter, it is renewed well before it runs out, then left to the
/// watchdog's rounds (every lease/3). Off the caller's path: a hold released before then (a
/// short critical section) costs no call.
pub(crate) fn renew_first_lease(inner: &Arc<Inner>, hold: Arc<Hold>) {
    use crate::hold::backend::Backend;
    use crate::hold::every::every;
    let stop = inner.on_shutdown();
    let lease = inner.settings().watchdog_lease;
    let first_until = hold.valid_until();
    let owner = Arc::downgrade(inner);
    if first_until.saturating_duration_since(Instant::now()) > lease {
        // One round, a renewal period after the grant.
        tokio::spawn(every(owner, stop, lease / 3, move |inner| {
            let hold = hold.clone();
            async move {
                settle(&inner, &hold, first_until, lease).await;
                None
            }
        }));
        return;
    }
    let Some(first) = next_renewal(&hold, lease) else {
        return;
    };
    tokio::spawn(every(owner, stop, first, move |inner| {
        let hold = hold.clone();
        async move {
            if !hold.wants_renewal() || hold.is_lost() {
                return None;
            }
            inner.renew_batch(vec![hold.clone()]).await;
            next_renewal(&hold, lease)
        }
    }));
}

/// When a handed-over hold whose first lease is shorter than the watchdog's is next renewed:
/// at a third of what it has left (at least 10 ms), until the watchdog's rounds (every
/// lease/3) come first (`None`: once it has more than half the watchdog lease left).
fn next_renewal(hold: &Hold, lease: Duration) -> Option<Duration> {
    let left = hold.valid_until().saturating_duration_since(Instant::now());
    (left <= lease / 2).then(|| (left / 3).max(Duration::from_millis(10)))
}

/// Sets a handed-over hold whose first lease is longer than the watchdog's to the watchdog
/// lease (`settle.lua`), unless a guard with a fixed lease, an extension or a loss came first.
async fn settle(inner: &Inner, hold: &Hold, first_until: Instant, lease: Duration) {
    // A guard with a fixed lease of its own keeps what it was given.
    if !hold.wants_renewal() || hold.is_lost() || !hold.only_watchdog_guards() {
        return;
    }
    // Alone among this hold's lease-setting calls (a re-entry with a fixed lease, an
    // extension): one that ran before the settle on the server but were answered after it
    // would leave the local lease past the server's shortened one.
    let _gate = hold.gate.lock().await;
    // Moved since the grant: an extension (or re-entry) asked for this lease; a renewal
    // cannot move it while it is longer than the watchdog lease.
    if !hold.only_watchdog_guards() || hold.is_lost() || hold.valid_until() != first_until {
        return;
    }
    let sent = Instant::now();
    let settled = SETTLE
        .run::<i64>(
            inner.conn(),
            hold.keys.kind.lease_keys(&hold.keys, &hold.field),
            vec![lease.as_millis().to_string(), hold.field.clone()],
        )
        .await;
    // Set, or unknown (the server may have set it): counted on locally, never later than the
    // server, and renewed by the watchdog from there. Gone (`0`): its release or the
    // watchdog's round says so.
    if !matches!(settled, Ok(0)) {
        hold.settled(sent, lease);
    }
}
