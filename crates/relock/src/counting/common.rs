//! The shared parts of the counting kinds ([`Semaphore`](crate::Semaphore),
//! [`PermitSemaphore`](crate::PermitSemaphore) and [`CountDownLatch`](crate::CountDownLatch)):
//! count arguments and replies, and their wait.
//!
//! Their waits have no lease to bound a sleep (a lock's waiter sleeps until the holder's lease
//! ends), so a waiter subscribes before its next check, and parks until a message or a
//! backing-off re-check period ([`Recheck`]): a message that never arrives (pub/sub is
//! at-most-once) delays it by at most [`RECHECK_MAX`] plus a round trip.

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use fred::interfaces::KeysInterface;

use fred::types::FromValue;
use tokio::time::Instant;

use crate::client::handle::Inner;
use crate::client::scripts::Script;
use crate::counting::channel::pass_on;
use crate::error::{Error, Result};
use crate::hold::wake::Format;

/// The most permits one call may take, release or set, and the most a semaphore may hold:
/// the scripts compare counts as Lua numbers, which are exact only up to 2^53.
pub(crate) const MAX_COUNT: u64 = 1_000_000_000_000_000;

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
/// each is retried after the waiter's next bounded sleep, until the run has lasted one command
/// timeout; then the error is returned. Other errors are returned at once. A deadline that
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
        if since.elapsed() >= inner.settings.command_timeout {
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

/// A script reply of a shape the script never sends (a protocol error).
pub(crate) fn unexpected(operation: &'static str, inner: &Inner, reply: &[i64]) -> Error {
    Error::Redis {
        operation,
        server: inner.server(),
        source: fred::error::Error::new(
            fred::error::ErrorKind::Protocol,
            format!("unexpected {operation} reply {reply:?}"),
        ),
    }
}

/// Rejects a permit or count argument of 0 or above [`MAX_COUNT`].
pub(crate) fn validate_count(name: &'static str, n: u64, what: &str) -> Result<()> {
    if n == 0 {
        return Err(Error::invalid(
            name,
            format!("0 {what} changes nothing; pass at least 1"),
        ));
    }
    if n > MAX_COUNT {
        return Err(Error::invalid(
            name,
            format!("{n} {what} is more than the 10^15 supported (counts must stay exact as Lua numbers); pass at most 1000000000000000"),
        ));
    }
    Ok(())
}

/// Parses a count read with GET: missing = 0, negative = 0; not an integer → `WrongType`.
pub(crate) fn parse_count(value: Option<String>, key: &str) -> Result<u64> {
    match value {
        None => Ok(0),
        Some(v) => v
            .parse::<i64>()
            .map(|n| n.max(0) as u64)
            .map_err(|_| Error::WrongType {
                key: key.to_string(),
            }),
    }
}

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
        let s = &inner.settings;
        // A key is deleted as soon as a reply shows that no copy of its call is on its way;
        // only a call that got no reply keeps it for its TTL. A copy of that call may still
        // be in the network: TCP goes on retransmitting bytes written before a close for up
        // to about 15 minutes (Linux's default `tcp_retries2`), so the key outlives that.
        let ttl = ((s.command_timeout + s.connect_timeout) * 2).max(REQUEST_TTL);
        Request {
            key: format!(
                "{}:{}",
                crate::hold::keys::prefixed("relock_request", count_key),
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
        let (pool, key) = (inner.pool.clone(), self.key.clone());
        inner.shared.tracker.spawn(async move {
            let _: std::result::Result<i64, _> = pool.next().del(key).await;
        });
    }
}

/// The least time a request key lives: longer than a copy of its call can take to arrive.
const REQUEST_TTL: Duration = Duration::from_secs(20 * 60);

/// The Redis names of one semaphore or latch: the string holding the count (the kind's name
/// itself) and the channel its changes are published on.
#[derive(Debug)]
pub(crate) struct Names {
    pub(crate) key: String,
    pub(crate) channel: String,
}

impl Names {
    /// Runs `script` with KEYS `[key, more…]` and ARGV `args` followed by the publish command
    /// (`publish`, or `spublish` on a Cluster). With `once` (a call that must take effect
    /// once), KEYS also gets a [`Request`] key, and ARGV its lifetime. The channel comes last
    /// in ARGV: never a key, so that an ACL user needs a channel grant for it, not a key grant.
    pub(crate) async fn run_publishing<R: FromValue>(
        &self,
        inner: &Inner,
        call: (&Script, &'static str),
        more: &[&str],
        args: Vec<String>,
        once: bool,
    ) -> Result<R> {
        let request = once.then(|| Request::new(inner, &self.key));
        self.run_publishing_as(inner, call, more, args, request.as_ref())
            .await
    }

    /// [`run_publishing`](Self::run_publishing) under a request the caller made (and may send
    /// again itself: a copy under the same request takes effect once).
    pub(crate) async fn run_publishing_as<R: FromValue>(
        &self,
        inner: &Inner,
        (script, operation): (&Script, &'static str),
        more: &[&str],
        mut args: Vec<String>,
        request: Option<&Request>,
    ) -> Result<R> {
        args.push(inner.publish_cmd().into());
        let mut keys = vec![self.key.clone()];
        keys.extend(more.iter().map(|k| k.to_string()));
        if let Some(r) = request {
            keys.push(r.key.clone());
            args.push(r.ttl_ms.clone());
        }
        args.push(self.channel.clone());
        let once = || async {
            script
                .run(inner.pool.next(), keys.clone(), args.clone())
                .await
                .map_err(|e| inner.error(operation, &self.key, e))
        };
        // A call with a request id is sent again after a transient error (a connection cut
        // off, a command not routed during a reconnect, no answer in time): whichever copies
        // run, it takes effect once. Without this a release failed on a blip, and its caller
        // could not tell whether the permit was given back.
        match request {
            Some(request) => request.send(inner, once).await,
            None => once().await,
        }
    }

    /// The count (`GET`): missing = 0, negative = 0; not an integer is `WrongType`.
    /// The count (`GET`), read again after a transient error (see [`retrying`]).
    pub(crate) async fn read(&self, inner: &Inner) -> Result<u64> {
        let value: Option<String> = retrying(inner, || async {
            inner
                .pool
                .next()
                .get(self.key.as_str())
                .await
                .map_err(|e| inner.error("get", &self.key, e))
        })
        .await?;
        parse_count(value, &self.key)
    }
}

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
                    && started.elapsed() + pause < inner.settings.command_timeout
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
        let subscribe = inner.pubsub.subscribe(channel, kind);
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

    #[test]
    fn counts_of_zero_or_above_the_limit_are_rejected_naming_the_argument() {
        for bad in [0, MAX_COUNT + 1, u64::MAX] {
            let e = validate_count("n", bad, "permits").unwrap_err();
            assert!(
                matches!(&e, Error::InvalidArgument { name: "n", reason } if reason.contains("pass")),
                "{e}"
            );
        }
        validate_count("n", MAX_COUNT, "permits").unwrap();
        validate_count("n", 1, "permits").unwrap();
    }

    #[test]
    fn counts_read_as_missing_negative_or_not_a_number() {
        assert_eq!(parse_count(None, "k").unwrap(), 0);
        assert_eq!(parse_count(Some("-3".into()), "k").unwrap(), 0);
        assert_eq!(parse_count(Some("7".into()), "k").unwrap(), 7);
        assert!(matches!(
            parse_count(Some("x".into()), "k"),
            Err(Error::WrongType { key }) if key == "k"
        ));
    }
}
