//! The one background retry of the client: an undo whose outcome was unknown (a final release,
//! the clean-up of an acquire whose reply was lost, the give-back of a permit), sent again until
//! it gets a reply, until what it undoes has ended by itself, or until shutdown's last chance.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::client::handle::Inner;

/// Sends `call` again, backing off from 50 ms to 1 s, until it succeeds or `until` passes (the
/// lease of whatever it undoes has ended on the local clock: the server has dropped it by
/// then). Once shutdown begins it keeps trying every 50 ms for one command timeout (shutdown
/// waits for tracked work that long: a connection may still be reconnecting), then logs
/// `what` with the last error and gives up: the lease ends it.
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
    let mut backoff = Duration::from_millis(50);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = stopping.wait_for(|s| *s) => {}
        }
        if Instant::now() >= until {
            return;
        }
        if *stopping.borrow() {
            let last = Instant::now() + inner.settings.command_timeout;
            loop {
                match call().await {
                    Ok(_) => return,
                    Err(e) if Instant::now() + Duration::from_millis(50) >= last => {
                        tracing::warn!(%name, error = %e, "{what} at shutdown failed; the lease will expire");
                        return;
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        }
        match call().await {
            Ok(_) => return,
            Err(e) => tracing::debug!(%name, error = %e, "{what} retry failed"),
        }
        backoff = (backoff * 2).min(Duration::from_secs(1));
    }
}
