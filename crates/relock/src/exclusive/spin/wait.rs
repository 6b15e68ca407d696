//! The spin wait: attempt, and while the lock is held sleep the next back-off and attempt
//! again; no subscription, no message. The last sleep before a deadline is cut to it, and one
//! last attempt made there.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::client::inner::Inner;
use crate::client::scripts;
use crate::error::Result;
use crate::exclusive::attempt::{attempt, await_local_release, AcquireCall, Attempt, Fresh};
use crate::exclusive::lock::PlainCall;
use crate::exclusive::spin::backoff::backoff;
use crate::hold::guard::LockGuard;
use crate::hold::kind::{Coalescible, LockKeys};
use crate::hold::reentry;

/// The spin lock's attempt: the plain lock's `acquire.lua` (coalesced with others when the
/// client batches), whose holds no watch listens for: a spin lock never subscribes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SpinCall;

impl AcquireCall for SpinCall {
    type Outcome = std::convert::Infallible;

    /// The plain lock's call: the same script, keys and batching.
    fn call(
        &self,
        inner: &Inner,
        keys: &LockKeys,
        field: &str,
        args: &mut Vec<String>,
    ) -> (&'static scripts::Script, Vec<String>) {
        PlainCall.call(inner, keys, field, args)
    }

    fn coalesced(&self) -> Option<Coalescible> {
        PlainCall.coalesced()
    }

    fn watched(&self) -> bool {
        false
    }
}

/// Waits for the lock by polling: an attempt, then while it is held the next sleep of the
/// client's back-off (shortened to the holder's lease when that ends sooner), never past
/// `wait` from now (`None`: no deadline), and an attempt again.
///
/// # Cancel safety
/// Cancel safe: an attempt runs in its own task (a grant that arrives after the caller gave
/// up is released), and nothing else is left behind.
pub(crate) async fn spin(
    inner: &Arc<Inner>,
    keys: Arc<LockKeys>,
    mut fresh: Fresh,
    wait: Option<Duration>,
) -> Result<Option<LockGuard>> {
    let deadline = wait.and_then(|w| Instant::now().checked_add(w));
    let waits = wait != Some(Duration::ZERO);
    fresh.set_wait(waits, deadline);
    // This client's own release in flight: the lock is about to be free (as for the plain
    // lock: `try_lock` right after an unlock finds it free).
    await_local_release(inner, &keys.lock, deadline.filter(|_| waits)).await;
    let mut sleeps = backoff(inner).sleeps();
    let mut warned = false;
    loop {
        let sleep = match attempt(inner, &keys, &fresh, SpinCall).await {
            Ok(Attempt::Acquired(g)) => return Ok(Some(g)),
            Ok(Attempt::Held(pttl)) => {
                fresh.succeeded();
                fresh.refused("held");
                let next = sleeps.next_sleep();
                // A holder whose lease ends sooner frees the lock then: look at that time.
                if pttl > 0 {
                    next.min(Duration::from_millis(pttl as u64 + 1))
                } else {
                    next
                }
            }
            Ok(Attempt::Kind(none)) => match none {},
            Err(e) => {
                fresh.after_error(inner, e).await?;
                continue;
            }
        };
        if !waits {
            return Ok(None);
        }
        reentry::warn_if_waiting_on_own_task(&inner.shared().holds, &keys.lock, &mut warned);
        // Nothing wakes a spin waiter but its own timer: it sleeps its whole back-off, whatever
        // the client's subscriber is doing.
        if !inner.park_polling(sleep, deadline).await? {
            return Ok(None);
        }
    }
}
