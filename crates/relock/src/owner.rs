//! Who holds a lock: by default the current tokio task, as Redisson's owner is the thread.

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

/// The identity that holds a lock, the `<owner>` in the hash field `<client_id>:<owner>`.
///
/// Reentrancy is per owner: a second `lock()` by the same owner re-enters instead of waiting.
/// [`Owner::current`] picks, in order:
/// 1. the owner of an enclosing [`Owner::scope`];
/// 2. the current tokio task (`task-<id>`), so each spawned task is its own owner;
/// 3. outside any task (for example inside `Runtime::block_on`), the current OS thread
///    (`thread-<n>`), as Redisson does.
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

    /// The owner of the calling code; see the type's docs for the rule.
    pub fn current() -> Self {
        if let Ok(owner) = SCOPED.try_with(Owner::clone) {
            return owner;
        }
        if let Some(id) = tokio::task::try_id() {
            return Owner(format!("task-{id}").into());
        }
        THREAD_OWNER.with(Owner::clone)
    }

    /// Runs `future` with `self` as its [`Owner::current`].
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
