//! Metrics through the `metrics` facade (cargo feature `metrics`, on by default): every name and
//! label the shared code records, in one place (a kind that counts something of its own records
//! it in its room and lists it in `guide::operations` with these). Labels never carry lock
//! names (their number is unbounded). Without the feature every function here is empty.
//!
//! | Name | Kind | Labels | Meaning |
//! |---|---|---|---|
//! | `relock_acquisitions_total` | counter | `kind` | fresh holds granted |
//! | `relock_failed_attempts_total` | counter | `kind`, `cause` | acquire attempts that did not grant: `held`, `timeout`, `connection`, `redis`, `wrong_type`, `replication`, `no_quorum`, `other` |
//! | `relock_wait_seconds` | histogram | `kind` | from the call to the grant of a fresh hold |
//! | `relock_hold_seconds` | histogram | `kind` | from the grant to the release of the hold's last guard |
//! | `relock_renewals_total` | counter | `kind` | holds renewed by the watchdog |
//! | `relock_renewal_failures_total` | counter | `kind` | holds whose renewal failed (they are retried) |
//! | `relock_locks_lost_total` | counter | `kind` | holds lost while a guard had them |
//! | `relock_wakeups_total` | counter | — | wake-ups of this client's waiters by messages: one per lock release message, one per waiter a semaphore's message wakes (at most its count), one per latch opening |
//! | `relock_wakeups_wasted_total` | counter | — | waiters woken early (by a release message, a reconnect or the 100 ms re-check while the subscriber is down) that found the lock held again; for a semaphore, waiters woken by a message that found too few permits |
//! | `relock_subscriptions` | gauge | — | lock channels this client is subscribed to |
//!
//! `kind` is the hold kind's label (`HoldKind::label`): `plain`, `fair`, `read`, `write` or
//! `quorum`.
//!
//! The steps of a handoff are TRACE events of target `relock::handoff` (whatever the
//! feature), each with its `step`: `unlock` (the holder's call), `release.begin` (the release's
//! work starts), `release.sent` and `release.replied` (its script call, asked for and
//! answered), `call` (a coalesced call leaves the client, alone or in a batch: wherever the
//! coalescer sends it from), `message` (the waiters' dispatcher has the release message),
//! `deliver` (the dispatcher wakes a waiter), `woken` (a parked waiter runs again),
//! `attempt.sent` and `attempt.replied` (a waiter's acquire call) and `granted` (the waiter
//! has its guard). A subscriber that notes the task of each (`tokio::task::try_id`) sees the
//! task hops a handoff takes between relock's steps (both sides of the release's task, the
//! coalescer's send and the dispatcher's delivery are steps; a hop inside a call is not seen);
//! the bench lab prints them (`relock-bench compare`).

use std::time::Duration;

use crate::error::Error;

/// The `cause` label of a failed attempt's error (the error's own: `Error::cause_label`).
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) fn cause(e: &Error) -> &'static str {
    e.cause_label()
}

/// One step of a handoff: see the module. Free while no subscriber enables TRACE for
/// `relock::handoff` (one check of the callsite's cached interest).
pub(crate) fn step(step: &'static str) {
    tracing::trace!(target: "relock::handoff", step);
}

#[cfg(feature = "metrics")]
mod imp {
    use super::*;

    pub(crate) fn acquired(kind: &'static str, waited: Duration) {
        metrics::counter!("relock_acquisitions_total", "kind" => kind).increment(1);
        metrics::histogram!("relock_wait_seconds", "kind" => kind).record(waited.as_secs_f64());
    }
    pub(crate) fn failed_attempt(kind: &'static str, cause: &'static str) {
        metrics::counter!("relock_failed_attempts_total", "kind" => kind, "cause" => cause)
            .increment(1);
    }
    pub(crate) fn released(kind: &'static str, held: Duration) {
        metrics::histogram!("relock_hold_seconds", "kind" => kind).record(held.as_secs_f64());
    }
    pub(crate) fn renewed(kind: &'static str, n: u64) {
        metrics::counter!("relock_renewals_total", "kind" => kind).increment(n);
    }
    pub(crate) fn renewal_failed(kind: &'static str, n: u64) {
        metrics::counter!("relock_renewal_failures_total", "kind" => kind).increment(n);
    }
    pub(crate) fn lost(kind: &'static str) {
        metrics::counter!("relock_locks_lost_total", "kind" => kind).increment(1);
    }
    pub(crate) fn wakeup() {
        metrics::counter!("relock_wakeups_total").increment(1);
    }
    pub(crate) fn wasted_wakeup() {
        metrics::counter!("relock_wakeups_wasted_total").increment(1);
    }
    pub(crate) fn subscriptions(n: usize) {
        metrics::gauge!("relock_subscriptions").set(n as f64);
    }
}

#[cfg(not(feature = "metrics"))]
#[allow(clippy::missing_const_for_fn)]
mod imp {
    use super::*;

    pub(crate) fn acquired(_: &'static str, _: Duration) {}
    pub(crate) fn failed_attempt(_: &'static str, _: &'static str) {}
    pub(crate) fn released(_: &'static str, _: Duration) {}
    pub(crate) fn renewed(_: &'static str, _: u64) {}
    pub(crate) fn renewal_failed(_: &'static str, _: u64) {}
    pub(crate) fn lost(_: &'static str) {}
    pub(crate) fn wakeup() {}
    pub(crate) fn wasted_wakeup() {}
    pub(crate) fn subscriptions(_: usize) {}
}

pub(crate) use imp::*;
