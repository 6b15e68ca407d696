//! Work that must run to its end whatever its caller does (an acquire whose reply may still
//! become a hold, a release), run in the caller's own task while the caller polls it, and moved
//! to a tracked task when the caller can no longer be counted on to poll it: when its future is
//! dropped, or when shutdown begins.
//!
//! Why not a task of its own from the start: a spawned task per lock operation costs the spawn
//! and a scheduling hop each way (the caller waits on the task's handle), a large share of an
//! uncontended lock's client time and of a handoff's latency on a small machine
//! (the repository's `docs/performance.md`). Why not simply run it in place: a future that is kept alive but no
//! longer polled would hold its work hostage. Shutdown waits for the tracker's tasks and then
//! releases the holds it knows of; a grant whose reply sits in an unpolled future would be
//! neither, and would stay on the server for its lease. So every such future is registered
//! here, and shutdown detaches them all into tasks on the tracker before it waits for it.
//!
//! The caller sees no difference: its future returns the work's output either way.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use tokio::sync::oneshot;
use tokio_util::task::TaskTracker;

use crate::error::{Error, Result};

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Where a piece of work is.
enum State<T> {
    /// Polled by the caller; `waker` is the caller's, woken when shutdown moves the work.
    InPlace {
        work: BoxFuture<T>,
        waker: Option<Waker>,
    },
    /// Running in a tracked task, which sends its output here.
    Detached(oneshot::Receiver<T>),
    /// The output was taken.
    Done,
}

struct Slot<T> {
    state: Mutex<State<T>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while polling a slot's work is the caller's panic (it propagates from its
    // poll); what is left in the slot is never polled again (see `Drop`).
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The registry's view of a slot: shutdown detaches what is still in place.
trait Detach: Send + Sync {
    fn detach(&self, tracker: &TaskTracker);
}

impl<T: Send + 'static> Detach for Slot<T> {
    fn detach(&self, tracker: &TaskTracker) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if !matches!(*state, State::InPlace { .. }) {
            return;
        }
        let State::InPlace { work, waker } = std::mem::replace(&mut *state, State::Done) else {
            unreachable!("checked above")
        };
        let (tx, rx) = oneshot::channel();
        tracker.spawn(async move {
            let _ = tx.send(work.await);
        });
        *state = State::Detached(rx);
        drop(state);
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// The work of a client that runs in its callers' tasks: each registered until it ends.
#[derive(Default)]
pub(crate) struct Registry {
    inner: Mutex<Entries>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("in_place", &lock(&self.inner).live)
            .finish()
    }
}

/// A slab: a freed index is reused, so registering costs no allocation once warm.
#[derive(Default)]
struct Entries {
    slots: Vec<Option<Arc<dyn Detach>>>,
    free: Vec<usize>,
    live: usize,
    /// Set by shutdown: new work goes to the tracker at once.
    closed: bool,
}

impl Registry {
    /// Runs `work` in the caller's task while the caller polls the returned future; moves it
    /// to a task on `tracker` if that future is dropped before the work ends, or when
    /// [`detach_all`](Self::detach_all) is called (shutdown). After `detach_all`, new work
    /// starts on the tracker at once.
    pub(crate) fn run<T, F>(self: &Arc<Self>, tracker: &TaskTracker, work: F) -> Detachable<T>
    where
        T: Send + 'static,
        F: Future<Output = T> + Send + 'static,
    {
        let slot = Arc::new(Slot {
            state: Mutex::new(State::InPlace {
                work: Box::pin(work),
                waker: None,
            }),
        });
        let index = {
            let mut e = lock(&self.inner);
            if e.closed {
                None
            } else {
                let dyn_slot: Arc<dyn Detach> = slot.clone();
                e.live += 1;
                Some(match e.free.pop() {
                    Some(i) => {
                        e.slots[i] = Some(dyn_slot);
                        i
                    }
                    None => {
                        e.slots.push(Some(dyn_slot));
                        e.slots.len() - 1
                    }
                })
            }
        };
        if index.is_none() {
            // Shutdown has begun: it waits for the tracker, so the work goes there.
            slot.detach(tracker);
        }
        Detachable {
            slot,
            registry: self.clone(),
            tracker: tracker.clone(),
            runtime: tokio::runtime::Handle::try_current().ok(),
            index,
        }
    }

    /// Moves every piece of work still in place to a task on `tracker`, and every later one
    /// too. Shutdown calls this before it waits for the tracker.
    pub(crate) fn detach_all(&self, tracker: &TaskTracker) {
        self.detach(tracker, true);
    }

    /// Moves every piece of work now in place to a task on `tracker`; later work still runs
    /// in place. For whoever finds a shared resource held too long: in-place work whose caller
    /// stopped polling holds what it holds (a coalescer's call slot) until it is polled again,
    /// and in a task of its own it lets go as soon as its reply comes.
    pub(crate) fn detach_current(&self, tracker: &TaskTracker) {
        self.detach(tracker, false);
    }

    fn detach(&self, tracker: &TaskTracker, close: bool) {
        // Taken under the registry's lock, detached outside it: detaching locks a slot, and a
        // slot's work may be polled (under the slot's lock) while it registers other work.
        let slots: Vec<Arc<dyn Detach>> = {
            let mut e = lock(&self.inner);
            e.closed |= close;
            e.slots.iter().flatten().cloned().collect()
        };
        for s in slots {
            s.detach(tracker);
        }
    }

    fn remove(&self, index: usize) {
        let mut e = lock(&self.inner);
        if e.slots[index].take().is_some() {
            e.live -= 1;
            e.free.push(index);
        }
    }

    /// Work running in place now (for tests).
    #[cfg(test)]
    fn live(&self) -> usize {
        lock(&self.inner).live
    }
}

/// A piece of work run by [`Registry::run`]: awaiting it gives the work's output, wherever the
/// work ran. `Sync`, so an async fn holding it across an await stays `Sync`.
#[must_use = "dropping it moves the work to a task of its own"]
pub(crate) struct Detachable<T: Send + 'static> {
    slot: Arc<Slot<T>>,
    registry: Arc<Registry>,
    tracker: TaskTracker,
    /// The runtime it was made on: a future dropped on a thread outside any runtime (a plain
    /// thread it was moved to) still has its work spawned there.
    runtime: Option<tokio::runtime::Handle>,
    index: Option<usize>,
}

impl<T: Send + 'static> Future for Detachable<T> {
    type Output = Result<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        let this = self.get_mut();
        let Ok(mut state) = this.slot.state.lock() else {
            // As an `async fn` polled again after it panicked.
            panic!("a relock lock operation was polled again after it panicked");
        };
        let out = match &mut *state {
            State::InPlace { work, waker } => match work.as_mut().poll(cx) {
                Poll::Ready(v) => Ok(v),
                Poll::Pending => {
                    if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        *waker = Some(cx.waker().clone());
                    }
                    return Poll::Pending;
                }
            },
            State::Detached(rx) => match Pin::new(rx).poll(cx) {
                Poll::Ready(Ok(v)) => Ok(v),
                // The task was dropped unfinished: the runtime is going away.
                Poll::Ready(Err(_)) => Err(Error::Shutdown),
                Poll::Pending => return Poll::Pending,
            },
            State::Done => Err(Error::Shutdown),
        };
        *state = State::Done;
        drop(state);
        if let Some(i) = this.index.take() {
            this.registry.remove(i);
        }
        Poll::Ready(out)
    }
}

impl<T: Send + 'static> Drop for Detachable<T> {
    fn drop(&mut self) {
        // Poisoned: the work panicked while polled (the panic went to the caller); it cannot
        // be polled again.
        if let Ok(mut state) = self.slot.state.lock() {
            if matches!(*state, State::InPlace { .. }) {
                let State::InPlace { work, .. } = std::mem::replace(&mut *state, State::Done)
                else {
                    unreachable!("checked above")
                };
                // Spawned before the slot's lock is let go and before the slot leaves the
                // registry: a shutdown that finds the slot either detaches it or, waiting for
                // its lock, finds it spawned; one that no longer finds it finds the task.
                spawn(&self.tracker, self.runtime.as_ref(), work);
            }
        }
        if let Some(i) = self.index.take() {
            self.registry.remove(i);
        }
    }
}

/// Spawns `work` on `tracker`, on the current runtime or else on `runtime` (the one the work
/// was made on): a guard dropped on a thread outside any runtime releases through
/// the runtime it was made on, as promptly as a drop inside it. With neither (the runtime is
/// gone), nothing can run it and `work` is dropped unrun: a command already sent still runs
/// on the server, and a grant expires with its lease.
pub(crate) fn spawn<F>(tracker: &TaskTracker, runtime: Option<&tokio::runtime::Handle>, work: F)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(_) => drop(tracker.spawn(work)),
        Err(_) => {
            if let Some(rt) = runtime {
                drop(tracker.spawn_on(work, rt));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    fn assert_send_sync<T: Send + Sync>(_: &T) {}

    /// Work polled to its end in place leaves nothing registered and spawns nothing.
    #[tokio::test]
    async fn work_polled_to_its_end_runs_in_place() {
        let (registry, tracker) = (Arc::new(Registry::default()), TaskTracker::new());
        let d = registry.run(&tracker, async { 7 });
        assert_send_sync(&d);
        assert_eq!(registry.live(), 1);
        assert_eq!(d.await.unwrap(), 7);
        assert_eq!(registry.live(), 0);
        assert_eq!(tracker.len(), 0);
    }

    /// Dropped before its end, the work goes on in a tracked task.
    #[tokio::test]
    async fn dropped_work_runs_to_its_end_on_the_tracker() {
        let (registry, tracker) = (Arc::new(Registry::default()), TaskTracker::new());
        let ended = Arc::new(AtomicBool::new(false));
        let e = ended.clone();
        let d = registry.run(&tracker, async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            e.store(true, Ordering::SeqCst);
        });
        assert!(tokio::time::timeout(Duration::from_millis(5), d)
            .await
            .is_err());
        assert_eq!(registry.live(), 0);
        assert_eq!(tracker.len(), 1);
        tracker.close();
        tokio::time::timeout(Duration::from_secs(2), tracker.wait())
            .await
            .unwrap();
        assert!(ended.load(Ordering::SeqCst));
    }

    /// Work whose future is kept but no longer polled is moved to the tracker by
    /// `detach_all`, runs to its end there, and its owner still gets the output.
    #[tokio::test]
    async fn detach_all_moves_unpolled_work_to_the_tracker_and_the_caller_still_gets_it() {
        let (registry, tracker) = (Arc::new(Registry::default()), TaskTracker::new());
        let (go, wait) = oneshot::channel::<()>();
        let mut d = registry.run(&tracker, async move {
            let _ = wait.await;
            5
        });
        // Polled once, then left alone.
        let first = std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut d).poll(cx))).await;
        assert!(first.is_pending());
        registry.detach_all(&tracker);
        assert_eq!(
            registry.live(),
            1,
            "still registered until its owner takes the output"
        );
        assert_eq!(tracker.len(), 1);
        go.send(()).unwrap();
        tracker.close();
        tokio::time::timeout(Duration::from_secs(2), tracker.wait())
            .await
            .expect("the detached work ends without its owner polling it");
        assert_eq!(d.await.unwrap(), 5);
        assert_eq!(registry.live(), 0);
        // After detach_all, new work starts on the tracker.
        let d2 = registry.run(&tracker, async { 9 });
        assert_eq!(registry.live(), 0);
        assert_eq!(d2.await.unwrap(), 9);
    }

    /// Slots are reused: a steady stream of work keeps the registry's size bounded.
    #[tokio::test]
    async fn slots_are_reused() {
        let (registry, tracker) = (Arc::new(Registry::default()), TaskTracker::new());
        for i in 0..100 {
            assert_eq!(registry.run(&tracker, async move { i }).await.unwrap(), i);
        }
        assert_eq!(lock(&registry.inner).slots.len(), 1);
    }
}
