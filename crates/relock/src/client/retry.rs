//! The one background retry of the client: an undo whose outcome was unknown (a final release,
//! the clean-up of an acquire whose reply was lost, the give-back of a permit), sent again until
//! it gets a reply, until what it undoes has ended by itself, or until shutdown's last chance.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::client::inner::Inner;
use crate::client::redact;

/// Sends `call` again, backing off from 50 ms to 1 s ([`Backoff`]), until it succeeds or `until` passes (the
/// lease of whatever it undoes has ended on the local clock: the server has dropped it by
/// then). Once shutdown begins (also in the middle of a call, which is then left to land
/// late) it has shutdown's last chance: it keeps trying every 50 ms, each call bounded, until
/// one command timeout after it noticed (shutdown waits for tracked work that long: a
/// connection may still be reconnecting), then logs `what` with the last error and gives up:
/// the lease ends it.
///
/// `call` must be safe to repeat and to land late (it names only its own field or id).
pub(crate) async fn until_done<F, Fut, T, E>(
    inner: &Inner,
    until: Instant,
    what: &'static str,
    name: &str,
    mut call: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: std::fmt::Display,
{
    let mut stopping = inner.stopping.subscribe();
    let mut backoff = Backoff::default();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(backoff.next_wait()) => {}
            _ = stopping.wait_for(|s| *s) => {}
        }
        if Instant::now() >= until {
            return;
        }
        if *stopping.borrow() {
            return last_chance(inner, what, name, call).await;
        }
        tokio::select! {
            r = call() => match r {
                Ok(_) => return,
                Err(e) => tracing::debug!(%name, error = %e, "{what} retry failed"),
            },
            // Shutdown began during the call: it may still land (harmless); the last chance
            // starts now rather than after the call's own timeout.
            _ = stopping.wait_for(|s| *s) => {}
        }
    }
}

/// The retries' backoff: 50 ms, then twice as long each time, at most 1 s (a blip costs one
/// short wait, a long outage a call a second).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Backoff(Duration);

impl Default for Backoff {
    fn default() -> Self {
        Backoff(Duration::from_millis(50))
    }
}

impl Backoff {
    /// The wait before this try; the next one's is twice as long, at most 1 s.
    pub(crate) fn next_wait(&mut self) -> Duration {
        let now = self.0;
        self.0 = (self.0 * 2).min(Duration::from_secs(1));
        now
    }
}

/// Shutdown's last chance for [`until_done`]: [`try_until`] what is left of one command
/// timeout from now, through every error.
async fn last_chance<F, Fut, T, E>(inner: &Inner, what: &'static str, name: &str, call: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: std::fmt::Display,
{
    let last = Instant::now() + inner.settings.command_timeout;
    try_until(inner, last, what, name, call, |_| true).await;
}

/// Tries `call` every 50 ms, each try bounded by `last`, until one succeeds (true), an error
/// that `retry` says is final comes (a server's error reply: the call ran, and will answer the
/// same), or `last` has passed; then logs `what` with the last error, redacted (false).
/// Shutdown's last chance for an undo: a try sent while a connection is being replaced fails
/// at once, and one try is not enough.
pub(crate) async fn try_until<F, Fut, T, E>(
    inner: &Inner,
    last: Instant,
    what: &'static str,
    name: &str,
    mut call: F,
    retry: impl Fn(&E) -> bool,
) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: std::fmt::Display,
{
    loop {
        let (error, again) = match tokio::time::timeout_at(last, call()).await {
            Ok(Ok(_)) => return true,
            Ok(Err(e)) => (e.to_string(), retry(&e)),
            Err(_) => ("no reply before shutdown's wait ended".to_string(), false),
        };
        if !again || Instant::now() + Duration::from_millis(50) >= last {
            let error = redact::in_text(&error, &inner.settings.url);
            tracing::warn!(%name, %error, "{what} at shutdown failed; the lease will expire");
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
