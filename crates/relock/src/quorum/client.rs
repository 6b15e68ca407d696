//! [`QuorumClient`]: the handle on a quorum of independent masters (Redlock), and what it
//! tells about them.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::quorum::inner::QuorumInner;

/// A client for quorum locks (Redlock) over N independent Redis masters.
///
/// A lock is held when a majority (N/2 + 1) of the masters granted it within its validity
/// (lease − time taken − drift). It survives the loss of a minority of masters. Same API and
/// guard as the single-server [`Lock`](crate::Lock); read the safety guide first:
/// [`guide::safety`](crate::guide::safety#the-quorum-lock-redlock-over-n-independent-masters).
///
/// ```no_run
/// # async fn f() -> relock::Result<()> {
/// let client = relock::QuorumClient::connect([
///     "redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379",
/// ]).await?;
/// let guard = client.lock("orders:42").lock().await?;
/// println!("valid until {:?}, token {}", guard.valid_until(), guard.fencing_token());
/// guard.unlock().await?;
/// client.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct QuorumClient {
    pub(crate) inner: Arc<QuorumInner>,
}

impl std::fmt::Debug for QuorumClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuorumClient")
            .field("nodes", &self.nodes())
            .field("quorum", &self.inner.quorum)
            .field("client_id", &self.inner.client_id)
            .field("held_locks", &self.held_locks())
            .finish()
    }
}

impl QuorumClient {
    /// This client's id, the `<client_id>` of its holds' fields on every node.
    pub fn client_id(&self) -> &str {
        &self.inner.client_id
    }

    /// Votes needed: N/2 + 1.
    pub fn quorum(&self) -> usize {
        self.inner.quorum
    }

    /// The nodes' URLs, in the order given.
    pub fn nodes(&self) -> Vec<String> {
        self.inner.nodes.iter().map(|n| n.name.clone()).collect()
    }

    /// How many locks this client holds right now.
    pub fn held_locks(&self) -> usize {
        self.inner.shared.holds.held()
    }

    /// Releases every held lock on every node, stops the background tasks and closes the
    /// connections. Guards alive afterwards report themselves lost.
    ///
    /// It first waits (bounded) for the attempts and releases in flight, including those of
    /// `lock()` calls cancelled just before, so that nothing they took or were cleaning up is
    /// left on any node.
    ///
    /// # Cancel safety
    /// If dropped part-way, unreleased locks expire after their lease.
    pub async fn shutdown(&self) {
        let inner = &self.inner;
        if inner.shutting_down.swap(true, Ordering::SeqCst) {
            return;
        }
        let settle = inner.node_timeout * 8 + Duration::from_millis(200);
        // Releases still being sent again on a resumed node's new connections get one settle
        // wait, not all of them.
        *inner.closing_at.lock().unwrap() = Some(Instant::now() + settle);
        inner.shared.close();
        if tokio::time::timeout(settle, inner.shared.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("shutdown: work in flight did not finish within {settle:?}; releasing what is held anyway");
        }
        let mut work = JoinSet::new();
        let first = inner.shared.holds.all();
        for hold in first.iter().cloned() {
            hold.mark_ended();
            let inner = inner.clone();
            work.spawn(async move {
                // After a renewal round in flight (see `Hold::gate`): its put-back could
                // otherwise land after this release.
                let _gate = hold.gate.lock().await;
                inner
                    .release_everywhere(&hold.keys, &hold.field, true, hold.token)
                    .await
            });
        }
        while work.join_next().await.is_some() {}
        // The per-node releases those spawned run to their end before the nodes close; and an
        // attempt that passed its running check just before the flag may have been granted
        // meanwhile: release holds that appeared after the first list was taken.
        let _ = tokio::time::timeout(settle, inner.shared.tracker.wait()).await;
        for hold in inner.shared.holds.all() {
            if first.iter().any(|f| Arc::ptr_eq(f, &hold)) {
                continue;
            }
            hold.mark_ended();
            let _gate = hold.gate.lock().await;
            inner
                .release_everywhere(&hold.keys, &hold.field, true, hold.token)
                .await;
        }
        let _ = tokio::time::timeout(settle, inner.shared.tracker.wait()).await;
        inner.shared.holds.clear();
        let _ = inner.shutdown.send(true);
        let mut closing = JoinSet::new();
        for node in &inner.nodes {
            if let Some(conn) = node.conn.write().unwrap().take() {
                closing.spawn(async move { crate::Client { inner: conn }.shutdown().await });
            }
        }
        while closing.join_next().await.is_some() {}
    }
}
