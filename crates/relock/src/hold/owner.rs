//! Explicit owners: an [`Owner`] scope lets several tasks re-enter one hold.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

tokio::task_local! {
    static SCOPED: Owner;
}

static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static THREAD_OWNER: Owner = Owner::with_prefix("thread-");
}

/// An explicit owner of holds: inside [`Owner::scope`], a `lock()` re-enters the live hold
/// that the same owner took (on the same client), instead of waiting for it.
///
/// Without an owner scope, a `lock()` re-enters only inside a hold's own scope
/// ([`LockGuard::scope`](crate::LockGuard::scope)); see [`Reentrancy`](crate::Reentrancy).
/// With [`Reentrancy::PerTask`](crate::Reentrancy::PerTask) the implicit owner is
/// [`Owner::current`]: in order, the owner of an enclosing [`Owner::scope`], the current tokio
/// task (`task-<id>`), or outside any task the current OS thread (`thread-<n>`).
///
/// The owner is local bookkeeping: on the server every hold has its own field
/// (`<client_id>:<n>`), whoever owns it.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use relock::Owner;
/// let owner = Owner::new();
/// // Work spawned onto another task acts as the same owner, so it can re-enter the lock.
/// let same = tokio::spawn(owner.clone().scope(async { Owner::current() })).await.unwrap();
/// assert_eq!(same, owner);
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Owner(Arc<str>);

impl Owner {
    /// A new owner, distinct from every other owner in this process.
    pub fn new() -> Self {
        Self::with_prefix("owner-")
    }

    fn with_prefix(prefix: &str) -> Self {
        Owner(format!("{prefix}{}", NEXT_OWNER.fetch_add(1, Ordering::Relaxed)).into())
    }

    /// The owner of the calling code under [`Reentrancy::PerTask`](crate::Reentrancy::PerTask):
    /// the enclosing scope's owner, else the task, else the thread.
    pub fn current() -> Self {
        if let Ok(owner) = SCOPED.try_with(Owner::clone) {
            return owner;
        }
        if let Some(id) = tokio::task::try_id() {
            return Owner(format!("task-{id}").into());
        }
        THREAD_OWNER.with(Owner::clone)
    }

    /// The owner of an enclosing [`Owner::scope`], if any.
    pub(crate) fn scoped() -> Option<Self> {
        SCOPED.try_with(Owner::clone).ok()
    }

    /// Runs `future` with `self` as its owner: `lock()` calls inside re-enter this owner's
    /// live hold of the same lock.
    ///
    /// # Cancel safety
    /// Dropping the returned future drops `future`; nothing else happens.
    pub async fn scope<F: Future>(self, future: F) -> F::Output {
        SCOPED.scope(self, future).await
    }

    /// The owner's text, as used in the hash field.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Owner {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_task_is_its_own_owner_and_scope_overrides() {
        let a = tokio::spawn(async { Owner::current() }).await.unwrap();
        let b = tokio::spawn(async { Owner::current() }).await.unwrap();
        assert_ne!(a, b);
        assert!(a.as_str().starts_with("task-"));
        let o = Owner::new();
        let inside = tokio::spawn(o.clone().scope(async { Owner::current() }))
            .await
            .unwrap();
        assert_eq!(inside, o);
    }

    #[test]
    fn outside_a_task_the_thread_is_the_owner() {
        let here = Owner::current();
        assert_eq!(here, Owner::current());
        assert!(here.as_str().starts_with("thread-"));
        let there = std::thread::spawn(Owner::current).join().unwrap();
        assert_ne!(here, there);
    }
}
