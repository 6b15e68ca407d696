//! A semaphore acquire's request: its script (`semaphore_acquire.lua`, which also gives back
//! what a request took), the give-back of what an abandoned request took, and the requests
//! whose attempt got no reply and whose caller has not given up yet (`Unsettled`): shutdown
//! gives up on each for its caller and gives back what it may have taken, so that a permit is
//! not lost because the caller was between two attempts, or not polled, when shutdown began.

use std::sync::Arc;

use dashmap::DashMap;

use crate::client::inner::{Inner, KindState, Round};
use crate::client::retry::try_until;
use crate::client::scripts;
use crate::counting::names::Names;
use crate::counting::request::Request;
use crate::counting::semaphore_permits::Outstanding;

scripts::scripts! {
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
    drop(inner.shared().tracker.spawn_on(work, inner.runtime()));
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
            .run::<Vec<i64>>(inner.conn(), keys.clone(), args.clone())
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
        let raw = || SEMAPHORE_ACQUIRE.run::<Vec<i64>>(inner.conn(), keys.clone(), args.clone());
        let last = tokio::time::Instant::now() + inner.settings().command_timeout;
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

/// What one acquire attempt found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Attempt {
    /// The permits are the caller's.
    Taken,
    /// Fewer than wanted were available: this many (nothing was taken).
    TooFew(i64),
}

/// Permits an acquire script took for a caller that may be gone: unless the caller claims
/// them, they are put back (released) when this is dropped. An attempt runs in a task of its
/// own and returns this, so a reply that arrives after the caller gave up (its future was
/// dropped) still reaches this drop, which releases what the script took.
#[derive(Debug)]
pub(super) struct Taken {
    pub(super) inner: Arc<Inner>,
    pub(super) names: Arc<Names>,
    /// The acquire's request, forgotten once the permits are given back.
    pub(super) request: Arc<Request>,
    pub(super) n: u64,
    pub(super) claimed: bool,
}

impl Taken {
    pub(super) fn claim(mut self) {
        self.claimed = true;
    }
}

impl Drop for Taken {
    fn drop(&mut self) {
        if self.claimed {
            return;
        }
        // Shutdown may have given them back already (it takes the entry out): once.
        if !self.inner.state::<Outstanding>().take(&self.request.key) {
            return;
        }
        tracing::debug!(semaphore = %self.names.key, permits = self.n, "acquire cancelled after it took permits; releasing them");
        // Dropped where the caller's future was dropped, which may be outside any runtime.
        spawn_give_back(
            &self.inner,
            self.names.clone(),
            self.request.clone(),
            self.n,
        );
    }
}

/// An acquire in progress: dropped without its permits (it gave up, failed, or its future was
/// dropped), it gives back what an attempt without a reply may have taken.
pub(super) struct Abandon {
    pub(super) inner: Arc<Inner>,
    pub(super) names: Arc<Names>,
    pub(super) request: Arc<Request>,
    pub(super) n: u64,
    pub(super) got: bool,
}

impl Abandon {
    pub(super) fn finish(mut self, got: bool) {
        self.got = got;
    }
}

impl Drop for Abandon {
    fn drop(&mut self) {
        // Given up on first, then no longer kept for shutdown: an attempt whose reply is lost
        // meanwhile either sees it given up on (and gives back itself) or is found here.
        let give_back = !self.got && self.request.abandon();
        // Only a request that got no reply was ever kept (the common acquire skips the map).
        if self.request.uncertain() {
            self.inner.state::<Unsettled>().settled(&self.request.key);
        }
        if give_back {
            let (names, request) = (self.names.clone(), self.request.clone());
            spawn_give_back(&self.inner, names, request, self.n);
        }
    }
}

/// Reads `semaphore_acquire.lua`'s reply (`[1, _]` taken, `[0, available]` too few); `None`
/// for a shape it never sends.
pub(super) fn read_acquire(reply: &[i64]) -> Option<Attempt> {
    match *reply {
        [1, _] => Some(Attempt::Taken),
        [0, available] => Some(Attempt::TooFew(available)),
        _ => None,
    }
}
