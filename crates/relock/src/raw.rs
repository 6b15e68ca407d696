//! [`DistributedLock`]: what every lock kind offers, for code generic over the kind.

use std::time::Duration;

use async_trait::async_trait;

use crate::error::Result;
use crate::guard::LockGuard;

/// The operations shared by every relock lock kind (the plain, fair and quorum locks), so that
/// code can be generic over the kind.
///
/// Like `tokio::sync::Mutex`, `lock()` waits for any other holder, including another future of
/// the calling task; it re-enters a hold only inside that hold's
/// [`LockGuard::scope`](crate::LockGuard::scope) (or an [`Owner::scope`](crate::Owner::scope),
/// or with the opt-in [`Reentrancy::PerTask`](crate::Reentrancy::PerTask)).
///
/// ```no_run
/// use relock::{DistributedLock, Result};
/// async fn with_lock<L: DistributedLock>(lock: &L) -> Result<u64> {
///     let guard = lock.lock().await?;
///     Ok(guard.fencing_token())
/// }
/// ```
#[async_trait]
pub trait DistributedLock: Send + Sync {
    /// Acquires, waiting as long as it takes. Cancel safe: see [`Lock::lock`](crate::Lock::lock).
    async fn lock(&self) -> Result<LockGuard>;
    /// Acquires if free (or re-enters inside the hold's scope); never waits. Cancel safe.
    async fn try_lock(&self) -> Result<Option<LockGuard>>;
    /// Acquires, waiting at most about `wait`. Cancel safe.
    async fn try_lock_for(&self, wait: Duration) -> Result<Option<LockGuard>>;
    /// Deletes the lock whoever holds it; returns whether it was held.
    async fn force_unlock(&self) -> Result<bool>;
    /// Whether anyone holds the lock. Cancel safe (read only).
    async fn is_locked(&self) -> Result<bool>;
}

#[async_trait]
impl DistributedLock for crate::Lock {
    async fn lock(&self) -> Result<LockGuard> {
        crate::Lock::lock(self).await
    }
    async fn try_lock(&self) -> Result<Option<LockGuard>> {
        crate::Lock::try_lock(self).await
    }
    async fn try_lock_for(&self, wait: Duration) -> Result<Option<LockGuard>> {
        crate::Lock::try_lock_for(self, wait).await
    }
    async fn force_unlock(&self) -> Result<bool> {
        crate::Lock::force_unlock(self).await
    }
    async fn is_locked(&self) -> Result<bool> {
        crate::Lock::is_locked(self).await
    }
}

#[async_trait]
impl DistributedLock for crate::QuorumLock {
    async fn lock(&self) -> Result<LockGuard> {
        crate::QuorumLock::lock(self).await
    }
    async fn try_lock(&self) -> Result<Option<LockGuard>> {
        crate::QuorumLock::try_lock(self).await
    }
    async fn try_lock_for(&self, wait: Duration) -> Result<Option<LockGuard>> {
        crate::QuorumLock::try_lock_for(self, wait).await
    }
    async fn force_unlock(&self) -> Result<bool> {
        crate::QuorumLock::force_unlock(self).await
    }
    async fn is_locked(&self) -> Result<bool> {
        crate::QuorumLock::is_locked(self).await
    }
}
