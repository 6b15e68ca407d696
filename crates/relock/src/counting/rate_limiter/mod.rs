//! [`RateLimiter`]: a rate limiter on Redisson's `RRateLimiter` layout, on the server's clock.
//! It publishes nothing and subscribes to nothing: a waiter sleeps for the delay the script
//! returns (the oldest permit record's expiry) and asks again.
//!
//! # Using it
//! - Make a handle with [`Client::rate_limiter`], and give the limiter its rate once:
//!   [`try_set_rate`](RateLimiter::try_set_rate) at every process's start-up (only the first
//!   call sets it), or [`set_rate`](RateLimiter::set_rate) to change it (the limit starts
//!   afresh). [`RateConfig`] carries every setting, the keep-alive included.
//! - Take permits before each call the limit guards: [`try_acquire`](RateLimiter::try_acquire)
//!   never waits, [`try_acquire_for`](RateLimiter::try_acquire_for) waits at most a bound,
//!   [`acquire`](RateLimiter::acquire) as long as it takes. A grant counts against the rate
//!   for one interval after it; nothing is held, and [`release`](RateLimiter::release) gives
//!   permits back early.
//! - [`RateType::Overall`] shares one limit among every client (Java's Redisson clients
//!   included); [`RateType::PerClient`] gives each client the whole rate under keys of its
//!   own.
//! - "Now" is the Redis server's clock, never a client's: skewed or stepped client clocks do
//!   not change the limit ([`guide::safety`](crate::guide::safety) says what a step of the
//!   server's clock or a failover does).
//!
//! # Parts
//! - `config`: [`RateType`] and [`RateConfig`], their checks, and the permit count's.
//! - `calls`: the scripts, the keys (`RateKeys`) and each call with its
//!   reply read into a result or a typed refusal.
//! - `wait`: the wait of `try_acquire_for` and `acquire` (sleep the delay the script returns,
//!   never past a deadline).

pub(crate) mod calls;
pub(crate) mod config;
pub(crate) mod wait;

use std::sync::Arc;
use std::time::Duration;

use crate::client::handle::Client;
use crate::client::inner::Inner;
use crate::counting::rate_limiter::calls::{Calls, RateKeys};
use crate::counting::rate_limiter::config::validate_n;
pub use crate::counting::rate_limiter::config::{RateConfig, RateType};
use crate::counting::rate_limiter::wait::acquire_within;
use crate::error::{Error, Result};
use crate::hold::keys::validate_name;

/// A rate limiter shared by every process on the same Redis, wire-compatible with Redisson's
/// `RRateLimiter`: at most [`rate`](RateConfig::rate) permits are granted in any
/// [`interval`](RateConfig::interval), across every client (or per client), Java and Rust
/// alike.
///
/// A cheap handle (`Clone + Send + Sync`) made by [`Client::rate_limiter`].
/// - **Set the rate first**, with [`try_set_rate`](RateLimiter::try_set_rate) (only if none
///   is set: every process may call it at start-up) or [`set_rate`](RateLimiter::set_rate)
///   (overwrites, and starts the limit afresh). Acquiring before any rate is set is
///   [`Error::RateNotSet`].
/// - **A sliding window per grant.** Each grant is a record scored by the time it was taken,
///   and counts against the rate until `interval` after it: in every window of `interval`,
///   at most `rate` permits are granted. Permits are not held and not given back by a drop;
///   [`release`](RateLimiter::release) gives some back early, as Redisson's.
/// - **The server's clock.** "Now" is the Redis server's `TIME`, read inside the scripts:
///   clients' clocks, and their skew, do not matter. (Redisson's scripts take each Java
///   client's clock instead; [`guide::data_layout`](crate::guide::data_layout) says what
///   mixing them means, [`guide::safety`](crate::guide::safety) what a server clock step or
///   a failover does to the limit.)
/// - **No pub/sub.** A caller that must wait sleeps until the oldest record expires (the
///   delay the script returns) and asks again: it never polls faster.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
/// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
/// use std::time::Duration;
/// use relock::RateType;
/// let client = relock::Client::connect(&url).await?;
/// let limiter = client.rate_limiter("doctest:rate:api");
/// limiter.try_set_rate(RateType::Overall, 2, Duration::from_millis(200)).await?;
///
/// assert!(limiter.try_acquire(1).await?);
/// assert!(limiter.try_acquire(1).await?);
/// assert!(!limiter.try_acquire(1).await?);        // two in this window already
/// limiter.acquire(1).await?;                      // sleeps until the first one expires
/// # limiter.delete().await?;
/// # client.shutdown().await; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RateLimiter {
    inner: Arc<Inner>,
    name: Arc<str>,
    keys: std::result::Result<Arc<RateKeys>, String>,
}

impl Client {
    /// A handle to the rate limiter called `name` (Redisson's `RRateLimiter`, on the same
    /// keys: the config hash `<name>`, `{<name>}:value` and `{<name>}:permits`, and for
    /// [`RateType::PerClient`] `{<name>}:value:<client id>` and
    /// `{<name>}:permits:<client id>`, with this client's [`client_id`](Client::client_id),
    /// plus relock's own `{<name>}:rate:<client id>`: the rate that value was written under).
    /// Cheap; nothing is sent until it is used. A bad name is reported by the first
    /// operation, as [`Error::InvalidArgument`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// use std::time::Duration;
    /// let limiter = client.rate_limiter("doctest:rate:mail");
    /// limiter.try_set_rate(relock::RateType::PerClient, 10, Duration::from_secs(1)).await?;
    /// assert!(limiter.try_acquire(10).await?);
    /// # limiter.delete().await?;
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub fn rate_limiter(&self, name: impl Into<String>) -> RateLimiter {
        let name: String = self.inner.named(name.into());
        let keys = validate_name(&name)
            .map(|()| Arc::new(RateKeys::new(&name, self.client_id())))
            .map_err(|e| match e {
                Error::InvalidArgument { reason, .. } => reason,
                other => other.to_string(),
            });
        RateLimiter {
            inner: self.inner.clone(),
            name: name.into(),
            keys,
        }
    }

    /// The config and the available permits (for [`RateType::Overall`]) of the rate limiter
    /// at `name` (already prefixed); `None` if no limiter's config is there. For
    /// `Client::inspect`.
    pub(crate) async fn read_rate(&self, name: &str) -> Result<Option<(RateConfig, Option<u64>)>> {
        let limiter = RateLimiter {
            inner: self.inner.clone(),
            name: name.into(),
            keys: Ok(Arc::new(RateKeys::new(name, self.client_id()))),
        };
        let Some(config) = limiter.config().await? else {
            return Ok(None);
        };
        let available = match config.rate_type() {
            RateType::Overall => Some(limiter.available_permits().await?),
            RateType::PerClient => None,
        };
        Ok(Some((config, available)))
    }
}

impl RateLimiter {
    /// The limiter's name (also its config hash's key).
    pub fn name(&self) -> &str {
        &self.name
    }

    fn keys(&self) -> Result<Arc<RateKeys>> {
        self.keys
            .clone()
            .map_err(|reason| Error::invalid("name", reason))
    }

    /// The script calls on `keys` (this limiter's).
    fn calls<'a>(&'a self, keys: &'a RateKeys) -> Calls<'a> {
        Calls {
            inner: &self.inner,
            name: &self.name,
            keys,
        }
    }

    /// Sets the rate only if the limiter has none (Redisson's `trySetRate`): `rate` permits
    /// per `interval`, shared as `rate_type` says, without a keep-alive. Returns whether it
    /// was set; a limiter that has a rate keeps it.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `rate` 0 or above 2^32 - 1, an `interval` below 1 ms, or
    /// a bad name; [`Error::WrongType`] if the name holds something else than a limiter's
    /// config (nothing is written); connection errors; [`Error::Shutdown`].
    ///
    /// # Cancel safety
    /// If dropped after the command was sent, the rate may or may not have been set; calling
    /// it again is harmless (it sets only if absent).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// use std::time::Duration;
    /// use relock::RateType;
    /// let limiter = client.rate_limiter("doctest:rate:try_set");
    /// assert!(limiter.try_set_rate(RateType::Overall, 5, Duration::from_secs(1)).await?);
    /// assert!(!limiter.try_set_rate(RateType::Overall, 9, Duration::from_secs(1)).await?);
    /// assert_eq!(limiter.config().await?.map(|c| c.rate()), Some(5));
    /// # limiter.delete().await?;
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub async fn try_set_rate(
        &self,
        rate_type: RateType,
        rate: u64,
        interval: Duration,
    ) -> Result<bool> {
        self.try_set(RateConfig::new(rate_type, rate, interval))
            .await
    }

    /// [`try_set_rate`](RateLimiter::try_set_rate) with every setting, the keep-alive
    /// included.
    ///
    /// # Errors
    /// As [`try_set_rate`](RateLimiter::try_set_rate); also [`Error::InvalidArgument`] for a
    /// keep-alive shorter than the interval.
    ///
    /// # Cancel safety
    /// As [`try_set_rate`](RateLimiter::try_set_rate).
    pub async fn try_set(&self, config: RateConfig) -> Result<bool> {
        self.inner.check_running()?;
        let keys = self.keys()?;
        self.calls(&keys).try_set(config).await
    }

    /// Sets the rate whatever the limiter had (Redisson's `setRate`), and starts the limit
    /// afresh: the permit records of the new type are deleted, so up to `rate` permits can be
    /// taken at once again.
    ///
    /// # Errors
    /// As [`try_set_rate`](RateLimiter::try_set_rate); [`Error::WrongType`] also for a value
    /// or records key that holds something else.
    ///
    /// # Cancel safety
    /// If dropped after the command was sent, the rate may or may not have been set; calling
    /// it again sets it (and starts the limit afresh once more).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// use std::time::Duration;
    /// use relock::RateType;
    /// let limiter = client.rate_limiter("doctest:rate:set");
    /// limiter.set_rate(RateType::Overall, 1, Duration::from_secs(60)).await?;
    /// assert!(limiter.try_acquire(1).await?);
    /// limiter.set_rate(RateType::Overall, 2, Duration::from_secs(60)).await?;
    /// assert_eq!(limiter.available_permits().await?, 2); // afresh
    /// # limiter.delete().await?;
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub async fn set_rate(&self, rate_type: RateType, rate: u64, interval: Duration) -> Result<()> {
        self.set(RateConfig::new(rate_type, rate, interval)).await
    }

    /// [`set_rate`](RateLimiter::set_rate) with every setting, the keep-alive included.
    ///
    /// # Errors
    /// As [`set_rate`](RateLimiter::set_rate); also [`Error::InvalidArgument`] for a
    /// keep-alive shorter than the interval.
    ///
    /// # Cancel safety
    /// As [`set_rate`](RateLimiter::set_rate).
    pub async fn set(&self, config: RateConfig) -> Result<()> {
        self.inner.check_running()?;
        let keys = self.keys()?;
        self.calls(&keys).set(config).await
    }

    /// Takes `n` permits if the limit allows it now; never waits. Returns whether they were
    /// taken.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `n` = 0, `n` above the rate (Redisson's "Requested
    /// permits amount cannot exceed defined rate"; nothing is taken) or a bad name;
    /// [`Error::RateNotSet`] if the limiter has no rate; [`Error::WrongType`] if its config,
    /// or one of the keys of its type's state, holds something else (nothing is written); connection errors and
    /// [`Error::Timeout`] (the permits may have been taken: see *Cancel safety*);
    /// [`Error::Shutdown`].
    ///
    /// # Cancel safety
    /// Permits are not held, so there is nothing to give back: if the future is dropped
    /// after the script was sent, or its reply is lost, the permits may have been taken and
    /// count against the rate until their interval ends (the limiter errs on the side of
    /// fewer grants). Nothing else is left behind.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let limiter = client.rate_limiter("doctest:rate:try_acquire");
    /// # limiter.try_set_rate(relock::RateType::Overall, 1, std::time::Duration::from_secs(60)).await?;
    /// if limiter.try_acquire(1).await? {
    ///     // ... call the API ...
    /// } else {
    ///     eprintln!("over the limit: try later");
    /// }
    /// # assert!(!limiter.try_acquire(1).await?);
    /// # limiter.delete().await?;
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub async fn try_acquire(&self, n: u64) -> Result<bool> {
        self.acquire_within(n, Some(Duration::ZERO)).await
    }

    /// Takes `n` permits, waiting at most `wait` for the limit to allow them. It sleeps for
    /// the delay the server returns (until the oldest permit record expires), never past
    /// `wait`: the last sleep is cut to the deadline and one last attempt made there. Returns
    /// whether they were taken. A transient error (a connection reset, a timeout) is retried
    /// after a short sleep within `wait`, for up to one command timeout after the first
    /// error. An attempt is not cut at the deadline: one sent just before it, to a server that
    /// does not answer, returns its [`Error::Timeout`] up to one command timeout after `wait`
    /// (bound the whole call with `tokio::time::timeout` where that matters; the attempt may
    /// still take its permits, as below).
    ///
    /// # Errors
    /// As [`try_acquire`](RateLimiter::try_acquire); a transient error only once its retries
    /// have gone on for a command timeout after the first error of a run (an attempt that
    /// timed out is retried: the retry may go out on another connection), or when the
    /// deadline passes while they go on.
    ///
    /// # Cancel safety
    /// As [`try_acquire`](RateLimiter::try_acquire): a wait changes nothing on the server. An
    /// attempt whose reply was lost (then retried) may have taken its permits: they count
    /// against the rate until their interval ends, besides those the retry takes (the limiter
    /// errs on the side of fewer grants).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// use std::time::Duration;
    /// # let limiter = client.rate_limiter("doctest:rate:try_acquire_for");
    /// # limiter.try_set_rate(relock::RateType::Overall, 1, Duration::from_millis(100)).await?;
    /// # assert!(limiter.try_acquire(1).await?);
    /// if !limiter.try_acquire_for(1, Duration::from_secs(1)).await? {
    ///     eprintln!("still over the limit after a second");
    /// }
    /// # assert!(!limiter.try_acquire_for(1, Duration::from_millis(10)).await?);
    /// # limiter.delete().await?;
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub async fn try_acquire_for(&self, n: u64, wait: Duration) -> Result<bool> {
        self.acquire_within(n, Some(wait)).await
    }

    /// Takes `n` permits, waiting as long as it takes: it sleeps for the delay the server
    /// returns (until the oldest permit record expires) and asks again, never more often.
    /// Only [`Client::shutdown`] ends the wait early ([`Error::Shutdown`]); a transient error
    /// (a connection reset, a timeout) is retried after a short sleep, for up to one command
    /// timeout after the first error.
    ///
    /// # Errors
    /// As [`try_acquire`](RateLimiter::try_acquire); a transient error only once its retries
    /// have gone on for a command timeout after the first error of a run: on a server that
    /// answers nothing, after two attempts' timeouts.
    ///
    /// # Cancel safety
    /// As [`try_acquire_for`](RateLimiter::try_acquire_for).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let limiter = client.rate_limiter("doctest:rate:acquire");
    /// # limiter.try_set_rate(relock::RateType::Overall, 10, std::time::Duration::from_millis(100)).await?;
    /// for page in 0..12 {
    ///     limiter.acquire(1).await?; // at most 10 pages per 100 ms
    ///     // ... fetch `page` ...
    /// }
    /// # limiter.delete().await?;
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub async fn acquire(&self, n: u64) -> Result<()> {
        let taken = self.acquire_within(n, None).await?;
        debug_assert!(
            taken,
            "an acquire without a deadline returns once it took them"
        );
        Ok(())
    }

    /// Takes `n` permits, waiting at most `wait` (`None`: as long as it takes) by sleeping
    /// the script's delays; no subscription, no message.
    async fn acquire_within(&self, n: u64, wait: Option<Duration>) -> Result<bool> {
        self.inner.check_running()?;
        let keys = self.keys()?;
        validate_n(n)?;
        acquire_within(self.calls(&keys), n, wait).await
    }

    /// Gives `n` permits back before their records expire (Redisson's `release`): the oldest
    /// records still counting (those whose interval ended count no more) lose `n` permits
    /// between them, and the permits available grow by `n`, at most
    /// to the rate. Any handle may release, whoever took the permits.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `n` = 0 or a bad name; [`Error::RateNotSet`];
    /// [`Error::WrongType`]; connection errors; [`Error::Shutdown`].
    ///
    /// One call gives back once: it is sent again after a transient error, and may be resent
    /// by a pool after a reconnect, under a request id of its own, and a copy that finds the
    /// call done gives nothing back.
    ///
    /// # Cancel safety
    /// If dropped after the command was sent, the permits may or may not have been given
    /// back; releasing again (a new call) may give back twice as many (at most to the rate).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let limiter = client.rate_limiter("doctest:rate:release");
    /// # limiter.try_set_rate(relock::RateType::Overall, 1, std::time::Duration::from_secs(60)).await?;
    /// assert!(limiter.try_acquire(1).await?);
    /// // the call it was for did not happen after all:
    /// limiter.release(1).await?;
    /// assert!(limiter.try_acquire(1).await?);
    /// # limiter.delete().await?;
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub async fn release(&self, n: u64) -> Result<()> {
        self.inner.check_running()?;
        let keys = self.keys()?;
        validate_n(n)?;
        self.calls(&keys).release(n).await
    }

    /// The permits that could be taken now (Redisson's `availablePermits`): the rate less the
    /// permits granted in the last interval, on the server's clock. For
    /// [`RateType::PerClient`], this client's. Read only (Redisson's writes the expired
    /// records' permits back; the next acquire does that here).
    ///
    /// # Errors
    /// [`Error::RateNotSet`]; [`Error::WrongType`]; a bad name; connection errors.
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let limiter = client.rate_limiter("doctest:rate:available");
    /// # limiter.try_set_rate(relock::RateType::Overall, 3, std::time::Duration::from_secs(60)).await?;
    /// # limiter.try_acquire(1).await?;
    /// println!("{} calls left in this window", limiter.available_permits().await?);
    /// # assert_eq!(limiter.available_permits().await?, 2);
    /// # limiter.delete().await?;
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub async fn available_permits(&self) -> Result<u64> {
        let keys = self.keys()?;
        self.calls(&keys).available().await
    }

    /// The limiter's settings (Redisson's `getConfig`), `None` if it has no rate.
    ///
    /// # Errors
    /// [`Error::WrongType`] if the name holds something else; a bad name; connection errors.
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// use std::time::Duration;
    /// use relock::{RateConfig, RateType};
    /// let limiter = client.rate_limiter("doctest:rate:config");
    /// assert_eq!(limiter.config().await?, None);
    /// let config = RateConfig::new(RateType::Overall, 5, Duration::from_secs(1))
    ///     .with_keep_alive(Duration::from_secs(60));
    /// limiter.try_set(config).await?;
    /// assert_eq!(limiter.config().await?, Some(config));
    /// # limiter.delete().await?;
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub async fn config(&self) -> Result<Option<RateConfig>> {
        let keys = self.keys()?;
        self.calls(&keys).config().await
    }

    /// Deletes the limiter: its config and the state of both types, this client's per-client
    /// keys included (Redisson's `delete`; other clients' per-client keys stay until their
    /// keep-alive ends). Returns whether there was anything to delete. A limiter then has no
    /// rate. Unlike Redisson's, it deletes nothing if one of the keys holds something a
    /// limiter never keeps there (another kind's lock of the same name, say).
    ///
    /// # Errors
    /// [`Error::WrongType`] if one of the keys holds something else (nothing is deleted); a
    /// bad name; connection errors; [`Error::Shutdown`].
    ///
    /// # Cancel safety
    /// If dropped after the command was sent, the limiter may or may not have been deleted;
    /// calling it again is harmless.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let limiter = client.rate_limiter("doctest:rate:delete");
    /// # limiter.try_set_rate(relock::RateType::Overall, 1, std::time::Duration::from_secs(1)).await?;
    /// assert!(limiter.delete().await?);
    /// assert_eq!(limiter.config().await?, None);
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub async fn delete(&self) -> Result<bool> {
        self.inner.check_running()?;
        let keys = self.keys()?;
        self.calls(&keys).delete().await
    }
}
