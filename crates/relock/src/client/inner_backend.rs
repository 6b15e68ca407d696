//! The one-server backend (a standalone server, a Cluster, or Sentinel's master): how a hold
//! is released (with retries for a release whose outcome is unknown) and renewed, for the
//! guard and the shared watchdog.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument;

use crate::client::guarded;
use crate::client::inner::Inner;
use crate::client::retry;
use crate::client::scripts;
use crate::error::{Error, Result};
use crate::hold::backend;
use crate::hold::backend::{Backend, BoxFuture};
use crate::hold::commands;
use crate::hold::holds::Hold;
use crate::hold::kind::LockKeys;
use crate::hold::lease;
use crate::hold::meter;

impl Backend for Inner {
    fn shared(&self) -> &backend::Shared {
        &self.shared
    }

    fn renew_period(&self) -> Duration {
        self.settings.watchdog_lease / 3
    }

    /// Holds renew in one call only with holds of their kind's renewal group (a read hold's
    /// renewal also lengthens its own timeout key), and of one slot.
    fn renewal_batches(&self, holds: Vec<Arc<Hold>>) -> Vec<Vec<Arc<Hold>>> {
        let mut groups: std::collections::BTreeMap<&'static str, Vec<Arc<Hold>>> =
            Default::default();
        for h in holds {
            groups
                .entry(h.keys.kind.renewal_group())
                .or_default()
                .push(h);
        }
        groups
            .values()
            .flat_map(|group| self.batches(group, |h| h.keys.lock.as_str()))
            .collect()
    }

    fn renew_batch(self: Arc<Self>, batch: Vec<Arc<Hold>>) -> BoxFuture<bool> {
        let span = tracing::debug_span!(
            "renew",
            locks = batch.len(),
            renewed = tracing::field::Empty,
            lost = tracing::field::Empty
        );
        Box::pin(async move { renew_batch(&self, &batch).await }.instrument(span))
    }

    /// The kinds' own renewals (`KindState::renewals`): a permit semaphore's permits are
    /// renewed in the same round as the holds.
    fn other_renewals(self: Arc<Self>) -> Vec<BoxFuture<bool>> {
        self.kinds.renewals(&self)
    }

    fn release(
        self: Arc<Self>,
        hold: Arc<Hold>,
        remaining: u32,
        lost: bool,
    ) -> BoxFuture<Result<()>> {
        Box::pin(release(self, hold, remaining, lost))
    }

    fn extend(self: Arc<Self>, hold: Arc<Hold>, lease: Duration) -> BoxFuture<Result<()>> {
        Box::pin(extend(self, hold, lease))
    }

    fn guarded(
        self: Arc<Self>,
        hold: Arc<Hold>,
        commands: Arc<commands::Commands>,
        read: bool,
    ) -> BoxFuture<Result<Vec<fred::types::Value>>> {
        Box::pin(guarded::run(self, hold, commands, read))
    }
}

/// Lengthens one hold's lease with its kind's renewal call (which never shortens a TTL and
/// never re-creates a hold), then the local lease from the send time.
async fn extend(inner: Arc<Inner>, hold: Arc<Hold>, lease: Duration) -> Result<()> {
    let lost = || Error::LockLost {
        name: hold.keys.lock.clone(),
    };
    if hold.is_lost() {
        return Err(lost());
    }
    // One lease-setting call of this hold at a time (a handoff's settle, a re-entry): one
    // that ran on the server before another but is answered after it must not leave the
    // local lease later than the server's.
    let _gate = hold.gate.lock().await;
    let call = hold.keys.kind.renew(
        &[(&hold.keys, &hold.field)],
        lease.as_millis() as u64,
        &inner.call_context(),
    );
    let sent = Instant::now();
    let reply = call
        .script
        .run::<Vec<i64>>(inner.pool.next(), call.keys, call.args)
        .await
        .map_err(|e| inner.error("extend", &hold.keys.lock, e))?;
    match reply.as_slice() {
        [1] if hold.renewed(sent, lease) == lease::Renewal::Extended => Ok(()),
        [1] => Err(lost()),
        _ => {
            hold.mark_lost(
                "an extension found the hold gone (expired, deleted, force-unlocked, or Redis restarted empty)",
            );
            Err(lost())
        }
    }
}

/// Releases one guard's worth of `hold` on one server, `remaining` guards being left.
pub(crate) async fn release(
    inner: Arc<Inner>,
    hold: Arc<Hold>,
    remaining: u32,
    lost: bool,
) -> Result<()> {
    let span = tracing::debug_span!(
        "release",
        lock = %hold.keys.lock,
        field = %hold.field,
        remaining,
        outcome = tracing::field::Empty
    );
    let r = release_hold(inner, hold, remaining, lost)
        .instrument(span.clone())
        .await;
    span.record(
        "outcome",
        match &r {
            Ok(()) => "released",
            Err(Error::LockLost { .. }) => "lost",
            Err(e) => meter::cause(e),
        },
    );
    r
}

async fn release_hold(
    inner: Arc<Inner>,
    hold: Arc<Hold>,
    remaining: u32,
    lost: bool,
) -> Result<()> {
    meter::step("release.begin");
    let lost_error = || Error::LockLost {
        name: hold.keys.lock.clone(),
    };
    if remaining > 0 {
        // A nested guard: one count off. Only this hold's field is touched.
        if lost {
            return Err(lost_error());
        }
        return match inner.run_release(&hold.keys, &hold.field, false).await {
            Ok(Some(_)) => Ok(()),
            // The hold's final release got there first: nothing left to do.
            Ok(None) if hold.is_releasing() => Ok(()),
            Ok(None) => {
                hold.mark_lost(
                    "a release found the hold gone (expired, deleted or force-unlocked)",
                );
                Err(lost_error())
            }
            Err(e) => Err(inner.error("release", &hold.keys.lock, e)),
        };
    }
    // The last guard: remove the hold's field whatever its count. Safe even if the hold was
    // lost meanwhile: the field is this hold's alone, so a lock that now belongs to someone
    // else (another field) is left alone.
    let result = match inner.run_release(&hold.keys, &hold.field, true).await {
        Ok(Some(_)) if !lost => Ok(()),
        Ok(Some(_)) => Err(lost_error()),
        Ok(None) => {
            hold.mark_lost(
                "the final release found the hold gone (expired, deleted or force-unlocked)",
            );
            Err(lost_error())
        }
        Err(e) => {
            let err = inner.error("release", &hold.keys.lock, e);
            if err.is_transient() {
                inner.shared.tracker.spawn(retry_release(
                    inner.clone(),
                    hold.keys.clone(),
                    hold.field.clone(),
                    hold.valid_until(),
                ));
            }
            Err(err)
        }
    };
    inner.shared.holds.remove(&hold);
    meter::released(hold.keys.kind.label(), hold.granted_at.elapsed());
    result
}

/// Retries a final release of `field` that failed (timed out, connection lost), or the clean-up
/// of an acquire whose reply was lost, until it gets a reply or `until` (when the lease of
/// whatever it removes has ended on the local clock), with shutdown's last chance
/// ([`until_done`](crate::client::retry::until_done)). Safe to repeat, and safe to land late:
/// it names only its own field, which no later hold reuses.
pub(crate) async fn retry_release(
    inner: Arc<Inner>,
    keys: Arc<LockKeys>,
    field: String,
    until: Instant,
) {
    retry::until_done(&inner, until, "release", &keys.lock, || {
        inner.run_release(&keys, &field, true)
    })
    .await;
}

async fn renew_batch(inner: &Inner, batch: &[Arc<Hold>]) -> bool {
    let lease = inner.settings.watchdog_lease;
    // A batch is of one renewal group (`renewal_batches`): its first hold's kind renews it.
    let Some(first) = batch.first() else {
        return true;
    };
    let holds: Vec<(&LockKeys, &str)> = batch.iter().map(|h| (&*h.keys, &*h.field)).collect();
    let call = first
        .keys
        .kind
        .renew(&holds, lease.as_millis() as u64, &inner.call_context());
    // Never let one hung call outlast the period: the next round retries.
    let limit = inner.settings.command_timeout.min(lease / 3);
    let sent = Instant::now();
    let call = call
        .script
        .run::<Vec<i64>>(inner.pool.next(), call.keys, call.args);
    let outcome = match tokio::time::timeout(limit, call).await {
        Ok(Ok(reply)) => scripts::one_each(reply, batch.len()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no reply within {}", crate::error::Human(limit))),
    };
    match outcome {
        Ok(results) => {
            let renewed = results.iter().filter(|r| **r == 1).count();
            tracing::Span::current().record("renewed", renewed);
            tracing::Span::current().record("lost", results.len() - renewed);
            for (h, r) in batch.iter().zip(results) {
                if r == 1 {
                    meter::renewed(h.keys.kind.label(), 1);
                    h.renewed(sent, lease);
                } else {
                    h.mark_lost("the watchdog found the hold gone (expired, deleted, force-unlocked, or Redis restarted empty)");
                }
            }
            true
        }
        Err(cause) => {
            tracing::warn!(%cause, locks = batch.len(), "renewal failed; retrying while the lease lasts");
            for h in batch {
                meter::renewal_failed(h.keys.kind.label(), 1);
            }
            let now = Instant::now();
            for h in batch {
                if now >= h.valid_until() {
                    h.mark_lost("its lease ran out while renewals failed");
                }
            }
            false
        }
    }
}
