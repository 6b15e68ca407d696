//! [`RateLimiter`]: a rate limiter on Redisson's `RRateLimiter` layout, on the server's clock.
//! It publishes nothing and subscribes to nothing: a waiter sleeps for the delay the script
//! returns (the oldest permit record's expiry) and asks again.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::client::handle::Client;
use crate::client::inner::Inner;
use crate::client::scripts::{self, Script};
use crate::counting::counts::{unexpected, MAX_COUNT};
use crate::error::{Error, Result};
use crate::hold::keys::{suffixed, validate_name};

scripts::scripts! {
    /// Rate limiter: set the rate if the limiter has none (Redisson's `trySetRate`).
    RATE_TRY_SET = writes "rate_try_set.lua" ["rate"];
    /// Rate limiter: set the rate, starting the limit afresh (Redisson's `setRate`).
    RATE_SET = writes "rate_set.lua" ["rate"];
    /// Rate limiter: take permits, or say when the oldest record expires (`tryAcquire`).
    RATE_ACQUIRE = writes "rate_acquire.lua" ["rate"];
    /// Rate limiter: give permits back before their records expire (`release`).
    RATE_RELEASE = writes "rate_release.lua" ["rate"];
    /// Rate limiter: the permits available now (`availablePermits`), read only.
    RATE_AVAILABLE = read_only "rate_available.lua" ["rate"];
    /// Rate limiter: its config (`getConfig`), read only.
    RATE_CONFIG = read_only "rate_config.lua" ["rate"];
    /// Rate limiter: delete its config and state (`delete`).
    RATE_DELETE = writes "rate_delete.lua" [];
}

/// Whom a [`RateLimiter`]'s rate is shared by (Redisson's `RateType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RateType {
    /// One limit for every client (Redisson's `OVERALL`, stored as `0`).
    Overall,
    /// A limit of its own for each client, keyed by [`Client::client_id`] (Redisson's
    /// `PER_CLIENT`, stored as `1`, keyed by a Redisson instance's id).
    PerClient,
}

impl RateType {
    /// Redisson's ordinal, as its config hash stores it.
    fn ordinal(self) -> u8 {
        match self {
            RateType::Overall => 0,
            RateType::PerClient => 1,
        }
    }
}

/// A rate limiter's settings: at most [`rate`](RateConfig::rate) permits in any
/// [`interval`](RateConfig::interval), for everyone or per client, and how long the
/// limiter's keys live unused ([`keep_alive`](RateConfig::keep_alive)).
///
/// ```
/// use std::time::Duration;
/// use relock::{RateConfig, RateType};
/// let config = RateConfig::new(RateType::Overall, 100, Duration::from_secs(1))
///     .with_keep_alive(Duration::from_secs(3600));
/// assert_eq!(config.keep_alive(), Some(Duration::from_secs(3600)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateConfig {
    rate_type: RateType,
    rate: u64,
    interval: Duration,
    keep_alive: Option<Duration>,
}

impl RateConfig {
    /// `rate` permits per `interval` (whole milliseconds: Redisson's unit), shared as
    /// `rate_type` says, without a keep-alive. Checked when it is sent.
    pub fn new(rate_type: RateType, rate: u64, interval: Duration) -> Self {
        RateConfig {
            rate_type,
            rate,
            interval,
            keep_alive: None,
        }
    }

    /// With a keep-alive (Redisson's `keepAliveTime`): setting the rate gives the config this
    /// time to live, and every acquire and release sets it again on the config, the value and
    /// the records, so a limiter unused for this long disappears. It must be at least the
    /// interval. `Duration::ZERO` means none (the keys live until deleted).
    pub fn with_keep_alive(mut self, keep_alive: Duration) -> Self {
        self.keep_alive = (!keep_alive.is_zero()).then_some(keep_alive);
        self
    }

    /// Whom the rate is shared by.
    pub fn rate_type(&self) -> RateType {
        self.rate_type
    }

    /// The most permits granted in any interval.
    pub fn rate(&self) -> u64 {
        self.rate
    }

    /// The interval (a sliding window: each grant counts for this long after it).
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// The keep-alive, if any.
    pub fn keep_alive(&self) -> Option<Duration> {
        self.keep_alive
    }

    /// The script's arguments (rate, interval ms, type, keep-alive ms), or the argument that
    /// is refused.
    fn args(&self) -> Result<Vec<String>> {
        if self.rate == 0 {
            return Err(Error::invalid(
                "rate",
                "a rate of 0 permits per interval grants nothing; pass at least 1",
            ));
        }
        if self.rate > u64::from(u32::MAX) {
            return Err(Error::invalid(
                "rate",
                format!(
                    "{} permits per interval is more than a permit record can count (Redisson \
                     stores a grant's permits in 4 bytes); pass at most {}",
                    self.rate,
                    u32::MAX
                ),
            ));
        }
        let interval = self.interval.as_millis();
        if interval == 0 {
            return Err(Error::invalid(
                "interval",
                format!(
                    "{:?} is below 1 ms, the limiter's unit (Redisson's too); pass at least 1 ms",
                    self.interval
                ),
            ));
        }
        if interval > u128::from(MAX_COUNT) {
            return Err(Error::invalid(
                "interval",
                format!(
                    "{:?} is more than the 10^15 ms the scripts count exactly",
                    self.interval
                ),
            ));
        }
        let keep_alive = self.keep_alive.map_or(0, |k| k.as_millis());
        if self.keep_alive.is_some() && keep_alive < interval {
            return Err(Error::invalid(
                "keep_alive",
                format!(
                    "{:?} is shorter than the interval {:?}: the limiter's records would expire \
                     before their window ends; pass at least the interval (or none)",
                    self.keep_alive.unwrap_or_default(),
                    self.interval
                ),
            ));
        }
        if keep_alive > u128::from(MAX_COUNT) {
            return Err(Error::invalid(
                "keep_alive",
                "more than the 10^15 ms the scripts count exactly",
            ));
        }
        Ok(vec![
            self.rate.to_string(),
            interval.to_string(),
            self.rate_type.ordinal().to_string(),
            keep_alive.to_string(),
        ])
    }
}

/// The five keys of Redisson's rate-limiter scripts, in their order.
#[derive(Debug)]
pub(crate) struct RateKeys {
    /// The config hash, the name itself.
    pub(crate) config: String,
    keys: [String; 5],
}

impl RateKeys {
    /// `name`'s keys (name already prefixed), with `client_id`'s own for `PerClient`: the
    /// config hash `name`, `{name}:value`, `{name}:value:<client>`, `{name}:permits`,
    /// `{name}:permits:<client>` (Redisson's `suffixName`: a name with its own `{tag}` keeps
    /// it, so every key is in the name's cluster slot).
    pub(crate) fn new(name: &str, client_id: &str) -> Self {
        let value = suffixed(name, "value");
        let permits = suffixed(name, "permits");
        let client_value = format!("{value}:{client_id}");
        let client_permits = format!("{permits}:{client_id}");
        RateKeys {
            config: name.to_string(),
            keys: [
                name.to_string(),
                value,
                client_value,
                permits,
                client_permits,
            ],
        }
    }

    fn all(&self) -> Vec<String> {
        self.keys.to_vec()
    }
}

/// What one acquire script call found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grant {
    /// Taken.
    Taken,
    /// Not enough permits: the oldest record expires within this long.
    Wait(Duration),
}

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
    /// `{<name>}:permits:<client id>`, with this client's [`client_id`](Client::client_id)).
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

/// Rejects a permit count of 0 or above what a permit record holds.
fn validate_n(n: u64) -> Result<()> {
    if n == 0 {
        return Err(Error::invalid(
            "n",
            "0 permits takes or gives back nothing; pass at least 1",
        ));
    }
    if n > u64::from(u32::MAX) {
        return Err(Error::invalid(
            "n",
            format!(
                "{n} permits is more than a permit record can count (4 bytes, Redisson's \
                 encoding), and more than any rate; pass at most the rate"
            ),
        ));
    }
    Ok(())
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

    /// Runs `script` on the limiter's keys (all five, or the config's alone).
    async fn run(
        &self,
        (script, operation): (&Script, &'static str),
        keys: &RateKeys,
        config_only: bool,
        args: Vec<String>,
    ) -> Result<Vec<i64>> {
        let names = if config_only {
            vec![keys.config.clone()]
        } else {
            keys.all()
        };
        let reply = if script.lua.starts_with("#!lua flags=no-writes") {
            script.run_read_only(self.inner.conn(), names, args).await
        } else {
            script.run(self.inner.conn(), names, args).await
        };
        reply.map_err(|e| self.inner.error(operation, &keys.config, e))
    }

    /// The typed error of a refusal reply (`{-1}`, `{-2, rate}`, `{-3, key}`), else a
    /// protocol error naming the reply.
    fn refused(&self, operation: &'static str, keys: &RateKeys, n: u64, reply: &[i64]) -> Error {
        match *reply {
            [-1, ..] => Error::RateNotSet {
                name: self.name.to_string(),
            },
            [-2, rate] => Error::invalid(
                "n",
                format!(
                    "{n} permits requested, but the rate is {rate}: requested permits amount \
                     cannot exceed defined rate"
                ),
            ),
            [-3, i] if (1..=5).contains(&i) => Error::WrongType {
                key: keys.keys[i as usize - 1].clone(),
            },
            _ => unexpected(operation, &self.inner, reply),
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
        let args = config.args()?;
        let reply = self
            .run((&RATE_TRY_SET, "rate try set"), &keys, true, args)
            .await?;
        match *reply {
            [set @ (0 | 1)] => Ok(set == 1),
            _ => Err(self.refused("rate try set", &keys, 0, &reply)),
        }
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
        let args = config.args()?;
        let reply = self
            .run((&RATE_SET, "rate set"), &keys, false, args)
            .await?;
        match *reply {
            [1] => Ok(()),
            _ => Err(self.refused("rate set", &keys, 0, &reply)),
        }
    }

    /// Takes `n` permits if the limit allows it now; never waits. Returns whether they were
    /// taken.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `n` = 0, `n` above the rate (Redisson's "Requested
    /// permits amount cannot exceed defined rate"; nothing is taken) or a bad name;
    /// [`Error::RateNotSet`] if the limiter has no rate; [`Error::WrongType`] if one of its
    /// keys holds something else (nothing is written); connection errors and
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
    /// whether they were taken.
    ///
    /// # Errors
    /// As [`try_acquire`](RateLimiter::try_acquire).
    ///
    /// # Cancel safety
    /// As [`try_acquire`](RateLimiter::try_acquire): a wait changes nothing on the server.
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
    /// Only [`Client::shutdown`] ends the wait early ([`Error::Shutdown`]).
    ///
    /// # Errors
    /// As [`try_acquire`](RateLimiter::try_acquire).
    ///
    /// # Cancel safety
    /// As [`try_acquire`](RateLimiter::try_acquire).
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
        let deadline = wait.and_then(|w| Instant::now().checked_add(w));
        loop {
            let delay = match self.attempt(&keys, n).await? {
                Grant::Taken => return Ok(true),
                Grant::Wait(delay) => delay,
            };
            if wait == Some(Duration::ZERO) {
                return Ok(false);
            }
            // Nothing wakes a waiter but its own timer (and shutdown).
            let never = std::future::pending::<()>();
            if self.inner.park(delay, deadline, never).await?.is_none() {
                return Ok(false);
            }
        }
    }

    /// One acquire script call.
    async fn attempt(&self, keys: &RateKeys, n: u64) -> Result<Grant> {
        self.inner.check_running()?;
        // The record's id: 16 random bytes, as Redisson's, sent as hex (the script decodes
        // them) so that the record's bytes are Redisson's.
        let id = uuid::Uuid::new_v4().simple().to_string();
        let reply = self
            .run(
                (&RATE_ACQUIRE, "rate acquire"),
                keys,
                false,
                vec![n.to_string(), id],
            )
            .await?;
        match *reply {
            [1, _now] => Ok(Grant::Taken),
            [0, delay] => Ok(Grant::Wait(Duration::from_millis(delay.max(1) as u64))),
            _ => Err(self.refused("rate acquire", keys, n, &reply)),
        }
    }

    /// Gives `n` permits back before their records expire (Redisson's `release`): the oldest
    /// records lose `n` permits between them, and the permits available grow by `n`, at most
    /// to the rate. Any handle may release, whoever took the permits.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `n` = 0 or a bad name; [`Error::RateNotSet`];
    /// [`Error::WrongType`]; connection errors; [`Error::Shutdown`].
    ///
    /// # Cancel safety
    /// If dropped after the command was sent, the permits may or may not have been given
    /// back; releasing again may give back twice as many (at most to the rate).
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
        let reply = self
            .run(
                (&RATE_RELEASE, "rate release"),
                &keys,
                false,
                vec![n.to_string()],
            )
            .await?;
        match *reply {
            [1, _] => Ok(()),
            _ => Err(self.refused("rate release", &keys, n, &reply)),
        }
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
        let reply = self
            .run((&RATE_AVAILABLE, "rate available"), &keys, false, vec![])
            .await?;
        match *reply {
            [1, n] if n >= 0 => Ok(n as u64),
            _ => Err(self.refused("rate available", &keys, 0, &reply)),
        }
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
        let reply = self
            .run((&RATE_CONFIG, "rate config"), &keys, true, vec![])
            .await?;
        match *reply {
            [-1] => Ok(None),
            [1, rate, interval, kind @ (0 | 1), keep, _pttl] if rate >= 0 && interval >= 0 => {
                let rate_type = if kind == 1 {
                    RateType::PerClient
                } else {
                    RateType::Overall
                };
                let config = RateConfig::new(
                    rate_type,
                    rate as u64,
                    Duration::from_millis(interval as u64),
                )
                .with_keep_alive(Duration::from_millis(keep.max(0) as u64));
                Ok(Some(config))
            }
            _ => Err(self.refused("rate config", &keys, 0, &reply)),
        }
    }

    /// Deletes the limiter: its config and the state of both types, this client's per-client
    /// keys included (Redisson's `delete`; other clients' per-client keys stay until their
    /// keep-alive ends). Returns whether there was anything to delete. A limiter then has no
    /// rate. It deletes whatever the keys hold, as Redisson's does.
    ///
    /// # Errors
    /// A bad name; connection errors; [`Error::Shutdown`].
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
        let reply: i64 = RATE_DELETE
            .run(self.inner.conn(), keys.all(), vec![])
            .await
            .map_err(|e| self.inner.error("rate delete", &keys.config, e))?;
        Ok(reply > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_redissons_and_share_the_names_slot() {
        let k = RateKeys::new("api", "c1");
        assert_eq!(
            k.all(),
            [
                "api",
                "{api}:value",
                "{api}:value:c1",
                "{api}:permits",
                "{api}:permits:c1"
            ]
        );
        let tagged = RateKeys::new("a{b}c", "c1");
        assert_eq!(tagged.keys[1], "a{b}c:value");
        assert_eq!(tagged.keys[4], "a{b}c:permits:c1");
        for k in [&k, &tagged] {
            let slot = fred::util::redis_keyslot(k.config.as_bytes());
            for key in k.all() {
                assert_eq!(fred::util::redis_keyslot(key.as_bytes()), slot, "{key}");
            }
        }
    }

    #[test]
    fn settings_are_checked_naming_the_argument() {
        let ms = Duration::from_millis;
        let bad = |c: RateConfig, arg: &str| match c.args() {
            Err(Error::InvalidArgument { name, .. }) => assert_eq!(name, arg),
            other => panic!("{other:?}"),
        };
        bad(RateConfig::new(RateType::Overall, 0, ms(1)), "rate");
        bad(
            RateConfig::new(RateType::Overall, u64::from(u32::MAX) + 1, ms(1)),
            "rate",
        );
        bad(
            RateConfig::new(RateType::Overall, 1, Duration::ZERO),
            "interval",
        );
        bad(
            RateConfig::new(RateType::Overall, 1, Duration::from_micros(999)),
            "interval",
        );
        bad(
            RateConfig::new(RateType::Overall, 1, ms(10)).with_keep_alive(ms(9)),
            "keep_alive",
        );
        assert_eq!(
            RateConfig::new(RateType::PerClient, 3, ms(10))
                .with_keep_alive(ms(10))
                .args()
                .unwrap(),
            ["3", "10", "1", "10"]
        );
        assert_eq!(
            RateConfig::new(RateType::Overall, 3, ms(10))
                .with_keep_alive(Duration::ZERO)
                .args()
                .unwrap(),
            ["3", "10", "0", "0"]
        );
        assert!(matches!(
            validate_n(0),
            Err(Error::InvalidArgument { name: "n", .. })
        ));
        assert!(validate_n(u64::from(u32::MAX)).is_ok());
    }
}
