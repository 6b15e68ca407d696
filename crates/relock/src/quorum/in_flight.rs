//! Calls in flight per hold field and node, so that a release reaches a node after the calls
//! it undoes.
//!
//! A quorum attempt sends each node's vote from a task of its own and returns once a majority
//! has answered; the release that may follow at once is sent from other tasks. A command is
//! handed to fred only when its task first runs, and tasks run in any order: under load a
//! node's release was sent before the vote it was meant to undo, found nothing, and the vote
//! then made a hold that nobody owned for a whole lease (`relock bench-quorum` left one in
//! about one run in ten on a busy machine). A vote whose EVALSHA meets NOSCRIPT sends its EVAL
//! only once that reply is back, which can also be after the release.
//!
//! So every call that can add to a field on a node is registered here ([`InFlight::start`])
//! and says when it has handed its command to fred ([`Call::handed`]). A release of that field
//! on that node ([`InFlight::release`]) first waits until each such call has handed its
//! command over (or ended): from then on whatever it sent is queued ahead of the release on
//! the field's pinned connection. A call that wants to send again (the EVAL after NOSCRIPT)
//! asks first ([`Call::may_send_more`]) and sends nothing once a release has begun: its first
//! command did not run, so it took nothing.
//!
//! The release waits for a hand-over, not for an answer: normally a few microseconds, and it
//! is still pipelined behind the vote on a slow node.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::client::scripts::Tracker;

/// A hold field on one node (its index in the quorum).
type FieldOnNode = (String, usize);

/// The calls in flight, by field and node.
#[derive(Debug, Default)]
pub(crate) struct InFlight(Arc<Mutex<HashMap<FieldOnNode, Arc<Slot>>>>);

/// One field on one node: its calls, and whether a release of it has begun.
#[derive(Debug, Default)]
struct Slot {
    released: AtomicBool,
    calls: Mutex<Vec<(Arc<CallState>, watch::Receiver<()>)>>,
}

#[derive(Debug, Default)]
struct CallState {
    /// Everything the call has sent so far is with fred (false again while it decides to send
    /// more).
    handed: AtomicBool,
    ended: AtomicBool,
    /// It asked to send another command (the script body after NOSCRIPT): what it sends then
    /// may be queued behind calls handed over after its first.
    resent: AtomicBool,
}

/// One registered call: keep it inside the call's future; it ends when dropped.
#[derive(Debug)]
pub(crate) struct Call {
    map: Arc<Mutex<HashMap<FieldOnNode, Arc<Slot>>>>,
    key: FieldOnNode,
    slot: Arc<Slot>,
    state: Arc<CallState>,
    /// Wakes a waiting release when the state changes; dropped (closed) when the call ends.
    tx: watch::Sender<()>,
}

impl InFlight {
    /// Registers a call for `field` on node `node`, before its task is spawned.
    pub(crate) fn start(&self, field: &str, node: usize) -> Call {
        let key = (field.to_string(), node);
        let state = Arc::new(CallState::default());
        let (tx, rx) = watch::channel(());
        // Under the map's lock, as `Call::drop` takes it: the slot cannot be dropped from the
        // map between being found and getting this call.
        let mut map = self.0.lock().unwrap();
        let slot = map.entry(key.clone()).or_default().clone();
        slot.calls.lock().unwrap().push((state.clone(), rx));
        drop(map);
        Call {
            map: self.0.clone(),
            key,
            slot,
            state,
            tx,
        }
    }

    /// A release of `field` on node `node` begins; the returned wait ends once each call
    /// registered so far has handed over what it sent. For the release of the whole hold
    /// (`whole`), no registered call sends anything more from now on. A release of one count
    /// does not stop them: a re-entry never brings a hold back (`reenter.lua` needs the
    /// field), and a vote that lands after it leaves the node with the count the client has.
    pub(crate) fn release(&self, field: &str, node: usize, whole: bool) -> Pending {
        let Some(slot) = self.slot(field, node) else {
            return Pending(Vec::new());
        };
        if whole {
            slot.released.store(true, SeqCst);
        }
        let calls = slot.calls.lock().unwrap().clone();
        Pending(calls)
    }

    /// The calls registered so far for `key` on node `node`, to wait for; unlike
    /// [`release`](Self::release), it stops none of them.
    pub(crate) fn registered(&self, key: &str, node: usize) -> Pending {
        match self.slot(key, node) {
            Some(slot) => Pending(slot.calls.lock().unwrap().clone()),
            None => Pending(Vec::new()),
        }
    }

    fn slot(&self, key: &str, node: usize) -> Option<Arc<Slot>> {
        let map = self.0.lock().unwrap();
        if map.is_empty() {
            // The common case: nothing in flight, no key to build.
            return None;
        }
        map.get(&(key.to_string(), node)).cloned()
    }

    /// Fields with calls registered (for tests).
    #[cfg(test)]
    fn fields(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

/// What a release waits for (see [`InFlight::release`]).
#[derive(Debug)]
pub(crate) struct Pending(Vec<(Arc<CallState>, watch::Receiver<()>)>);

impl Pending {
    /// Waits until every call has handed over its command or ended. Bounded by the calls'
    /// own bounds (each ends within the node timeout); normally immediate.
    pub(crate) async fn wait(self) {
        self.handed().await;
    }

    /// [`wait`](Self::wait), keeping the calls for [`ended`](Self::ended) and
    /// [`answered`](Self::answered).
    pub(crate) async fn handed(&self) {
        self.until(|s| s.ended.load(SeqCst) || s.handed.load(SeqCst))
            .await;
    }

    /// Whether every call has ended.
    pub(crate) fn ended(&self) -> bool {
        self.0.iter().all(|(s, _)| s.ended.load(SeqCst))
    }

    /// Whether a call that had not ended may have been overtaken by a command handed over
    /// after its first one: waits until each has ended or asked to send again (both follow
    /// its first answer, so for a call answered before the caller's own, at once), and says
    /// whether any asked to send again.
    pub(crate) async fn resent(&self) -> bool {
        self.until(|s| s.ended.load(SeqCst) || s.resent.load(SeqCst))
            .await;
        self.0.iter().any(|(s, _)| s.resent.load(SeqCst))
    }

    /// Waits until every call has ended (for a release: it has its answer, or none in time).
    pub(crate) async fn answered(&self) {
        self.until(|s| s.ended.load(SeqCst)).await;
    }

    async fn until(&self, done: impl Fn(&CallState) -> bool) {
        for (state, rx) in &self.0 {
            let mut rx = rx.clone();
            loop {
                rx.borrow_and_update();
                if done(state) {
                    break;
                }
                if rx.changed().await.is_err() {
                    break; // the call ended
                }
            }
        }
    }
}

impl Call {
    /// Everything sent so far is with fred.
    pub(crate) fn handed(&self) {
        self.state.handed.store(true, SeqCst);
        self.tx.send_replace(());
    }

    /// Whether the call may send another command (after NOSCRIPT): false once a release of
    /// its field on its node has begun. (Stored before the release flag is read, as the
    /// release stores its flag before it reads this one: one of the two sees the other.)
    pub(crate) fn may_send_more(&self) -> bool {
        self.state.resent.store(true, SeqCst);
        self.state.handed.store(false, SeqCst);
        self.tx.send_replace(());
        !self.slot.released.load(SeqCst)
    }
}

/// A vote's or a re-entry's script call tells its registration when it is with fred, and
/// asks it before sending the script's body after NOSCRIPT.
impl Tracker for Call {
    fn handed(&self) {
        Call::handed(self);
    }

    fn may_send_more(&self) -> bool {
        Call::may_send_more(self)
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        self.state.ended.store(true, SeqCst);
        let mut map = self.map.lock().unwrap();
        let mut calls = self.slot.calls.lock().unwrap();
        calls.retain(|(s, _)| !Arc::ptr_eq(s, &self.state));
        // The last call of the field on this node: forget the field (a release that comes
        // later has nothing to wait for).
        if calls.is_empty()
            && map
                .get(&self.key)
                .is_some_and(|s| Arc::ptr_eq(s, &self.slot))
        {
            map.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const SHORT: Duration = Duration::from_millis(50);

    #[tokio::test]
    async fn a_release_waits_until_the_call_on_its_field_and_node_has_handed_over() {
        let f = InFlight::default();
        let vote = f.start("a", 1);
        let _other_node = f.start("a", 2);
        let _other_field = f.start("b", 1);
        // Not handed over yet: the release waits.
        assert!(tokio::time::timeout(SHORT, f.release("a", 1, true).wait())
            .await
            .is_err());
        let release = f.release("a", 1, true);
        vote.handed();
        tokio::time::timeout(Duration::from_secs(5), release.wait())
            .await
            .expect("done once the vote handed over");
        // The other calls do not hold it up.
        drop(vote);
        tokio::time::timeout(Duration::from_secs(5), f.release("a", 1, true).wait())
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_call_sends_nothing_more_once_a_release_began_and_the_release_waits_for_a_resend() {
        let f = InFlight::default();
        let vote = f.start("a", 1);
        vote.handed();
        // A resend asked for before the release: the release waits for it.
        assert!(vote.may_send_more());
        let release = f.release("a", 1, true);
        let waiting = tokio::spawn(release.wait());
        tokio::time::sleep(SHORT).await;
        assert!(!waiting.is_finished());
        vote.handed();
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .unwrap()
            .unwrap();
        // After the release began, no more.
        assert!(!vote.may_send_more());
        // A release of one count waits for the hand-over but does not stop a resend.
        let reentry = f.start("d", 0);
        reentry.handed();
        f.release("d", 0, false).wait().await;
        assert!(reentry.may_send_more());
        // An ended call does not hold a release up either.
        let late = f.start("c", 0);
        let pending = f.release("c", 0, true);
        drop(late);
        tokio::time::timeout(Duration::from_secs(5), pending.wait())
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn registered_tells_handed_over_from_answered_and_stops_none() {
        let f = InFlight::default();
        let release = f.start("lock", 1);
        let pending = f.registered("lock", 1);
        assert!(tokio::time::timeout(SHORT, pending.handed()).await.is_err());
        release.handed();
        tokio::time::timeout(Duration::from_secs(5), pending.handed())
            .await
            .expect("handed over");
        assert!(!pending.ended());
        let waiting = tokio::spawn(async move { pending.answered().await });
        tokio::time::sleep(SHORT).await;
        assert!(!waiting.is_finished(), "the release has not ended");
        // Other nodes and keys have nothing registered.
        tokio::time::timeout(SHORT, f.registered("lock", 2).wait())
            .await
            .unwrap();
        tokio::time::timeout(SHORT, f.registered("other", 1).wait())
            .await
            .unwrap();
        let resent = f.registered("lock", 1);
        assert!(tokio::time::timeout(SHORT, resent.resent()).await.is_err());
        assert!(release.may_send_more(), "registered() stops nothing");
        assert!(
            tokio::time::timeout(Duration::from_secs(5), resent.resent())
                .await
                .unwrap(),
            "asked to send again"
        );
        drop(release);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .unwrap()
            .unwrap();
    }

    #[tokio::test]
    async fn a_call_that_ended_without_sending_again_was_not_resent() {
        let f = InFlight::default();
        let release = f.start("lock", 1);
        release.handed();
        let pending = f.registered("lock", 1);
        drop(release);
        assert!(
            !tokio::time::timeout(Duration::from_secs(5), pending.resent())
                .await
                .unwrap()
        );
    }

    #[tokio::test]
    async fn ended_calls_leave_nothing_behind() {
        let f = InFlight::default();
        let calls: Vec<Call> = (0..100).map(|i| f.start(&format!("f{i}"), i % 3)).collect();
        let twice = f.start("f0", 0);
        assert_eq!(f.fields(), 100);
        drop(calls);
        assert_eq!(f.fields(), 1);
        drop(twice);
        assert_eq!(f.fields(), 0);
    }
}
