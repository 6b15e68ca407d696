//! [`SemaphorePermits`](crate::SemaphorePermits): the permits one `acquire` of a
//! [`Semaphore`](crate::Semaphore) took, given back when dropped, as tokio's `SemaphorePermit`; and the permits
//! such guards of a client hold (`Outstanding`), given back by its shutdown.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use dashmap::DashMap;

use crate::client::handle::{Inner, KindState, Round};
use crate::counting::common::unexpected;
use crate::counting::common::Names;
use crate::error::{Error, Result};

crate::client::scripts::scripts! {
    /// Semaphore: add n permits (a release) and publish the new count.
    SEMAPHORE_ADD = writes "semaphore_add.lua" [];
}

/// `n` permits of a [`Semaphore`](crate::Semaphore), taken by [`acquire`](crate::Semaphore::acquire) (or a `try_`
/// form): given back when the guard is dropped (in the background), or by
/// [`release`](SemaphorePermits::release) to learn the outcome. An early `?` or a panic gives
/// them back too.
///
/// [`forget`](SemaphorePermits::forget) keeps them taken, as Redisson's `RSemaphore` does: any
/// handle, in any process, gives them back later with [`Semaphore::release`](crate::Semaphore::release).
///
/// A permit of a counting semaphore has no owner and no lease (Redisson's layout): permits of
/// a process that dies holding them are not given back by themselves. Where that matters, use
/// [`PermitSemaphore`](crate::PermitSemaphore), whose permits have leases.
/// [`Client::shutdown`](crate::Client::shutdown) gives back the permits of guards still alive.
#[must_use = "if unused the permits are given back at once"]
#[clippy::has_significant_drop]
pub struct SemaphorePermits {
    inner: Arc<Inner>,
    names: Arc<Names>,
    n: u64,
    /// Its entry in the client's `Outstanding`.
    id: u64,
}

impl std::fmt::Debug for SemaphorePermits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemaphorePermits")
            .field("semaphore", &self.names.key)
            .field("permits", &self.n)
            .finish()
    }
}

/// The permits this client's [`SemaphorePermits`] hold: whoever takes an entry out (the
/// guard's release or drop, its `forget`, or shutdown) is the one that gives them back, once.
#[derive(Debug, Default)]
pub(crate) struct Outstanding {
    next: AtomicU64,
    by_id: DashMap<u64, (Arc<Names>, u64)>,
}

impl KindState for Outstanding {
    /// Gives back the permits of every guard still alive, in parallel; its drop then finds
    /// them given back. Permits whose give-back fails are lost, as a crashed holder's are.
    fn at_shutdown(&self, inner: &Arc<Inner>, work: &mut tokio::task::JoinSet<()>, _: Round) {
        let ids: Vec<u64> = self.by_id.iter().map(|e| *e.key()).collect();
        for id in ids {
            let Some((_, (names, n))) = self.by_id.remove(&id) else {
                continue;
            };
            let inner = inner.clone();
            work.spawn(async move {
                let limit = inner.settings.command_timeout;
                let error = match tokio::time::timeout(limit, add(&inner, &names, n as i64)).await {
                    Ok(Ok(_)) => return,
                    Ok(Err(e)) => e.to_string(),
                    Err(_) => format!("no reply within {limit:?}"),
                };
                tracing::warn!(semaphore = %names.key, permits = n, %error, "giving back semaphore permits at shutdown failed: they are lost");
            });
        }
    }
}

impl SemaphorePermits {
    /// Records `n` permits just taken on `sem` in the client's `Outstanding`.
    pub(crate) fn taken(inner: &Arc<Inner>, names: Arc<Names>, n: u64) -> Self {
        let outstanding = inner.state::<Outstanding>();
        let id = outstanding.next.fetch_add(1, Ordering::Relaxed);
        outstanding.by_id.insert(id, (names.clone(), n));
        SemaphorePermits {
            inner: inner.clone(),
            names,
            n,
            id,
        }
    }

    /// Takes this guard's entry out: true if it was still there (nobody gave the permits back
    /// or forgot them yet).
    fn settle(&self) -> bool {
        self.inner
            .state::<Outstanding>()
            .by_id
            .remove(&self.id)
            .is_some()
    }

    /// How many permits it holds.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// The semaphore's name.
    pub fn semaphore(&self) -> &str {
        &self.names.key
    }

    /// Keeps the permits taken without a guard, as Redisson's `acquire` does: give them back
    /// later with [`Semaphore::release`](crate::Semaphore::release), from any handle or process. Returns how many.
    ///
    /// ```no_run
    /// # async fn f(sem: relock::Semaphore) -> relock::Result<()> {
    /// let n = sem.acquire(2).await?.forget();
    /// // ... elsewhere, later:
    /// sem.release(n).await?;
    /// # Ok(()) }
    /// ```
    pub fn forget(self) -> u64 {
        self.settle();
        let n = self.n;
        std::mem::forget(self);
        n
    }

    /// Gives the permits back and reports how that went.
    ///
    /// # Errors
    /// As [`Semaphore::release`](crate::Semaphore::release); [`Error::Shutdown`] if the client's shutdown gave them
    /// back already.
    ///
    /// # Cancel safety
    /// As [`Semaphore::release`](crate::Semaphore::release): once first polled, the release runs to its end.
    pub async fn release(self) -> Result<()> {
        let mine = self.settle();
        let (inner, names, n) = (self.inner.clone(), self.names.clone(), self.n);
        std::mem::forget(self);
        if !mine {
            return Err(Error::Shutdown);
        }
        // A tracked task: shutdown waits for it, and a dropped future does not stop it. No
        // running check: permits taken before shutdown are given back during it too.
        let tracker = inner.shared.tracker.clone();
        tracker
            .spawn(async move { add(&inner, &names, n as i64).await.map(drop) })
            .await
            .map_err(|_| Error::Shutdown)?
    }
}

impl Drop for SemaphorePermits {
    fn drop(&mut self) {
        if !self.settle() {
            return;
        }
        let (inner, names, n) = (self.inner.clone(), self.names.clone(), self.n);
        let work = async move {
            if let Err(e) = add(&inner, &names, n as i64).await {
                tracing::warn!(semaphore = %names.key, permits = n, error = %e, "giving back dropped semaphore permits failed: they are lost");
            }
        };
        let inner = &self.inner;
        if tokio::runtime::Handle::try_current().is_ok() {
            inner.shared.tracker.spawn(work);
        } else {
            // Off the runtime's threads: the client's runtime gives them back. If that runtime
            // is gone, the task is dropped unrun and the permits are lost.
            inner.shared.tracker.spawn_on(work, &inner.runtime);
        }
    }
}

/// `semaphore_add.lua`: adds `n` (may be negative) and publishes the new count if above 0.
/// Returns the new count, or `InvalidArgument` if it would go above `MAX_COUNT`.
pub(crate) async fn add(inner: &Inner, names: &Names, n: i64) -> Result<i64> {
    let reply: Vec<i64> = names
        .run_publishing(
            inner,
            (&SEMAPHORE_ADD, "semaphore add"),
            &[],
            vec![n.to_string()],
            true,
        )
        .await?;
    match reply.as_slice() {
        [1, available] => Ok(*available),
        [0, available] => Err(Error::invalid(
            "n",
            format!(
                "adding {n} to the {available} available permits of `{}` would exceed the 10^15 supported; add fewer",
                names.key
            ),
        )),
        other => Err(unexpected("semaphore add", inner, other)),
    }
}
