//! The permits this client holds on permit-expirable semaphores (one [`Permit`] per live
//! `PermitGuard`), as `line` is for fair waiters: the watchdog's round renews from it, and
//! shutdown gives back every permit still in it. It knows the permits' keys, not the client.

use std::sync::Arc;

use dashmap::DashMap;
use tokio::time::Instant;

use crate::client::hold_watch::{FredResult, Watched};
use crate::client::inner::{Inner, KindState, Round};
use crate::client::redact;
use crate::client::retry;
use crate::client::scripts;
use crate::counting::channel::COUNT_CHANNEL;
use crate::hold::backend;
use crate::hold::backend::BoxFuture;
use crate::hold::keys;
use crate::hold::lease::Lease;
use crate::hold::wake;

scripts::scripts! {
    /// Permit-expirable semaphore: give back expired permits, then take one under an id.
    PERMITS_ACQUIRE = writes "permits_acquire.lua" ["permits", "reclaim"];
    /// Permit-expirable semaphore: give back one permit by its id, and publish the new count.
    PERMITS_RELEASE = writes "permits_release.lua" ["permits", "reclaim"];
    /// Permit-expirable semaphore: a client's batch renewal of its permits' leases.
    PERMITS_RENEW = writes "permits_renew.lua" ["permits"];
    /// Permit-expirable semaphore: give back expired permits, then count available and held.
    PERMITS_COUNT = writes "permits_count.lua" ["permits", "reclaim"];
}

/// The Redis names of one permit-expirable semaphore.
#[derive(Debug)]
pub(crate) struct PermitKeys {
    /// The count of available permits: the semaphore's name.
    pub(crate) count: String,
    /// Where a new count is published: `redisson_sc:{<name>}`.
    pub(crate) channel: String,
    /// Permit id → end of its lease: `{<name>}:timeout`.
    pub(crate) timeouts: String,
}

impl PermitKeys {
    /// The request key of permit `id`: a give-back after an acquire of `id` whose reply never
    /// came records itself there, and a copy of that acquire landing later finds it.
    pub(crate) fn request_of(&self, id: &str) -> String {
        format!("{}:{id}", keys::prefixed("relock_request", &self.count))
    }

    /// KEYS of `permits_release` (the channel goes with the arguments).
    pub(crate) fn all(&self) -> Vec<String> {
        vec![self.count.clone(), self.timeouts.clone()]
    }
}

/// One permit held through a guard of this client.
#[derive(Debug)]
pub(crate) struct Permit {
    pub(crate) keys: Arc<PermitKeys>,
    /// Its id: 32 hex digits (stored on the server as the 16 bytes they spell).
    pub(crate) id: String,
    /// Renewed in the client's watchdog round (taken without a fixed lease).
    pub(crate) renewed: bool,
    /// Its local end, loss and give-back, by the rules of every hold (`hold::lease`). Ended
    /// when its guard gives it back.
    pub(crate) lease: Lease,
}

impl Permit {
    pub(crate) fn new(keys: Arc<PermitKeys>, id: String, renewed: bool, until: Instant) -> Self {
        Permit {
            keys,
            id,
            renewed,
            lease: Lease::new(until),
        }
    }

    /// Resolves once the permit is lost: marked lost, or its local end passed.
    pub(crate) async fn lost(&self) {
        self.lease.lost().await;
    }
}

/// This client's live permits, by id: the permit semaphore's state per client
/// (`Inner::state::<Leases>()`).
#[derive(Debug, Default)]
pub(crate) struct Leases {
    by_id: DashMap<String, Arc<Permit>>,
}

impl Leases {
    pub(crate) fn insert(&self, lease: Arc<Permit>) {
        self.by_id.insert(lease.id.clone(), lease);
    }

    /// Takes `lease` out; false if it was not in (already given back).
    pub(crate) fn remove(&self, lease: &Arc<Permit>) -> bool {
        self.by_id
            .remove_if(&lease.id, |_, l| Arc::ptr_eq(l, lease))
            .is_some()
    }

    /// Whether `lease` is still held through a guard (not given back yet).
    pub(crate) fn contains(&self, lease: &Arc<Permit>) -> bool {
        self.by_id
            .get(&lease.id)
            .is_some_and(|l| Arc::ptr_eq(&l, lease))
    }

    /// Every permit held, for shutdown.
    pub(crate) fn all(&self) -> Vec<Arc<Permit>> {
        self.by_id.iter().map(|e| e.value().clone()).collect()
    }

    /// The permits the renewal should renew: watchdog-managed and not lost.
    pub(crate) fn to_renew(&self) -> Vec<Arc<Permit>> {
        self.by_id
            .iter()
            .filter(|e| e.renewed && !e.lease.is_lost())
            .map(|e| e.value().clone())
            .collect()
    }

    /// How many permits this client holds.
    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }
}

/// Runs `permits_release.lua` for permit `id` of `keys`: 1 released, 2 released after its
/// lease had ended, 0 not there. With `request` (its key and the ms it lives), every copy of
/// one release returns what the copy that gave the permit back returned; with `forget` too,
/// a 0 is recorded as well, so that an acquire of the id landing later takes nothing (the
/// key is then the id's own, [`PermitKeys::request_of`]). Unbounded: callers bound it.
pub(crate) async fn release(
    conn: &fred::clients::Client,
    keys: &PermitKeys,
    id: &str,
    publish: &str,
    request: Option<(&str, &str, bool)>,
) -> std::result::Result<i64, fred::error::Error> {
    let (mut all, mut args) = (
        keys.all(),
        vec![id.to_string(), publish.to_string(), keys.channel.clone()],
    );
    if let Some((key, ttl_ms, forget)) = request {
        all.push(key.to_string());
        args.push(ttl_ms.to_string());
        if forget {
            args.push("forget".to_string());
        }
    }
    PERMITS_RELEASE.run(conn, all, args).await
}

/// A permit is watched as a hold is (`hold_watch`): on the semaphore's channel (every release,
/// Redisson's `release(id)` by anyone included, publishes the new count there), checking that
/// its id is still among the semaphore's timeouts. Each release on the channel costs one
/// `ZSCORE` per watched local permit of that semaphore.
impl Watched for Permit {
    fn channel(&self) -> (&str, wake::Format) {
        (&self.keys.channel, COUNT_CHANNEL)
    }
    fn ended(&self) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.lease.ended()
    }
    fn check(&self, pool: &fred::clients::Pool) -> backend::BoxFuture<FredResult<bool>> {
        use fred::interfaces::SortedSetsInterface;
        // The id as the scripts store it: the 16 bytes its hex digits spell.
        let member: Vec<u8> = (0..self.id.len() / 2)
            .filter_map(|i| u8::from_str_radix(self.id.get(2 * i..2 * i + 2)?, 16).ok())
            .collect();
        let (client, timeouts) = (pool.next().clone(), self.keys.timeouts.clone());
        Box::pin(async move {
            let score: Option<f64> = client
                .zscore(timeouts, fred::types::Value::Bytes(member.into()))
                .await?;
            Ok(score.is_some())
        })
    }
    fn found_gone(&self) {
        if self.lease.is_live() && self.lease.mark_lost() {
            tracing::warn!(semaphore = %self.keys.count, id = %self.id, "permit lost: its watch found it gone (released by id elsewhere, or the semaphore deleted)");
        }
    }
}

impl KindState for Leases {
    /// Gives back every permit this client's guards hold, in parallel; each is marked lost
    /// first, so its guard reports it. A permit given back leaves the registry, so the second
    /// call sends only those granted since the first.
    fn at_shutdown(&self, inner: &Arc<Inner>, work: &mut tokio::task::JoinSet<()>, _: Round) {
        for lease in self.all() {
            lease.lease.mark_lost();
            let inner = inner.clone();
            work.spawn(async move {
                // Tried again until shutdown's wait ends while the errors are transient
                // (releasing an id twice is harmless): one try sent while a connection is
                // being replaced fails at once. An error reply is final.
                let last = Instant::now() + inner.settings().command_timeout;
                let release = || {
                    let publish = inner.publish_cmd();
                    release(inner.conn(), &lease.keys, &lease.id, publish, None)
                };
                let name = format!("{} (permit {})", lease.keys.count, lease.id);
                let what = "giving back a permit (it comes back when its lease ends)";
                let transient = crate::error::redis_transient;
                retry::try_until(&inner, last, what, &name, release, transient).await;
                inner.state::<Leases>().remove(&lease);
            });
        }
    }

    /// The renewed permits that are not lost, in `permits_renew.lua` calls of up to
    /// `renew_batch` (100) permits of one cluster slot, in the watchdog's round: every third
    /// of the watchdog lease, as the holds.
    fn renewals(&self, inner: &Arc<Inner>) -> Vec<BoxFuture<bool>> {
        let leases = self.to_renew();
        let batches = inner.batches(&leases, |l| l.keys.timeouts.as_str());
        batches
            .into_iter()
            .map(|batch| {
                let inner = inner.clone();
                Box::pin(async move { renew_batch(&inner, &batch).await }) as BoxFuture<bool>
            })
            .collect()
    }
}

/// One `permits_renew.lua` call for `batch`: renewed permits get a new local deadline, those
/// found gone are marked lost. False if the call failed (the loop retries sooner; a permit
/// whose local deadline passes meanwhile is lost).
async fn renew_batch(inner: &Inner, batch: &[Arc<Permit>]) -> bool {
    let lease = inner.settings().watchdog_lease;
    let keys = batch.iter().map(|l| l.keys.timeouts.clone()).collect();
    let ids = batch.iter().map(|l| l.id.clone());
    let args = std::iter::once(lease.as_millis().to_string())
        .chain(ids)
        .collect();
    let limit = inner.settings().command_timeout.min(lease / 3);
    let sent = Instant::now();
    let call = PERMITS_RENEW.run::<Vec<i64>>(inner.conn(), keys, args);
    let outcome = match tokio::time::timeout(limit, call).await {
        Ok(Ok(reply)) => scripts::one_each(reply, batch.len()),
        Ok(Err(e)) => Err(redact::in_text(&e.to_string(), &inner.settings().url)),
        Err(_) => Err(format!("no reply within {}", crate::error::Human(limit))),
    };
    let replies = match outcome {
        Ok(replies) => replies,
        Err(cause) => {
            tracing::warn!(%cause, permits = batch.len(), "permit renewal failed; retrying while the leases last");
            return false;
        }
    };
    for (permit, renewed) in batch.iter().zip(replies) {
        if renewed == 1 {
            permit.lease.renewed(sent, lease);
        } else if permit.lease.mark_lost() && inner.state::<Leases>().contains(permit) {
            tracing::warn!(semaphore = %permit.keys.count, id = %permit.id, "permit lost while held: its id is gone (released by id, deleted, or expired)");
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> Arc<PermitKeys> {
        Arc::new(PermitKeys {
            count: "p".into(),
            channel: "redisson_sc:{p}".into(),
            timeouts: "{p}:timeout".into(),
        })
    }

    #[test]
    fn the_registry_forgets_a_permit_once() {
        let leases = Leases::default();
        let a = Arc::new(Permit::new(keys(), "aa".into(), true, Instant::now()));
        let b = Arc::new(Permit::new(keys(), "bb".into(), false, Instant::now()));
        leases.insert(a.clone());
        leases.insert(b.clone());
        assert_eq!(leases.len(), 2);
        assert!(leases.remove(&a));
        assert!(!leases.remove(&a));
        assert_eq!(leases.all().len(), 1);
    }
}
