//! Calls in flight per hold field and node, so that a release reaches a node after the calls
//! it undoes.
//!
//! A quorum attempt sends each node's vote from a task of its own and returns once a majority
//! has answered; the release that may follow at once is sent from other tasks. A command is
//! handed to fred only when its task first runs, and tasks run in any order: under load a
//! node's release was sent before the vote it was meant to undo, found nothing, and the vote
//! then made a hold that nobody owned for a whole lease (`relock bench-quorum` left it in about
//! one run in ten on a busy machine). The same goes for a vote whose EVALSHA met NOSCRIPT (its
//! EVAL is sent only after that reply), and for a re-entry's count against a release's.
//!
//! So every call that can add to a field on a node is registered here for as long as its task
//! runs (each is bounded by the node timeout), and a release of that field on that node first
//! waits for them. Once a call's task has ended, whatever it sent is already queued on the
//! field's pinned connection, ahead of anything sent later there.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::watch;

/// A hold field on one node (its index in the quorum).
type FieldOnNode = (String, usize);

/// The calls in flight, by field and node.
#[derive(Debug, Default)]
pub(crate) struct InFlight(Mutex<HashMap<FieldOnNode, Vec<watch::Receiver<()>>>>);

/// One registered call: in flight until dropped (keep it inside the call's future).
#[derive(Debug)]
pub(crate) struct Call(#[allow(dead_code)] watch::Sender<()>);

impl InFlight {
    /// Registers a call for `field` on node `node`; it counts until the returned [`Call`] is
    /// dropped.
    pub(crate) fn start(&self, field: &str, node: usize) -> Call {
        let (tx, rx) = watch::channel(());
        let mut calls = self.0.lock().unwrap();
        // Forget calls that have ended (a field that is never released leaves nothing here).
        calls.retain(|_, v| {
            v.retain(|r| r.has_changed().is_ok());
            !v.is_empty()
        });
        calls.entry((field.to_string(), node)).or_default().push(rx);
        Call(tx)
    }

    /// Waits until every call registered so far for `field` on node `node` has ended.
    ///
    /// Bounded by the calls' own bounds (each ends within the node timeout).
    pub(crate) async fn settled(&self, field: &str, node: usize) {
        let pending: Vec<watch::Receiver<()>> = self
            .0
            .lock()
            .unwrap()
            .get(&(field.to_string(), node))
            .cloned()
            .unwrap_or_default();
        for mut call in pending {
            // Nothing is ever sent: `changed` returns an error once the call's sender is gone.
            while call.changed().await.is_ok() {}
        }
    }

    /// Calls registered and not yet ended (for tests of this module).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.0
            .lock()
            .unwrap()
            .values()
            .flatten()
            .filter(|r| r.has_changed().is_ok())
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_release_waits_for_the_calls_on_its_field_and_node_only() {
        let f = std::sync::Arc::new(InFlight::default());
        let vote = f.start("a", 1);
        let other_node = f.start("a", 2);
        let other_field = f.start("b", 1);
        assert_eq!(f.len(), 3);
        // Not settled while the vote runs.
        let waiting = tokio::time::timeout(Duration::from_millis(50), f.settled("a", 1)).await;
        assert!(waiting.is_err());
        let f2 = f.clone();
        let release = tokio::spawn(async move { f2.settled("a", 1).await });
        drop(vote);
        tokio::time::timeout(Duration::from_secs(5), release)
            .await
            .expect("settled once the vote ended")
            .unwrap();
        // The other calls are still in flight; ended calls are forgotten at the next start.
        assert_eq!(f.len(), 2);
        drop((other_node, other_field));
        let _c = f.start("c", 0);
        assert_eq!(f.0.lock().unwrap().len(), 1);
    }
}
