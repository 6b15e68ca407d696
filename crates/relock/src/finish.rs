//! [`Finish`]: runs a future in the caller's task, and hands it to a tracked task only if the
//! caller drops it unfinished.
//!
//! Why: an acquire attempt or a release must run to its end even when its caller gives up (a
//! reply that arrives late must still become a guard, whose drop releases it; a dropped
//! `unlock()` must still release). Spawning every attempt and release in its own task did that,
//! at the price of a task and two hops between tasks per operation, which was most of the
//! client's cost per lock. Here the common case, a caller that waits for the end, runs the
//! future in place; only a cancelled one costs a task.
//!
//! Shutdown waits for every `Finish` in flight as it waits for tasks: each holds a token of the
//! client's task tracker, which moves with the future into the task.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio_util::task::TaskTracker;

/// See the module docs.
pub(crate) struct Finish<T: Send + 'static> {
    fut: Option<Pin<Box<dyn Future<Output = T> + Send>>>,
    tracker: TaskTracker,
}

impl<T: Send + 'static> Finish<T> {
    /// `fut` counts as a task of `tracker` until it ends, wherever it runs.
    pub(crate) fn new<F>(tracker: &TaskTracker, fut: F) -> Self
    where
        F: Future<Output = T> + Send + 'static,
    {
        let token = tracker.token();
        Finish {
            fut: Some(Box::pin(async move {
                let out = fut.await;
                drop(token);
                out
            })),
            tracker: tracker.clone(),
        }
    }
}

impl<T: Send + 'static> Future for Finish<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let fut = self.fut.as_mut().expect("polled after completion");
        match fut.as_mut().poll(cx) {
            Poll::Ready(out) => {
                self.fut = None;
                Poll::Ready(out)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: Send + 'static> Drop for Finish<T> {
    fn drop(&mut self) {
        if let Some(fut) = self.fut.take() {
            // Outside a runtime nothing can run it: it is dropped, as a spawned task would be
            // when its runtime shuts down.
            if tokio::runtime::Handle::try_current().is_ok() {
                self.tracker.spawn(fut);
            }
        }
    }
}
