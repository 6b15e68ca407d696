//! The counting kinds' one wait. Their waits have no lease to bound a sleep (a lock's waiter
//! sleeps until the holder's lease ends), so a waiter subscribes before its next check, and
//! parks until a message or a backing-off re-check period ([`Recheck`]): a message that never
//! arrives (pub/sub is at-most-once) delays it by at most [`RECHECK_MAX`] plus a round trip.

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use tokio::time::Instant;

use crate::client::inner::Inner;
use crate::counting::channel::pass_on;
use crate::error::{Error, Result};
use crate::hold::wake::Format;

/// The first re-check period of a parked waiter on a semaphore or a latch.
pub(crate) const RECHECK_FIRST: Duration = Duration::from_millis(50);
/// The longest re-check period of a parked waiter on a semaphore or a latch: a message that
/// never arrives (pub/sub is at-most-once) delays a waiter by at most this plus a round trip.
pub(crate) const RECHECK_MAX: Duration = Duration::from_secs(1);

/// How long a waiter on a synchronizer without a TTL may sleep before it looks again: 50 ms,
/// doubling after each sleep that no message ended, up to 1 s. (A lock's waiter sleeps until
/// the holder's lease ends instead; a semaphore or a latch has no lease to bound the sleep.)
#[derive(Debug)]
pub(crate) struct Recheck(Duration);

impl Recheck {
    pub(crate) fn new() -> Self {
        Recheck(RECHECK_FIRST)
    }

    /// The next sleep.
    pub(crate) fn period(&self) -> Duration {
        self.0
    }

    /// After a sleep: a timer that ran out doubles the period (up to [`RECHECK_MAX`]); a
    /// wake-up by a message leaves it.
    pub(crate) fn after(&mut self, woken: bool) {
        if !woken {
            self.0 = (self.0 * 2).min(RECHECK_MAX);
        }
    }
}

/// A waiter's run of consecutive transient errors (a connection blip, a failover, a timeout):
/// each is retried after the waiter's next bounded sleep, until one command timeout has passed
/// since the run's first error arrived (so an attempt that timed out gets one retry, which may
/// go out on another connection); then the error is returned. Other errors are returned at once. A deadline that
/// passes during a run returns its last error, not "not acquired".
#[derive(Debug, Default)]
pub(crate) struct Transient {
    since: Option<Instant>,
    last: Option<Error>,
}

impl Transient {
    /// `Ok` to retry after the next sleep, or the error to return.
    pub(crate) fn after(&mut self, inner: &Inner, e: Error) -> Result<()> {
        if !e.is_transient() {
            return Err(e);
        }
        let since = *self.since.get_or_insert_with(Instant::now);
        if since.elapsed() >= inner.settings().command_timeout {
            return Err(e);
        }
        tracing::debug!(error = %e, "a waiter's call failed; retrying after its next sleep");
        self.last = Some(e);
        Ok(())
    }

    /// A call succeeded: the run is over.
    pub(crate) fn ok(&mut self) {
        self.since = None;
        self.last = None;
    }

    /// The deadline passed: `Ok(false)`, or the error of a run still going on.
    pub(crate) fn timed_out(self) -> Result<bool> {
        match self.last {
            Some(e) => Err(e),
            None => Ok(false),
        }
    }
}

/// What one check of a wait found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// The wait is over (permits taken, latch open).
    Done,
    /// Not yet: sleep until a message or the re-check period.
    NotYet,
    /// Not yet, and the message that woke us is likely for another local waiter (a semaphore
    /// waiter woken for permits too few for it): pass the wake-up on, then sleep.
    PassOn,
    /// Not yet, but something frees by itself within this long, without a message (a permit
    /// whose lease ends): sleep no longer than that, nor than the re-check period.
    Within(Duration),
}

/// Waits until `check` says [`Check::Done`] (`Ok(true)`), or `wait` has passed (`Ok(false)`;
/// `None`: no deadline). `check(woken)` is told whether a message woke this round.
///
/// One check first; if it is not done, subscribe to `channel` (as `kind`), then loop: arm the
/// wake-up, check again, park (for the re-check period, or less if the check said
/// [`Check::Within`]). Transient errors are retried after the next sleep for up to
/// one command timeout ([`Transient`]).
///
/// # Cancel safety
/// Cancel safe if `check` is: the subscription is dropped with the future.
pub(crate) async fn wait_until<Fut>(
    inner: &Inner,
    channel: &str,
    kind: Format,
    wait: Option<Duration>,
    mut check: impl FnMut(bool) -> Fut,
) -> Result<bool>
where
    Fut: Future<Output = Result<Check>>,
{
    let deadline = wait.and_then(|w| Instant::now().checked_add(w));
    let mut errors = Transient::default();
    match check(false).await {
        Ok(Check::Done) => return Ok(true),
        Ok(_) => {}
        Err(e) if wait == Some(Duration::ZERO) => return Err(e),
        Err(e) => errors.after(inner, e)?,
    }
    if wait == Some(Duration::ZERO) || deadline.is_some_and(|d| Instant::now() >= d) {
        return errors.timed_out();
    }
    // Subscribe before checking again: a message between our check and our sleep still
    // wakes us (Redisson #1763).
    // A subscription cut off with its connection is a transient error like any other.
    let sub = loop {
        let subscribe = inner.pubsub().subscribe(channel, kind);
        let r = match deadline {
            Some(d) => match tokio::time::timeout_at(d, subscribe).await {
                Ok(r) => r,
                Err(_) => return errors.timed_out(),
            },
            None => subscribe.await,
        };
        match r.map_err(|e| inner.error("subscribe", channel, e)) {
            Ok(sub) => break sub,
            Err(e) => {
                errors.after(inner, e)?;
                let pause = Duration::from_millis(20);
                if deadline.is_some_and(|d| Instant::now() + pause >= d) {
                    return errors.timed_out();
                }
                tokio::time::sleep(pause).await;
            }
        }
    };
    let mut recheck = Recheck::new();
    let mut woken_by_message = false;
    let mut passed = 0;
    loop {
        // Registered before the check: a message published while it runs wakes us.
        let mut woken = pin!(sub.notified());
        woken.as_mut().enable();
        let mut sleep = recheck.period();
        match check(std::mem::take(&mut woken_by_message)).await {
            Ok(Check::Done) => return Ok(true),
            Ok(Check::NotYet) => errors.ok(),
            Ok(Check::PassOn) => {
                errors.ok();
                pass_on(&sub, &mut passed);
            }
            Ok(Check::Within(frees)) => {
                errors.ok();
                sleep = sleep.min(frees);
            }
            Err(e) => errors.after(inner, e)?,
        }
        match inner.park(sleep, deadline, woken).await? {
            None => return errors.timed_out(),
            Some(woken) => {
                recheck.after(woken);
                woken_by_message = woken;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recheck_period_backs_off_to_a_second_and_a_message_keeps_it() {
        let mut r = Recheck::new();
        let mut seen = vec![r.period()];
        for _ in 0..6 {
            r.after(false);
            seen.push(r.period());
        }
        let ms: Vec<u128> = seen.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [50, 100, 200, 400, 800, 1000, 1000]);
        r.after(true);
        assert_eq!(r.period(), RECHECK_MAX);
    }
}
