//! The semaphore acquires whose attempt got no reply (it may have taken permits) and whose
//! caller has not given up yet (`Unsettled`): shutdown gives up on each for its caller and
//! gives back what it may have taken, so that a permit is not lost because the caller was
//! between two attempts, or not polled, when shutdown began.

use std::sync::Arc;

use dashmap::DashMap;

use crate::client::handle::{Inner, KindState, Round};
use crate::counting::common::{Names, Request};
use crate::counting::semaphore::give_back_request;

/// This client's unsettled acquires, by request key.
#[derive(Debug, Default)]
pub(crate) struct Unsettled {
    by_request: DashMap<String, (Arc<Names>, Arc<Request>, u64)>,
}

impl Unsettled {
    /// The acquire of `request` is settled (its caller got the permits, gave up, or is gone):
    /// its own give-back, if any, is its caller's.
    pub(crate) fn settled(&self, request: &str) {
        self.by_request.remove(request);
    }
}

/// An attempt of `request` (for `n` permits) got no reply: it may have taken them. If its
/// caller has given up already, or shutdown has begun (nothing is sent again then, so the
/// caller gives up), the give-back starts here, in the attempt's tracked task, so that
/// shutdown's wait for tracked work cannot end before it. Otherwise the request is kept for
/// shutdown, until its caller settles it.
pub(crate) fn uncertain(inner: &Arc<Inner>, names: &Arc<Names>, request: &Arc<Request>, n: u64) {
    // Kept first, then checked: a shutdown step that runs in between finds it, and whichever
    // of the two abandons first gives back (`Request::abandon` says yes once).
    inner
        .state::<Unsettled>()
        .by_request
        .insert(request.key.clone(), (names.clone(), request.clone(), n));
    if request.mark_uncertain() || (inner.check_running().is_err() && request.abandon()) {
        inner.state::<Unsettled>().settled(&request.key);
        let give_back = give_back_request(inner.clone(), names.clone(), request.clone(), n);
        inner.shared.tracker.spawn(give_back);
    }
}

impl KindState for Unsettled {
    /// Gives up on every unsettled acquire for its caller, and gives back what each may have
    /// taken, in parallel; shutdown waits for them before it closes the connections.
    fn at_shutdown(&self, inner: &Arc<Inner>, work: &mut tokio::task::JoinSet<()>, _: Round) {
        let keys: Vec<String> = self.by_request.iter().map(|e| e.key().clone()).collect();
        for key in keys {
            let Some((_, (names, request, n))) = self.by_request.remove(&key) else {
                continue;
            };
            if request.abandon() {
                work.spawn(give_back_request(inner.clone(), names, request, n));
            }
        }
    }
}
