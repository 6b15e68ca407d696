//! Which hold, if any, a `lock()` call re-enters.
//!
//! By default a lock behaves like `tokio::sync::Mutex`: every `lock()` that is not inside a
//! scope of a hold is a fresh acquisition, so concurrent futures (`join!`, `select!`,
//! `FuturesUnordered`, successive `block_on` bodies on one thread) exclude each other even when
//! they run in one task. Re-entry is explicit:
//! - inside [`LockGuard::scope`](crate::LockGuard::scope) (or `Lock::with`), a `lock()` of the
//!   same lock re-enters that hold;
//! - inside [`Owner::scope`], a `lock()` re-enters the live hold that owner took;
//! - with [`Reentrancy::PerTask`] (opt-in on the builder), the current task (or thread) is an
//!   implicit owner, as in Redisson.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};
pub(crate) use crate::hold::holds::Caller;
use crate::hold::holds::{Hold, Holds};
use crate::hold::owner::Owner;

tokio::task_local! {
    /// The holds whose scopes enclose the current future, innermost last.
    static HELD: Arc<Vec<Scoped>>;
}

/// One hold whose scope encloses the current future. (`pub` only because it appears in the
/// type of [`LockGuard::scope`](crate::LockGuard::scope)'s future; the module is private.)
#[derive(Debug, Clone)]
#[allow(unreachable_pub)]
pub struct Scoped {
    client: u64,
    hold: Arc<Hold>,
}

static NEXT_CLIENT: AtomicU64 = AtomicU64::new(1);

/// A process-unique id for a client (single-server or quorum), so a scope re-enters only holds
/// of the client that took them.
pub(crate) fn next_client_id() -> u64 {
    NEXT_CLIENT.fetch_add(1, Ordering::Relaxed)
}

/// How `lock()` calls re-enter holds. Set with
/// [`ClientBuilder::reentrancy`](crate::ClientBuilder::reentrancy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Reentrancy {
    /// Re-entry only inside a scope: [`LockGuard::scope`](crate::LockGuard::scope),
    /// [`Lock::with`](crate::Lock::with), or [`Owner::scope`]. Every other `lock()` is a fresh
    /// acquisition that waits for the holder, like `tokio::sync::Mutex`. The default.
    #[default]
    Scoped,
    /// Redisson-like: the current tokio task (outside a task, the current thread) is the owner,
    /// and its second `lock()` re-enters its first hold.
    ///
    /// **Hazard:** every future polled by one task is the same owner. Branches of `join!` or
    /// `select!`, futures in a `FuturesUnordered` or `for_each_concurrent`, and successive
    /// `block_on` bodies on one thread all re-enter each other's holds, so their critical
    /// sections run at the same time. Use it only for code written for Redisson's thread
    /// model, where each task runs one critical section at a time.
    PerTask,
}

/// What a `lock()` call does.
#[derive(Debug)]
pub(crate) enum Target {
    /// Re-enter this live hold.
    Reenter(Arc<Hold>),
    /// Acquire afresh; record the hold under `owner` (if any) for later re-entry.
    Fresh { owner: Option<Owner> },
}

/// Decides between re-entry and a fresh acquisition for `lock` on client `client`.
///
/// # Errors
/// [`Error::LockLost`] when the call is inside the scope of a hold of this lock that has
/// ended: the enclosing critical section lost its lock, and acquiring afresh would pretend
/// otherwise.
pub(crate) fn resolve(client: u64, mode: Reentrancy, holds: &Holds, lock: &str) -> Result<Target> {
    if let Some(hold) = scoped_hold(client, lock) {
        return if hold.is_live() {
            Ok(Target::Reenter(hold))
        } else {
            Err(Error::LockLost {
                name: lock.to_string(),
            })
        };
    }
    let owner = owner(mode);
    if let Some(o) = &owner {
        let mine =
            |h: &Hold| h.owner.as_ref() == Some(o) && h.is_live() && h.keys.kind.shared_reentry();
        if let Some(h) = holds.find(lock, mine) {
            return Ok(Target::Reenter(h));
        }
    }
    Ok(Target::Fresh { owner })
}

/// The owner whose holds a `lock()` re-enters outside a hold's scope: the enclosing
/// [`Owner::scope`]'s, or in per-task mode the current task's; `None` otherwise.
pub(crate) fn owner(mode: Reentrancy) -> Option<Owner> {
    match (Owner::scoped(), mode) {
        (Some(o), _) => Some(o),
        (None, Reentrancy::PerTask) => Some(Owner::current()),
        (None, Reentrancy::Scoped) => None,
    }
}

/// The holds of `lock` on `client` whose scopes enclose the current future, innermost first,
/// of a kind with a re-entry of its own (`HoldKind::shared_reentry` false: a read-write
/// lock's sides), for that kind to choose from.
pub(crate) fn scoped_holds(client: u64, lock: &str) -> Vec<Arc<Hold>> {
    HELD.try_with(|held| {
        held.iter()
            .rev()
            .filter(|s| s.client == client && s.hold.keys.lock == lock)
            .filter(|s| !s.hold.keys.kind.shared_reentry())
            .map(|s| s.hold.clone())
            .collect()
    })
    .unwrap_or_default()
}

/// The innermost enclosing scope's hold of `lock` on `client` that the shared re-entry
/// applies to, if any: never a hold of a kind with a re-entry of its own (a read-write lock's
/// of the same name, whose holds mean something else: `scoped_holds` finds those).
pub(crate) fn scoped_hold(client: u64, lock: &str) -> Option<Arc<Hold>> {
    HELD.try_with(|held| {
        held.iter()
            .rev()
            .find(|s| {
                s.client == client && s.hold.keys.lock == lock && s.hold.keys.kind.shared_reentry()
            })
            .map(|s| s.hold.clone())
    })
    .ok()
    .flatten()
}

/// Runs `future` with `hold` added to the enclosing scopes.
pub(crate) fn scope<F: Future>(
    client: u64,
    hold: Arc<Hold>,
    future: F,
) -> tokio::task::futures::TaskLocalFuture<Arc<Vec<Scoped>>, F> {
    let mut held: Vec<Scoped> = HELD.try_with(|h| h.to_vec()).unwrap_or_default();
    held.push(Scoped { client, hold });
    HELD.scope(Arc::new(held), future)
}

/// Warns once when a fresh `lock()` waits on a live hold that its own task took outside any
/// scope: a nested call that forgot the scope waits for itself until that hold ends (never,
/// while the watchdog renews it; with a fixed lease, until it runs out).
pub(crate) fn warn_if_waiting_on_own_task(holds: &Holds, lock: &str, warned: &mut bool) {
    if *warned {
        return;
    }
    let caller = Caller::current();
    if holds
        .find(lock, |h| h.task == caller && h.is_live())
        .is_some()
    {
        *warned = true;
        tracing::warn!(
            lock = %lock,
            "lock() waits for a hold taken by its own task: if this call is nested inside that \
             critical section it waits until that hold ends, which with the watchdog renewing \
             it is never (with a fixed lease: until the lease runs out). Re-enter explicitly \
             with `guard.scope(fut)` or `lock.with(async |guard| {{ .. }})`, or pass the guard \
             down"
        );
    }
}
