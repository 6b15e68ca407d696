//! Running one call per node at once and counting answers as they come (`race`), and the
//! drift a lease's validity is cut by.

use std::future::Future;
use std::time::Duration;

/// Runs every future in `futs` to its end, each in its own task on `tracker` (so shutdown waits
/// for them), and hands each output to `on_ready` as it arrives, until `on_ready` returns true
/// or all are done. Only the *waiting* stops early: a node's call that is still running goes
/// on (a slow node's EVALSHA that meets NOSCRIPT still sends its EVAL). A call not yet run may
/// not even have been sent: a release that must come after it waits for it (`in_flight`).
pub(crate) async fn race<F, T>(
    tracker: &tokio_util::task::TaskTracker,
    futs: Vec<F>,
    on_ready: impl FnMut(T) -> bool,
) where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let _late = race_keeping_late(tracker, futs, on_ready).await;
}

/// [`race`], returning where the outputs of the calls not awaited will arrive: for a caller
/// that must still act on what they did (a late grant that minted a lower fencing token).
pub(crate) async fn race_keeping_late<F, T>(
    tracker: &tokio_util::task::TaskTracker,
    futs: Vec<F>,
    mut on_ready: impl FnMut(T) -> bool,
) -> tokio::sync::mpsc::UnboundedReceiver<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for f in futs {
        let tx = tx.clone();
        tracker.spawn(async move {
            let _ = tx.send(f.await);
        });
    }
    drop(tx);
    while let Some(out) = rx.recv().await {
        if on_ready(out) {
            break;
        }
    }
    rx
}

/// Clock drift allowance of the Redlock algorithm: 1% of the lease plus 2 ms.
pub(crate) fn drift(lease: Duration) -> Duration {
    lease / 100 + Duration::from_millis(2)
}
