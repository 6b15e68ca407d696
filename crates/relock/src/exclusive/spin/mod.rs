//! **The spin lock**: the plain lock's holds on the plain lock's keys, waited for by polling
//! with back-off instead of pub/sub (Redisson's `RSpinLock`). A [`Lock`] made by
//! [`Client::spin_lock`] carries this folder's [`SPIN_LOCK`] as its variant (its keys, its
//! wait); everything else is the plain lock's handle and guard.
//!
//! - `kind`: the spin holds' [`HoldKind`](crate::hold::kind::HoldKind) (`SPIN`): released by
//!   `spin_release.lua`, which publishes nothing.
//! - `wait`: the polling wait and its attempt (`SpinCall`: the plain lock's acquire, whose
//!   holds no watch listens for).
//! - `backoff`: [`SpinBackoff`](crate::SpinBackoff), the client setting
//!   ([`ClientBuilder::spin_backoff`](crate::ClientBuilder::spin_backoff)).
//!
//! # Cancel safety
//! Every async method of a spin lock's [`Lock`] and [`LockGuard`] is as cancel safe as the
//! plain lock's, as their docs say: `lock`, `try_lock` and `try_lock_for` are cancel safe (an
//! attempt granted after the caller gave up is released; a spin waiter holds no subscription,
//! so nothing else is left behind); the queries (`is_locked`, `hold_count`, `status`, …) read
//! only; `unlock`, `extend` and `force_unlock` may or may not have run when dropped after
//! sending.

pub(crate) mod backoff;
pub(crate) mod kind;
pub(crate) mod wait;

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use crate::client::handle::Client;
use crate::client::inner::Inner;
use crate::error::Result;
use crate::exclusive::attempt::Fresh;
use crate::exclusive::lock::{LineKeys, Lock, Variant};
use crate::exclusive::queries;
use crate::exclusive::spin::kind::SPIN;
use crate::hold::guard::LockGuard;
use crate::hold::kind::{CallContext, LockKeys, ScriptCall};

/// The spin lock, as a [`Lock`] carries it.
#[derive(Debug)]
pub(crate) struct SpinLock;

/// The spin lock's [`Variant`].
pub(crate) static SPIN_LOCK: SpinLock = SpinLock;

impl Variant for SpinLock {
    fn is_fair(&self) -> bool {
        false
    }

    /// The plain lock's keys (Redisson's `RLock` and `RSpinLock` hash and fencing counter);
    /// its holds are [`SPIN`]'s.
    fn keys(&self, name: &str) -> Result<LockKeys> {
        LockKeys::new(name, &SPIN)
    }

    fn wait<'a>(
        &'a self,
        inner: &'a Arc<Inner>,
        keys: Arc<LockKeys>,
        fresh: Fresh,
        wait: Option<Duration>,
    ) -> BoxFuture<'a, Result<Option<LockGuard>>> {
        Box::pin(wait::spin(inner, keys, fresh, wait))
    }

    fn line(&self, _: &LockKeys) -> Option<LineKeys> {
        None
    }

    /// The plain lock's: a force-unlock of the name announces itself on the lock channel, to
    /// plain waiters and holders of the name (a spin waiter finds it free at its next attempt).
    fn force_unlock(&self, keys: &LockKeys, ctx: &CallContext) -> ScriptCall {
        queries::delete_and_publish(keys, ctx, false)
    }

    fn local_waiters(&self, _: &Inner, _: &str) -> Vec<String> {
        Vec::new()
    }
}

impl Client {
    /// A handle to the spin lock called `name` (Redisson's `RSpinLock`): the plain lock on the
    /// plain lock's keys, whose waiters poll with back-off instead of listening for releases.
    ///
    /// For deployments where pub/sub is the problem (a release message to every subscriber
    /// node of a large cluster on every unlock) or is missing (proxies and managed services
    /// without it). The same methods and guard as [`lock`](Client::lock): re-entry, the
    /// watchdog, fencing tokens, `lost()`, `extend`, `with`, `try_lock_for`, release on drop.
    /// What differs:
    /// - **Waiting.** A waiter attempts, then sleeps the client's
    ///   [`spin_backoff`](crate::ClientBuilder::spin_backoff) (default: from 1 ms, doubling,
    ///   at most 128 ms, plus up to 4 ms of jitter), and attempts again; it learns of a
    ///   release at its next attempt. A `try_lock_for` never sleeps past its bound: the last
    ///   sleep is cut to it and one last attempt made there.
    /// - **No pub/sub at all.** It never subscribes, and its release publishes nothing (as
    ///   Redisson's `RSpinLock`). A plain waiter of the same name (relock's `lock`, Redisson's
    ///   `RLock`) is therefore not woken by a spin release: it takes the lock when the lease it
    ///   last read runs out (up to the whole lease, 30 s by default).
    /// - **Loss.** A holder has no watch on the lock's channel: a force-unlock of its hold
    ///   fires [`LockGuard::lost`] at the watchdog's next renewal (within a third of the
    ///   lease), not within a round trip.
    ///
    /// The keys are the plain lock's (the same hash and owner fields as Redisson's `RLock` and
    /// `RSpinLock`), so a plain lock, a spin lock and Redisson's of one name all exclude one
    /// another; `relock status` shows a spin lock as a plain lock.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// use std::time::Duration;
    /// let client = relock::Client::builder()
    ///     .url(&url)
    ///     .spin_backoff(relock::SpinBackoff::constant(Duration::from_millis(20)))
    ///     .build()
    ///     .await?;
    /// let lock = client.spin_lock("reports:daily");
    /// let guard = lock.lock().await?;                 // polls while held; never subscribes
    /// let token = guard.fencing_token();
    /// guard.scope(async {
    ///     let again = lock.lock().await?;             // re-enters: same hold, same token
    ///     assert_eq!(again.fencing_token(), token);
    ///     again.unlock().await
    /// }).await?;
    /// guard.unlock().await?;                          // publishes nothing
    /// if let Some(guard) = lock.try_lock_for(Duration::from_secs(1)).await? {
    ///     guard.unlock().await?;
    /// }
    /// # assert!(!lock.is_locked().await?);
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub fn spin_lock(&self, name: impl Into<String>) -> Lock {
        Lock::new(
            self.inner.clone(),
            self.inner.named(name.into()),
            Some(&SPIN_LOCK),
        )
    }
}
