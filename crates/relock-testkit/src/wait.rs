//! Bounded waiting for conditions: the replacement for a bare `sleep` in a test.

use std::future::Future;
use std::time::{Duration, Instant};

/// `wait_until` ran out of time; names what it waited for.
#[derive(Debug, thiserror::Error)]
#[error("timed out after {waited:?} waiting for: {what}")]
pub struct WaitTimeout {
    /// What the caller was waiting for.
    pub what: String,
    /// How long it waited.
    pub waited: Duration,
}

/// Polls `condition` every 5 ms until it returns `true`, for at most `timeout`.
///
/// Returns how long it took, or [`WaitTimeout`] naming `what`.
///
/// ```no_run
/// # async fn f(server: &relock_testkit::RedisServer) -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// relock_testkit::wait_until(Duration::from_secs(2), "the lock key to expire", || async {
///     server.dbsize().unwrap() == 0
/// })
/// .await?;
/// # Ok(()) }
/// ```
pub async fn wait_until<F, Fut>(
    timeout: Duration,
    what: &str,
    mut condition: F,
) -> Result<Duration, WaitTimeout>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let start = Instant::now();
    loop {
        if condition().await {
            return Ok(start.elapsed());
        }
        if start.elapsed() >= timeout {
            return Err(WaitTimeout {
                what: what.to_string(),
                waited: start.elapsed(),
            });
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
