//! [`MultiLock`]: all or nothing over several locks, of any kinds and clients (Redisson's
//! `RedissonMultiLock`), taken in one global order so that two multi-locks never deadlock.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::hold::distributed_lock::DistributedLock;
use crate::hold::guard::LockGuard;

/// Several locks taken together: [`lock`](MultiLock::lock) returns once it holds every one of
/// them, and holds none if it fails or gives up.
///
/// The parts may be of any kind ([`Lock`](crate::Lock), a fair lock, a
/// [`WriteLock`](crate::WriteLock) or [`ReadLock`](crate::ReadLock), a
/// [`QuorumLock`](crate::QuorumLock)) and of different clients or servers.
///
/// - **No deadlock.** The parts are always taken in one order, by where their data lives and
///   their name ([`DistributedLock::resource`]), whatever order they were given in: two
///   multi-locks over overlapping parts, in any process, cannot each hold what the other
///   waits for. (The order compares where the data lives, without credentials, query or
///   the default `/0`; give a server the same host spelling everywhere.) A quorum lock and a
///   lock of the same name on one of its masters are two locks over overlapping data: don't
///   mix them, in a multi-lock or elsewhere (in one multi-lock they are refused; across
///   processes their order is not defined, and two such multi-locks can deadlock).
/// - **All or nothing.** If a part cannot be had in time, or fails, every part already taken
///   is released before the call returns.
/// - **One guard.** [`MultiGuard::lost`] resolves when any part is lost; dropping the guard
///   releases every part.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
/// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
/// # let (a, b) = (relock::Client::connect(&url).await?, relock::Client::connect(&url).await?);
/// use std::time::Duration;
/// let both = relock::MultiLock::new()
///     .with(a.lock("account:1"))
///     .with(b.lock("account:2"));
/// if let Some(guard) = both.try_lock_for(Duration::from_secs(2)).await? {
///     let tokens = guard.fencing_tokens(); // in the order the parts were given
/// #   assert_eq!(tokens.len(), 2);
/// #   assert!(a.lock("account:1").is_locked().await? && b.lock("account:2").is_locked().await?);
///     guard.unlock().await?;
/// }
/// # else { panic!("both were free") }
/// # assert!(!a.lock("account:1").is_locked().await? && !b.lock("account:2").is_locked().await?);
/// # a.shutdown().await; b.shutdown().await; Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct MultiLock {
    parts: Vec<Arc<dyn DistributedLock>>,
}

impl std::fmt::Debug for MultiLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.parts.iter().map(|p| p.resource()).collect();
        f.debug_struct("MultiLock").field("parts", &parts).finish()
    }
}

/// Proof of holding every part of a [`MultiLock`].
#[must_use = "if unused the locks will immediately unlock"]
#[derive(Debug)]
pub struct MultiGuard {
    /// The parts' guards, in the order the parts were given.
    guards: Vec<LockGuard>,
}

impl MultiLock {
    /// An empty multi-lock; add parts with [`with`](MultiLock::with).
    pub fn new() -> Self {
        MultiLock::default()
    }

    /// The same multi-lock with one more part.
    pub fn with<L: DistributedLock + 'static>(mut self, lock: L) -> Self {
        self.parts.push(Arc::new(lock));
        self
    }

    /// How many parts it has.
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// Whether it has no parts.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// Takes every part, waiting as long as it takes.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for no parts, or the same lock twice; any part's error (every
    /// part already taken is released first).
    ///
    /// # Cancel safety
    /// Cancel safe: parts already taken are released (in the background) when the future is
    /// dropped, and the part being waited for is cancel safe itself.
    pub async fn lock(&self) -> Result<MultiGuard> {
        loop {
            if let Some(g) = self.acquire(None).await? {
                return Ok(g);
            }
        }
    }

    /// Takes every part if each is free now; `Ok(None)` (holding nothing) otherwise.
    ///
    /// # Errors
    /// As [`lock`](MultiLock::lock).
    ///
    /// # Cancel safety
    /// As [`lock`](MultiLock::lock).
    pub async fn try_lock(&self) -> Result<Option<MultiGuard>> {
        self.acquire(Some(Duration::ZERO)).await
    }

    /// Takes every part within about `wait` in all; `Ok(None)` (holding nothing) if it could
    /// not.
    ///
    /// # Errors
    /// As [`lock`](MultiLock::lock).
    ///
    /// # Cancel safety
    /// As [`lock`](MultiLock::lock).
    pub async fn try_lock_for(&self, wait: Duration) -> Result<Option<MultiGuard>> {
        self.acquire(Some(wait)).await
    }

    /// The parts' indexes in taking order: by resource, ties (none, once checked) by index.
    fn order(&self) -> Result<Vec<usize>> {
        if self.parts.is_empty() {
            return Err(Error::invalid(
                "parts",
                "a multi-lock without parts holds nothing; add locks with `with`",
            ));
        }
        // Each part's data: one place, or one per master of a quorum lock.
        let resources: Vec<Vec<String>> = self.parts.iter().map(|p| p.resources()).collect();
        let mut seen: std::collections::HashMap<&str, usize> = Default::default();
        for (i, rs) in resources.iter().enumerate() {
            for r in rs {
                if let Some(j) = seen.insert(r.as_str(), i) {
                    return Err(Error::invalid(
                        "parts",
                        format!(
                            "{r} is in the multi-lock twice (parts {j} and {i}); a second hold would wait for the first for ever: add each lock once"
                        ),
                    ));
                }
            }
        }
        // By each part's first place: the same order in every process.
        let key = |i: usize| resources[i].iter().min().cloned().unwrap_or_default();
        let mut order: Vec<usize> = (0..self.parts.len()).collect();
        order.sort_by_key(|i| key(*i));
        Ok(order)
    }

    async fn acquire(&self, wait: Option<Duration>) -> Result<Option<MultiGuard>> {
        let order = self.order()?;
        let deadline = wait.and_then(|w| Instant::now().checked_add(w));
        // Dropped (and so released, in the background) on every early return.
        let mut taken: Vec<Option<LockGuard>> = (0..self.parts.len()).map(|_| None).collect();
        for i in order {
            let part = &self.parts[i];
            let guard = match (wait, deadline) {
                (None, _) | (Some(_), None) => part.lock().await.map(Some),
                (Some(w), _) if w.is_zero() => part.try_lock().await,
                (Some(_), Some(d)) => {
                    part.try_lock_for(d.saturating_duration_since(Instant::now()))
                        .await
                }
            };
            match guard {
                Ok(Some(g)) => taken[i] = Some(g),
                // Every part taken is released before the call returns, also on an error.
                Ok(None) => {
                    release_all(taken).await;
                    return Ok(None);
                }
                Err(e) => {
                    release_all(taken).await;
                    return Err(e);
                }
            }
        }
        Ok(Some(MultiGuard {
            guards: taken.into_iter().flatten().collect(),
        }))
    }
}

/// Releases every guard at once and waits for the releases (their errors are the guards'
/// business: a part that was lost is gone anyway).
async fn release_all(guards: Vec<Option<LockGuard>>) {
    let _ = unlock_all(guards.into_iter().flatten()).await;
}

/// Unlocks every guard at once; the first error, if any.
async fn unlock_all(guards: impl Iterator<Item = LockGuard>) -> Result<()> {
    let mut releases = tokio::task::JoinSet::new();
    for g in guards {
        releases.spawn(g.unlock());
    }
    let mut first = Ok(());
    while let Some(r) = releases.join_next().await {
        let r = r.unwrap_or(Err(Error::Shutdown));
        if let (Err(e), Ok(())) = (r, &first) {
            first = Err(e);
        }
    }
    first
}

impl MultiGuard {
    /// The parts' guards, in the order the parts were given.
    pub fn guards(&self) -> &[LockGuard] {
        &self.guards
    }

    /// Each part's fencing token, in the order the parts were given: pass each with the writes
    /// to the resource its lock protects.
    pub fn fencing_tokens(&self) -> Vec<u64> {
        self.guards.iter().map(LockGuard::fencing_token).collect()
    }

    /// Whether any part is known lost, or its lease has run out on the local clock.
    pub fn is_lost(&self) -> bool {
        self.guards.iter().any(LockGuard::is_lost)
    }

    /// When the first part's lease ends at the latest, unless renewed meanwhile.
    pub fn valid_until(&self) -> std::time::Instant {
        self.guards
            .iter()
            .map(LockGuard::valid_until)
            .min()
            .expect("a multi-guard has parts")
    }

    /// Resolves once any part is lost (no later than [`valid_until`](MultiGuard::valid_until),
    /// plus scheduling noise).
    ///
    /// # Cancel safety
    /// Cancel safe: it only observes.
    pub async fn lost(&self) {
        let mut each: Vec<Pin<Box<dyn Future<Output = ()> + Send + '_>>> = self
            .guards
            .iter()
            .map(|g| Box::pin(g.lost()) as _)
            .collect();
        std::future::poll_fn(|cx| {
            for f in &mut each {
                if f.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(());
                }
            }
            Poll::Pending
        })
        .await
    }

    /// Lengthens every part's lease to at least `lease` from now, all at once
    /// ([`LockGuard::extend`]).
    ///
    /// # Errors
    /// As [`LockGuard::extend`], for the first part that failed; the others are extended
    /// whatever its outcome.
    ///
    /// # Cancel safety
    /// As [`LockGuard::extend`].
    pub async fn extend(&self, lease: Duration) -> Result<()> {
        let all = futures_util::future::join_all(self.guards.iter().map(|g| g.extend(lease)));
        all.await
            .into_iter()
            .collect::<Result<Vec<()>>>()
            .map(|_| ())
    }

    /// Releases every part at once and reports the first error (every part is released
    /// whatever the others' outcome).
    ///
    /// # Errors
    /// As [`LockGuard::unlock`], for the first part that failed ([`Error::LockLost`] if it had
    /// been lost).
    ///
    /// # Cancel safety
    /// Each part's release runs in its own task: dropping this future does not stop them.
    pub async fn unlock(self) -> Result<()> {
        unlock_all(self.guards.into_iter()).await
    }
}
