//! How the counting kinds' calls are sent again after a transient error: a call that must
//! take effect once carries a [`Request`] id, and a call whose repeat is harmless is simply
//! [`retrying`].

use std::future::Future;
use std::time::Duration;

use fred::interfaces::KeysInterface;
use tokio::time::Instant;

use crate::client::inner::Inner;
use crate::error::Result;
use crate::hold::keys;

/// A call that must take effect once however often it reaches the server: its reply lost and
/// the call tried again (a waiter retries), or a pool that resends after a reconnect
/// (`ClientBuilder::build_with_pool` with fred's default `max_command_attempts`). Its script
/// records the request under a key of its own (in the count's slot) and does nothing for a
/// copy that finds it.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) key: String,
    /// How long the key lives (ms): longer than any retry or resend of the call.
    pub(crate) ttl_ms: String,
    /// A call with it got no reply (a timeout, a lost connection): a copy may still land.
    uncertain: std::sync::atomic::AtomicBool,
    /// Its caller is gone or gave up, without the call's effect.
    abandoned: std::sync::atomic::AtomicBool,
}

impl Request {
    pub(crate) fn new(inner: &Inner, count_key: &str) -> Self {
        let s = &inner.settings();
        // A key is deleted as soon as a reply shows that no copy of its call is on its way;
        // only a call that got no reply keeps it for its TTL. A copy of that call may still
        // be in the network: TCP goes on retransmitting bytes written before a close for up
        // to about 15 minutes (Linux's default `tcp_retries2`), so the key outlives that.
        let ttl = ((s.command_timeout + s.connect_timeout) * 2).max(REQUEST_TTL);
        Request {
            key: format!(
                "{}:{}",
                keys::prefixed("relock_request", count_key),
                uuid::Uuid::new_v4().simple()
            ),
            ttl_ms: ttl.as_millis().to_string(),
            uncertain: Default::default(),
            abandoned: Default::default(),
        }
    }

    /// Records that a call with this request got no reply. True if its caller had already
    /// abandoned it: nobody else will then undo what that call may have done.
    pub(crate) fn mark_uncertain(&self) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        // Dekker order with `abandon`: each side stores its flag, then reads the other's, so
        // at least one of them sees both.
        self.uncertain.store(true, SeqCst);
        self.abandoned.load(SeqCst)
    }

    /// Records that the caller gave up or is gone without the call's effect. True, once, if a
    /// call had got no reply, so that what it may have done must be undone (a second abandon
    /// of the same request returns false: its undo is already on its way).
    pub(crate) fn abandon(&self) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        let first = !self.abandoned.swap(true, SeqCst);
        first && self.uncertain.load(SeqCst)
    }

    /// Records that an attempt's reply says the request took its permits, and closes the
    /// request: from now on nobody can give up on it (`abandon` says no), so that they are
    /// given back by whoever holds that reply, not by a give-back of the request too. False if
    /// somebody gave up on it before.
    pub(crate) fn close(&self) -> bool {
        !self
            .abandoned
            .swap(true, std::sync::atomic::Ordering::SeqCst)
    }

    /// Whether a call with this request got no reply.
    pub(crate) fn uncertain(&self) -> bool {
        self.uncertain.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Runs `call` (a script call carrying this request's key), sent again after a transient
    /// error for up to one command timeout (see [`retrying`]): whichever copies run, the call
    /// takes effect once, and every copy returns what the one that took effect returned.
    ///
    /// After a reply the key is deleted, unless a copy without a reply (a timeout, a
    /// connection lost after it may have been written) could still land later: that copy
    /// must still find the key, which then expires by itself.
    pub(crate) async fn send<T, F, Fut>(&self, inner: &Inner, mut call: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let r = retrying(inner, || {
            let copy = call();
            async {
                let r = copy.await;
                if let Err(e) = &r {
                    if e.may_have_run() {
                        let _ = self.mark_uncertain();
                    }
                }
                r
            }
        })
        .await;
        if r.is_ok() && !self.uncertain() {
            self.done(inner);
        }
        r
    }

    /// Once a reply came and no copy is uncertain, no copy of the call can still arrive (a
    /// resend only follows a lost reply): the key is deleted in the background rather than
    /// left for its TTL.
    pub(crate) fn done(&self, inner: &Inner) {
        let (pool, key) = (inner.pool().clone(), self.key.clone());
        inner.shared().tracker.spawn(async move {
            let _: std::result::Result<i64, _> = pool.next().del(key).await;
        });
    }
}

/// The least time a request key lives: longer than a copy of its call can take to arrive.
const REQUEST_TTL: Duration = Duration::from_secs(20 * 60);

/// Runs `call` again after a transient error (a pooled connection killed while idle fails
/// its next command; a command is not routed during a reconnect), for up to one command
/// timeout. Only for calls whose repeat is harmless (reads, and scripts whose repeat changes
/// nothing more).
pub(crate) async fn retrying<T, F, Fut>(inner: &Inner, mut call: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let started = Instant::now();
    let mut pause = Duration::from_millis(10);
    loop {
        match call().await {
            Err(e)
                if e.is_transient()
                    && started.elapsed() + pause < inner.settings().command_timeout
                    && inner.check_running().is_ok() =>
            {
                tracing::debug!(error = %e, "sent again after a transient error");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(200));
            }
            r => return r,
        }
    }
}
