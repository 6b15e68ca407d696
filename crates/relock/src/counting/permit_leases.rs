//! The permits this client holds on permit-expirable semaphores (one [`Lease`] per live
//! `PermitGuard`), as `line` is for fair waiters: the watchdog's round renews from it, and
//! shutdown gives back every permit still in it. It knows the permits' keys, not the client.

use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::client::hold_watch::{FredResult, Watched};
use crate::hold::kind::Wake;

crate::client::scripts::scripts! {
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
        format!(
            "{}:{id}",
            crate::hold::keys::prefixed("relock_request", &self.count)
        )
    }

    /// KEYS of `permits_release` (the channel goes with the arguments).
    pub(crate) fn all(&self) -> Vec<String> {
        vec![self.count.clone(), self.timeouts.clone()]
    }
}

/// Where a permit stands, as this client knows it.
#[derive(Debug, Clone, Copy)]
struct Standing {
    /// Conservative end of its lease on the local monotonic clock: the send time of the last
    /// acquire or renewal that succeeded, plus the lease it set.
    until: Instant,
    /// Found gone, or its lease ran out locally: it never comes back.
    lost: bool,
    /// Given back by its guard (or being given back): nothing it finds gone is a loss.
    released: bool,
}

/// One permit held through a guard of this client.
#[derive(Debug)]
pub(crate) struct Lease {
    pub(crate) keys: Arc<PermitKeys>,
    /// Its id: 32 hex digits (stored on the server as the 16 bytes they spell).
    pub(crate) id: String,
    /// Renewed in the client's watchdog round (taken without a fixed lease).
    pub(crate) renewed: bool,
    standing: watch::Sender<Standing>,
}

impl Lease {
    pub(crate) fn new(keys: Arc<PermitKeys>, id: String, renewed: bool, until: Instant) -> Self {
        Lease {
            keys,
            id,
            renewed,
            standing: watch::Sender::new(Standing {
                until,
                lost: false,
                released: false,
            }),
        }
    }

    pub(crate) fn valid_until(&self) -> Instant {
        self.standing.borrow().until
    }

    /// Found gone, or past its local deadline.
    pub(crate) fn is_lost(&self) -> bool {
        let s = *self.standing.borrow();
        s.lost || Instant::now() >= s.until
    }

    /// Its guard gives it back (called before the give-back is sent): a watch that then
    /// finds it gone is not told of a loss.
    pub(crate) fn mark_released(&self) {
        self.standing
            .send_if_modified(|s| !std::mem::replace(&mut s.released, true));
    }

    /// Neither lost, nor given back, nor past its local deadline.
    pub(crate) fn is_live(&self) -> bool {
        let s = *self.standing.borrow();
        !s.lost && !s.released && Instant::now() < s.until
    }

    /// Resolves once the permit is no longer live (see [`is_live`](Self::is_live)).
    pub(crate) async fn ended(&self) {
        let mut rx = self.standing.subscribe();
        loop {
            let s = *rx.borrow_and_update();
            if s.lost || s.released || Instant::now() >= s.until {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(s.until) => {}
                changed = rx.changed() => if changed.is_err() { return },
            }
        }
    }

    /// Marks it lost (idempotent); returns whether this call did.
    pub(crate) fn mark_lost(&self) -> bool {
        self.standing
            .send_if_modified(|s| !std::mem::replace(&mut s.lost, true))
    }

    /// A renewal sent at `sent` set a lease of `lease`. One sent or answered after the local
    /// deadline does not revive the permit: `is_lost` may have said it was lost already.
    pub(crate) fn renewed_at(&self, sent: Instant, lease: Duration) {
        let now = Instant::now();
        self.standing.send_if_modified(|s| {
            if s.lost {
                return false;
            }
            if sent >= s.until || now >= s.until {
                s.lost = true;
                return true;
            }
            let until = sent + lease;
            let later = until > s.until;
            s.until = s.until.max(until);
            later
        });
    }

    /// Resolves once the permit is lost: marked lost, or its local deadline passed (a renewal
    /// that succeeds moves the deadline first).
    pub(crate) async fn lost(&self) {
        let mut rx = self.standing.subscribe();
        loop {
            let s = *rx.borrow_and_update();
            if s.lost {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(s.until) => {
                    if Instant::now() >= self.valid_until() {
                        self.mark_lost();
                        return;
                    }
                }
                changed = rx.changed() => if changed.is_err() { return },
            }
        }
    }
}

/// This client's live permits, by id: the permit semaphore's state per client
/// (`Inner::state::<Leases>()`).
#[derive(Debug, Default)]
pub(crate) struct Leases {
    by_id: DashMap<String, Arc<Lease>>,
}

impl Leases {
    pub(crate) fn insert(&self, lease: Arc<Lease>) {
        self.by_id.insert(lease.id.clone(), lease);
    }

    /// Takes `lease` out; false if it was not in (already given back).
    pub(crate) fn remove(&self, lease: &Arc<Lease>) -> bool {
        self.by_id
            .remove_if(&lease.id, |_, l| Arc::ptr_eq(l, lease))
            .is_some()
    }

    /// Whether `lease` is still held through a guard (not given back yet).
    pub(crate) fn contains(&self, lease: &Arc<Lease>) -> bool {
        self.by_id
            .get(&lease.id)
            .is_some_and(|l| Arc::ptr_eq(&l, lease))
    }

    /// Every permit held, for shutdown.
    pub(crate) fn all(&self) -> Vec<Arc<Lease>> {
        self.by_id.iter().map(|e| e.value().clone()).collect()
    }

    /// The permits the renewal should renew: watchdog-managed and not lost.
    pub(crate) fn to_renew(&self) -> Vec<Arc<Lease>> {
        self.by_id
            .iter()
            .filter(|e| e.renewed && !e.is_lost())
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
impl Watched for Lease {
    fn channel(&self) -> (&str, Wake) {
        (&self.keys.channel, Wake::Count)
    }
    fn ended(&self) -> impl std::future::Future<Output = ()> + Send + '_ {
        Lease::ended(self)
    }
    fn check(
        &self,
        pool: &fred::clients::Pool,
    ) -> crate::hold::backend::BoxFuture<FredResult<bool>> {
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
        if self.is_live() && self.mark_lost() {
            tracing::warn!(semaphore = %self.keys.count, id = %self.id, "permit lost: its watch found it gone (released by id elsewhere, or the semaphore deleted)");
        }
    }
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

    #[tokio::test]
    async fn a_lease_is_lost_at_its_local_deadline_and_a_late_renewal_does_not_revive_it() {
        let ms = Duration::from_millis;
        let start = Instant::now();
        let lease = Lease::new(keys(), "ab".into(), true, start + ms(30));
        lease.renewed_at(start + ms(10), ms(50));
        assert_eq!(lease.valid_until(), start + ms(60));
        lease.renewed_at(start, ms(20));
        assert_eq!(
            lease.valid_until(),
            start + ms(60),
            "a renewal never shortens"
        );
        tokio::time::timeout(ms(2_000), lease.lost()).await.unwrap();
        assert!(Instant::now() >= start + ms(60));
        assert!(lease.is_lost());
        lease.renewed_at(Instant::now(), ms(1_000));
        assert!(lease.is_lost());
        assert_eq!(lease.valid_until(), start + ms(60));
    }

    #[test]
    fn the_registry_forgets_a_lease_once() {
        let leases = Leases::default();
        let a = Arc::new(Lease::new(keys(), "aa".into(), true, Instant::now()));
        let b = Arc::new(Lease::new(keys(), "bb".into(), false, Instant::now()));
        leases.insert(a.clone());
        leases.insert(b.clone());
        assert_eq!(leases.len(), 2);
        assert!(leases.remove(&a));
        assert!(!leases.remove(&a));
        assert_eq!(leases.all().len(), 1);
    }
}
