//! The limiter's wait: attempt, and while the permits are in use sleep the delay the script
//! returns (until the oldest record expires) and attempt again; no subscription, no message.
//! The last sleep before a deadline is cut to it, and one last attempt made there.

use std::time::Duration;

use tokio::time::Instant;

use crate::counting::rate_limiter::calls::{Calls, Grant};
use crate::error::Result;

/// Takes `n` permits (checked), waiting at most `wait` (`None`: as long as it takes) by
/// sleeping the script's delays. Returns whether they were taken.
pub(crate) async fn acquire_within(
    calls: Calls<'_>,
    n: u64,
    wait: Option<Duration>,
) -> Result<bool> {
    let deadline = wait.and_then(|w| Instant::now().checked_add(w));
    loop {
        let delay = match calls.attempt(n).await? {
            Grant::Taken => return Ok(true),
            Grant::Wait(delay) => delay,
        };
        if wait == Some(Duration::ZERO) {
            return Ok(false);
        }
        // Nothing wakes a waiter but its own timer (and shutdown): it sleeps the whole delay,
        // whatever the client's subscriber is doing.
        if !calls.inner.park_polling(delay, deadline).await? {
            return Ok(false);
        }
    }
}
