//! [`Backend`]: where holds live (one server, or a quorum of masters). The guard releases
//! through it and the shared watchdog renews through it, so neither knows which it is; a new
//! place for holds is one more implementation of this trait.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::task::TaskTracker;

use crate::error::Result;
use crate::hold::commands;
use crate::hold::detach;
use crate::hold::holds::{Hold, Holds};

/// A boxed, sendable future: what the trait's async operations return (the trait is used as
/// `dyn Backend` by guards).
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What every backend keeps, whatever it talks to.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The process-unique id of the client, so that a scope re-enters only its own holds.
    pub(crate) id: u64,
    /// The client's record of its holds.
    pub(crate) holds: Holds,
    /// Every attempt, re-entry, release and leave of a line runs here, so that shutdown can
    /// wait for what is in flight before it releases what is held.
    pub(crate) tracker: TaskTracker,
    /// Attempts and re-entries running in their callers' tasks: moved to the tracker when
    /// their futures are dropped, or when shutdown begins (`detach`).
    pub(crate) in_place: Arc<detach::Registry>,
}

impl Shared {
    pub(crate) fn new(id: u64) -> Self {
        Shared {
            id,
            holds: Holds::default(),
            tracker: TaskTracker::new(),
            in_place: Arc::default(),
        }
    }

    /// Runs `work` to its end: in the caller's task while the caller polls it, on the tracker
    /// once its future is dropped or shutdown has begun. Errs with `Shutdown` only if the
    /// runtime dropped the work unfinished.
    pub(crate) fn run<T, F>(&self, work: F) -> detach::Detachable<T>
    where
        T: Send + 'static,
        F: Future<Output = T> + Send + 'static,
    {
        self.in_place.run(&self.tracker, work)
    }

    /// Shutdown's first step: every piece of work running in a caller's task moves to the
    /// tracker (and later work starts there), then the tracker is closed, so that waiting for
    /// the tracker waits for all of it, whether or not its callers still poll it.
    pub(crate) fn close(&self) {
        self.in_place.detach_all(&self.tracker);
        self.tracker.close();
    }
}

pub(crate) trait Backend: Send + Sync + std::fmt::Debug + 'static {
    /// The state every backend keeps.
    fn shared(&self) -> &Shared;

    /// Releases one guard's worth of `hold`: one count, or (with `remaining == 0`) the whole
    /// hold under its own field. `lost`: the hold was already lost locally.
    fn release(
        self: Arc<Self>,
        hold: Arc<Hold>,
        remaining: u32,
        lost: bool,
    ) -> BoxFuture<Result<()>>;

    /// How often the watchdog renews: a third of the watchdog lease.
    fn renew_period(&self) -> Duration;

    /// The renewal script calls for `holds`: groups that one call can carry.
    fn renewal_batches(&self, holds: Vec<Arc<Hold>>) -> Vec<Vec<Arc<Hold>>>;

    /// Renews one batch; marks holds found gone (or out of lease) lost. False if the call
    /// failed, so that the watchdog tries again sooner.
    fn renew_batch(self: Arc<Self>, batch: Vec<Arc<Hold>>) -> BoxFuture<bool>;

    /// Lengthens `hold`'s lease to at least `lease` from now, on the server first and then on
    /// the local clock (from the send time), never shortening either. The caller has checked
    /// `lease`. [`Error::LockLost`](crate::Error::LockLost) if the hold is found gone.
    fn extend(self: Arc<Self>, hold: Arc<Hold>, lease: Duration) -> BoxFuture<Result<()>>;

    /// Runs a guarded batch (`hold::guarded`): `commands` only while `hold` is on its lock,
    /// in one step of the lock's server; `read`: flagged no-writes. A backend with no single
    /// server that holds both the lock and the data refuses it (the default).
    fn guarded(
        self: Arc<Self>,
        hold: Arc<Hold>,
        commands: Arc<commands::Commands>,
        read: bool,
    ) -> BoxFuture<Result<Vec<fred::types::Value>>> {
        let _ = commands;
        let name = hold.keys.lock.clone();
        let (argument, does) = if read {
            ("read", "reads")
        } else {
            ("write", "writes")
        };
        Box::pin(async move {
            Err(crate::error::Error::invalid(
                argument,
                format!(
                    "`{name}` has no single server that holds the lock and could check the hold as it {does}: protect its data with a FencedKey and the guard's fencing token"
                ),
            ))
        })
    }

    /// What else the watchdog's round renews beside the holds (what a kind holds under a
    /// lease of its own: a permit semaphore's permits), one call per batch. None by default.
    fn other_renewals(self: Arc<Self>) -> Vec<BoxFuture<bool>> {
        Vec::new()
    }
}
