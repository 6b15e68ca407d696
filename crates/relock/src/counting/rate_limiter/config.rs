//! A rate limiter's settings: [`RateType`] and [`RateConfig`], their checks before anything
//! is sent (each refusal names the argument), and the permit count's.

use std::time::Duration;

use crate::counting::counts::MAX_COUNT;
use crate::error::{Error, Result};

/// Whom a [`RateLimiter`](crate::RateLimiter)'s rate is shared by (Redisson's `RateType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RateType {
    /// One limit for every client (Redisson's `OVERALL`, stored as `0`).
    Overall,
    /// A limit of its own for each client, keyed by
    /// [`Client::client_id`](crate::Client::client_id) (Redisson's `PER_CLIENT`, stored as
    /// `1`, keyed by a Redisson instance's id).
    ///
    /// Each client id that acquires gets three keys of its own (its value, its records, and
    /// relock's rate key). Without a keep-alive they live until the limiter is deleted, and a
    /// client id is new in every process unless set
    /// ([`ClientBuilder::client_id`](crate::ClientBuilder::client_id)): give a per-client limiter a
    /// keep-alive ([`RateConfig::with_keep_alive`]), or a fixed client id, so that restarts do
    /// not pile up keys.
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
    /// the records, so a limiter unused for this long disappears. An acquire refused for now
    /// makes them live at least until its waiter asks again (the delay it was told to sleep,
    /// plus a second), so a relock waiter never wakes to a limiter that expired while it slept
    /// (a Java client's acquire can shorten that: with Java clients, make the keep-alive a few
    /// seconds longer than the interval). It must be at least the interval. `Duration::ZERO`
    /// means none: the config and the state this call starts live until deleted (setting the
    /// rate without a keep-alive removes an earlier one's time to live from the config; another
    /// client's `PerClient` keys that an earlier keep-alive gave a time to live keep one, at
    /// least an interval from their last use).
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
    pub(crate) fn args(&self) -> Result<Vec<String>> {
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

/// Rejects a permit count of 0 or above what a permit record holds.
pub(crate) fn validate_n(n: u64) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
