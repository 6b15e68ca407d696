//! Calls to several nodes at once, polled in the caller's task until the caller has what it
//! needs (a majority, say); whatever is still running then goes on in one tracked task.
//!
//! Why in place: a task per node call cost a spawn and two wake-ups per node on the hot path
//! (a quorum acquire made 5 calls, and each hop is a scheduling round on a busy machine).
//! Why the leftovers go on: a node's call must run to its end even when nobody waits for its
//! answer any more (a slow node's EVALSHA that meets NOSCRIPT still sends its EVAL; a release
//! that got no answer is sent again), and shutdown must wait for it. So the calls not yet done
//! when the caller stops waiting, or when the caller's future is dropped, move to a task on
//! the client's tracker, which shutdown waits for.

use std::future::Future;
use std::sync::{Mutex, MutexGuard};

use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio_util::task::TaskTracker;

/// Calls polled in place; on drop, the ones still running go on in a task on `tracker`.
pub(crate) struct InPlace<F: Future<Output = T> + Send + 'static, T: Send + 'static> {
    /// Behind a lock only so that futures holding this stay `Sync` (the calls need not be):
    /// it is taken for each poll, by one task at a time.
    calls: Mutex<FuturesUnordered<F>>,
    tracker: TaskTracker,
    /// The runtime it was made on (see `detach::spawn`).
    runtime: Option<tokio::runtime::Handle>,
}

impl<F, T> InPlace<F, T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    pub(crate) fn new(tracker: &TaskTracker, calls: impl IntoIterator<Item = F>) -> Self {
        InPlace {
            calls: Mutex::new(calls.into_iter().collect()),
            tracker: tracker.clone(),
            runtime: tokio::runtime::Handle::try_current().ok(),
        }
    }

    /// One more call.
    pub(crate) fn push(&mut self, call: F) {
        self.calls().push(call);
    }

    fn calls(&self) -> MutexGuard<'_, FuturesUnordered<F>> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The next call to end, with its output; `None` once every call has ended.
    ///
    /// # Cancel safety
    /// Cancel safe: no output is lost by dropping this future (the call stays in the set).
    pub(crate) async fn next(&mut self) -> Option<T> {
        std::future::poll_fn(|cx| self.calls().poll_next_unpin(cx)).await
    }

    /// Whether every call has ended.
    pub(crate) fn is_empty(&self) -> bool {
        self.calls().is_empty()
    }
}

impl<F, T> Drop for InPlace<F, T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    fn drop(&mut self) {
        let mut rest = std::mem::take(&mut *self.calls());
        if rest.is_empty() {
            return;
        }
        crate::detach::spawn(&self.tracker, self.runtime.as_ref(), async move {
            while rest.next().await.is_some() {}
        });
    }
}

/// Runs every future in `futs` to its end, and hands each output to `on_ready` as it arrives,
/// until `on_ready` returns true or all are done. Only the *waiting* stops early: the calls
/// still running go on in a task on `tracker` (so shutdown waits for them), as they do if this
/// future is dropped. A call not yet run may not even have been sent: a release that must come
/// after it waits for it (`in_flight`).
pub(crate) async fn race<F, T>(
    tracker: &TaskTracker,
    futs: Vec<F>,
    mut on_ready: impl FnMut(T) -> bool,
) where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let mut calls = InPlace::new(tracker, futs);
    while let Some(out) = calls.next().await {
        if on_ready(out) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    /// The calls the caller stopped waiting for still run to their end, on the tracker.
    #[tokio::test]
    async fn calls_left_when_the_caller_stops_waiting_run_to_their_end() {
        let tracker = TaskTracker::new();
        let ended = Arc::new(AtomicUsize::new(0));
        let futs: Vec<_> = (0..5u64)
            .map(|i| {
                let ended = ended.clone();
                Box::pin(async move {
                    tokio::time::sleep(Duration::from_millis(20 * i)).await;
                    ended.fetch_add(1, Ordering::SeqCst);
                    i
                })
            })
            .collect();
        let mut seen = Vec::new();
        race(&tracker, futs, |i| {
            seen.push(i);
            seen.len() == 3
        })
        .await;
        assert_eq!(seen, vec![0, 1, 2]);
        tracker.close();
        tokio::time::timeout(Duration::from_secs(2), tracker.wait())
            .await
            .expect("the leftover task ends");
        assert_eq!(ended.load(Ordering::SeqCst), 5);
    }

    /// A race whose future is dropped leaves its calls running on the tracker.
    #[tokio::test]
    async fn a_dropped_race_leaves_its_calls_running() {
        let tracker = TaskTracker::new();
        let ended = Arc::new(AtomicUsize::new(0));
        let futs: Vec<_> = (0..3)
            .map(|_| {
                let ended = ended.clone();
                Box::pin(async move {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    ended.fetch_add(1, Ordering::SeqCst);
                })
            })
            .collect();
        let r = tokio::time::timeout(Duration::from_millis(5), race(&tracker, futs, |()| false));
        assert!(r.await.is_err(), "the race was cut off");
        assert_eq!(tracker.len(), 1, "one task carries the calls left");
        tracker.close();
        tokio::time::timeout(Duration::from_secs(2), tracker.wait())
            .await
            .expect("the leftover task ends");
        assert_eq!(ended.load(Ordering::SeqCst), 3);
    }
}
