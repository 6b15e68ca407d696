//! The limiter's wait: attempt, and while the permits are in use sleep the delay the script
//! returns (until the oldest record expires) and attempt again; no subscription, no message.
//! The last sleep before a deadline is cut to it, and one last attempt made there. A
//! transient error is retried as the other counting waits do ([`Transient`]).

use std::time::Duration;

use tokio::time::Instant;

use crate::counting::rate_limiter::calls::{Calls, Grant};
use crate::counting::wait::{Recheck, Transient};
use crate::error::Result;

/// Takes `n` permits (checked), waiting at most `wait` (`None`: as long as it takes) by
/// sleeping the script's delays. Returns whether they were taken.
///
/// A waiter (`wait` not zero) retries a transient error after a short, backing-off sleep
/// (never past the deadline) for up to one command timeout ([`Transient`]). An attempt whose
/// reply was lost may have taken its permits: they count against the rate until their
/// interval ends, and the retry takes its own (the limiter errs on the side of fewer grants).
pub(crate) async fn acquire_within(
    calls: Calls<'_>,
    n: u64,
    wait: Option<Duration>,
) -> Result<bool> {
    let deadline = wait.and_then(|w| Instant::now().checked_add(w));
    let mut errors = Transient::default();
    let mut pause = Recheck::new();
    loop {
        let delay = match calls.attempt(n).await {
            Ok(Grant::Taken) => return Ok(true),
            Ok(Grant::Wait(delay)) => {
                errors.ok();
                pause = Recheck::new();
                delay
            }
            Err(e) if wait == Some(Duration::ZERO) => return Err(e),
            Err(e) => {
                errors.after(calls.inner, e)?;
                let sleep = pause.period();
                pause.after(false);
                sleep
            }
        };
        if wait == Some(Duration::ZERO) {
            return Ok(false);
        }
        // Nothing wakes a waiter but its own timer (and shutdown): it sleeps the whole delay,
        // whatever the client's subscriber is doing.
        if !calls.inner.park_polling(delay, deadline).await? {
            return errors.timed_out();
        }
    }
}
