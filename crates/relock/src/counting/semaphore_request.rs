//! A semaphore acquire's request: its script (`semaphore_acquire.lua`, which also gives back
//! what a request took), the give-back of what an abandoned request took, and the requests
//! whose attempt got no reply and whose caller has not given up yet (`Unsettled`): shutdown
//! gives up on each for its caller and gives back what it may have taken, so that a permit is
//! not lost because the caller was between two attempts, or not polled, when shutdown began.

use std::sync::Arc;

use dashmap::DashMap;

use crate::client::handle::{Inner, KindState, Round};
use crate::client::retry::try_until;
use crate::counting::common::{Names, Request};

crate::client::scripts::scripts! {
    /// Semaphore: take n permits if that many are available (or give back what a request
    /// took).
    SEMAPHORE_ACQUIRE = writes "semaphore_acquire.lua" [];
}

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
        spawn_give_back(inner, names.clone(), request.clone(), n);
    }
}

/// Starts [`give_back_request`] in a tracked task on the client's runtime: not on the
/// caller's, which may be none (a future dropped on a thread outside any runtime) or may end
/// before the give-back does (a `block_on` on another thread). Only if the client's runtime
/// is gone too is it dropped unrun, and says so.
pub(crate) fn spawn_give_back(
    inner: &Arc<Inner>,
    names: Arc<Names>,
    request: Arc<Request>,
    n: u64,
) {
    /// Warns, when dropped before the give-back ended, that the permits are lost.
    struct Unfinished {
        names: Arc<Names>,
        n: u64,
        ended: bool,
    }
    impl Unfinished {
        fn end(mut self) {
            self.ended = true;
        }
    }
    impl Drop for Unfinished {
        fn drop(&mut self) {
            if !self.ended {
                tracing::warn!(semaphore = %self.names.key, permits = self.n, "the client's runtime ended before the permits an abandoned acquire may have taken were given back: they are lost");
            }
        }
    }
    let unfinished = Unfinished {
        names: names.clone(),
        n,
        ended: false,
    };
    let work = give_back_request(inner.clone(), names, request, n);
    let work = async move {
        work.await;
        unfinished.end();
    };
    drop(inner.shared.tracker.spawn_on(work, &inner.runtime));
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

/// Gives back what `request` took, once, whichever of its copies took it, and makes any copy
/// still on its way take nothing: for an acquire whose caller is gone, or that gave up after
/// an attempt whose reply never came. Sent again after transient errors for one command
/// timeout; the request key is left to expire if a copy may still land.
pub(crate) async fn give_back_request(
    inner: Arc<Inner>,
    names: Arc<Names>,
    request: Arc<Request>,
    n: u64,
) {
    let keys = vec![names.key.clone(), request.key.clone()];
    let args = vec![
        n.to_string(),
        request.ttl_ms.clone(),
        "return".to_string(),
        inner.publish_cmd().to_string(),
        names.channel.clone(),
    ];
    let call = || async {
        SEMAPHORE_ACQUIRE
            .run::<Vec<i64>>(inner.pool.next(), keys.clone(), args.clone())
            .await
            .map_err(|e| inner.error("semaphore give back", &names.key, e))
    };
    let mut r = request.send(&inner, call).await;
    if r.is_err() && inner.check_running().is_err() {
        // Shutdown began, and it does not retry: a plain semaphore's permit has no lease, so a
        // give-back given up here is a permit taken for good. Shutdown's last chance: sent
        // again through every error (a connection being replaced fails a call at once, with
        // one error or another) until one command timeout from now; shutdown waits for
        // tracked work that long. Safe to repeat: the request key makes it give back once.
        let raw =
            || SEMAPHORE_ACQUIRE.run::<Vec<i64>>(inner.pool.next(), keys.clone(), args.clone());
        let last = tokio::time::Instant::now() + inner.settings.command_timeout;
        let name = &names.key;
        if try_until(&inner, last, "semaphore give-back", name, raw, |_| true).await {
            r = Ok(Vec::new());
        }
    }
    match r {
        Ok(r) if r.first() == Some(&2) => {
            tracing::debug!(semaphore = %names.key, permits = n, "gave back the permits of an acquire that did not return them");
        }
        Ok(_) => {}
        Err(e) => {
            tracing::warn!(semaphore = %names.key, permits = n, error = %e, "could not give back the permits an abandoned acquire may have taken: they are lost");
        }
    }
}
