//! The spin lock's client setting: how its waiters space their attempts
//! ([`SpinBackoff`], set by [`ClientBuilder::spin_backoff`]).

use std::time::Duration;

use crate::client::builder::ClientBuilder;
use crate::client::inner::Inner;
use crate::client::settings::KindSetting;
use crate::error::{Error, Human, Result};

/// The longest any one delay (or jitter) may be: a waiter that sleeps longer between two
/// attempts is a mistake in the setting, not a back-off.
const LONGEST: Duration = Duration::from_secs(3600);

/// How a spin lock's waiter spaces its attempts (Redisson's `LockOptions.BackOff`): after each
/// refused attempt it sleeps the next delay, plus a random jitter, then tries again.
///
/// - [`exponential`](SpinBackoff::exponential) (the default, as Redisson's
///   `ExponentialBackOff`): the first delay is `initial`, each next one `factor` times the
///   one before, never above `max`. Default: 1 ms, ×2, 128 ms: attempts at about 1, 3, 7,
///   15, 31, 63, 127 and 255 ms, then every 128 ms.
/// - [`constant`](SpinBackoff::constant) (Redisson's `ConstantBackOff`, whose default is
///   64 ms): the same delay every time.
///
/// Each sleep adds a jitter drawn evenly from zero to [`with_jitter`](SpinBackoff::with_jitter)
/// (default 4 ms), so that waiters that started together fall out of step. A sleep is
/// therefore at most `max` (or `delay`) plus the jitter, and never past a `try_lock_for`
/// deadline: the last sleep is cut to the deadline, and one last attempt made there.
///
/// A waiter that sleeps `max` between attempts learns of a release up to `max` + jitter
/// late, and costs the server one script call per sleep; [`guide::safety`](crate::guide::safety)
/// compares it with the plain lock's wake-ups.
///
/// ```
/// use std::time::Duration;
/// use relock::SpinBackoff;
///
/// let redissons = SpinBackoff::default();
/// assert_eq!(
///     redissons,
///     SpinBackoff::exponential(Duration::from_millis(1), 2, Duration::from_millis(128))
///         .with_jitter(Duration::from_millis(4))
/// );
/// let steady = SpinBackoff::constant(Duration::from_millis(50)).with_jitter(Duration::ZERO);
/// # let _ = steady;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpinBackoff {
    shape: Shape,
    jitter: Duration,
}

/// The delays before jitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Exponential {
        initial: Duration,
        factor: u32,
        max: Duration,
    },
    Constant(Duration),
}

/// Redisson's `LockOptions.BackOff` defaults' jitter.
const DEFAULT_JITTER: Duration = Duration::from_millis(4);

impl Default for SpinBackoff {
    /// Redisson's default: exponential from 1 ms, ×2, at most 128 ms, with up to 4 ms of
    /// jitter.
    fn default() -> Self {
        SpinBackoff::exponential(Duration::from_millis(1), 2, Duration::from_millis(128))
    }
}

impl SpinBackoff {
    /// Delays from `initial`, each `factor` times the one before, never above `max`; with the
    /// default jitter (4 ms). Checked when the client is built: `initial` at least 1 ms,
    /// `factor` at least 1, `max` at least `initial`, each at most an hour.
    pub const fn exponential(initial: Duration, factor: u32, max: Duration) -> Self {
        SpinBackoff {
            shape: Shape::Exponential {
                initial,
                factor,
                max,
            },
            jitter: DEFAULT_JITTER,
        }
    }

    /// The same `delay` between every two attempts; with the default jitter (4 ms). Checked
    /// when the client is built: at least 1 ms, at most an hour.
    pub const fn constant(delay: Duration) -> Self {
        SpinBackoff {
            shape: Shape::Constant(delay),
            jitter: DEFAULT_JITTER,
        }
    }

    /// The same back-off with each sleep lengthened by a random time from zero to `jitter`
    /// (`Duration::ZERO`: none). At most an hour.
    pub const fn with_jitter(mut self, jitter: Duration) -> Self {
        self.jitter = jitter;
        self
    }

    /// The jitter's bound.
    pub const fn jitter(&self) -> Duration {
        self.jitter
    }

    /// The longest sleep between two attempts: the largest delay plus the jitter.
    pub fn longest_sleep(&self) -> Duration {
        let top = match self.shape {
            Shape::Exponential { max, .. } => max,
            Shape::Constant(d) => d,
        };
        top.saturating_add(self.jitter)
    }

    /// A fresh series of sleeps, for one waiter.
    pub(crate) fn sleeps(&self) -> Sleeps {
        let next = match self.shape {
            Shape::Exponential { initial, .. } => initial,
            Shape::Constant(d) => d,
        };
        Sleeps {
            backoff: *self,
            next,
        }
    }

    fn check(&self) -> Result<()> {
        let bad = |what: String| Err(Error::invalid("spin_backoff", what));
        let (least, most) = match self.shape {
            Shape::Exponential {
                initial,
                factor,
                max,
            } => {
                if factor == 0 {
                    return bad("a factor of 0: use at least 1 (1: a constant delay)".into());
                }
                if max < initial {
                    return bad(format!(
                        "max {} is below initial {}",
                        Human(max),
                        Human(initial)
                    ));
                }
                (initial, max)
            }
            Shape::Constant(d) => (d, d),
        };
        if least < Duration::from_millis(1) {
            return bad(format!(
                "a delay of {}: use at least 1 ms (the timer's resolution)",
                Human(least)
            ));
        }
        if most > LONGEST || self.jitter > LONGEST {
            return bad(format!(
                "a delay or jitter of {}: use at most an hour",
                Human(most.max(self.jitter))
            ));
        }
        Ok(())
    }
}

/// One waiter's sleeps between attempts.
#[derive(Debug)]
pub(crate) struct Sleeps {
    backoff: SpinBackoff,
    /// The next delay, before jitter.
    next: Duration,
}

impl Sleeps {
    /// The next sleep: the next delay plus a random jitter.
    pub(crate) fn next_sleep(&mut self) -> Duration {
        let delay = self.next;
        if let Shape::Exponential { factor, max, .. } = self.backoff.shape {
            self.next = delay.saturating_mul(factor).min(max);
        }
        delay.saturating_add(random_up_to(self.backoff.jitter))
    }
}

/// A random duration in [0, `bound`], from the OS-seeded UUID generator already in the tree.
fn random_up_to(bound: Duration) -> Duration {
    if bound.is_zero() {
        return Duration::ZERO;
    }
    let nanos = bound.as_nanos();
    let r = uuid::Uuid::new_v4().as_u128() % (nanos + 1);
    Duration::from_nanos(r as u64)
}

/// The spin lock's own client setting.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SpinSettings {
    backoff: SpinBackoff,
}

impl KindSetting for SpinSettings {
    fn check(&self) -> Result<()> {
        self.backoff.check()
    }
}

impl ClientBuilder {
    /// How the client's spin-lock waiters ([`Client::spin_lock`](crate::Client::spin_lock))
    /// space their attempts. Default: [`SpinBackoff::default`], Redisson's (exponential from
    /// 1 ms, ×2, at most 128 ms, up to 4 ms of jitter). Checked when the client is built
    /// ([`Error::InvalidArgument`](crate::Error::InvalidArgument) naming `spin_backoff`).
    pub fn spin_backoff(self, backoff: SpinBackoff) -> Self {
        self.kind_setting(SpinSettings { backoff })
    }
}

/// The client's spin back-off.
pub(crate) fn backoff(inner: &Inner) -> SpinBackoff {
    inner.settings().kind::<SpinSettings>().backoff
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn redissons_default_doubles_from_one_ms_to_its_cap_with_bounded_jitter() {
        let b = SpinBackoff::default();
        assert_eq!(b.check().map_err(|e| e.to_string()), Ok(()));
        let mut s = b.sleeps();
        let bases = [1, 2, 4, 8, 16, 32, 64, 128, 128, 128];
        for base in bases {
            let sleep = s.next_sleep();
            assert!(
                sleep >= ms(base) && sleep <= ms(base + 4),
                "{sleep:?} for {base}"
            );
        }
        assert_eq!(b.longest_sleep(), ms(132));
    }

    #[test]
    fn without_jitter_the_sleeps_are_exact() {
        let mut s = SpinBackoff::exponential(ms(5), 3, ms(100))
            .with_jitter(Duration::ZERO)
            .sleeps();
        let got: Vec<_> = (0..5).map(|_| s.next_sleep()).collect();
        assert_eq!(got, [ms(5), ms(15), ms(45), ms(100), ms(100)]);
        let mut c = SpinBackoff::constant(ms(64))
            .with_jitter(Duration::ZERO)
            .sleeps();
        assert_eq!([c.next_sleep(), c.next_sleep()], [ms(64), ms(64)]);
    }

    #[test]
    fn a_huge_factor_saturates_at_the_cap() {
        let mut s = SpinBackoff::exponential(ms(1), u32::MAX, ms(3_600_000))
            .with_jitter(Duration::ZERO)
            .sleeps();
        s.next_sleep();
        for _ in 0..4 {
            assert_eq!(s.next_sleep(), ms(3_600_000));
        }
    }

    #[test]
    fn bad_settings_are_refused_naming_the_setting() {
        for bad in [
            SpinBackoff::exponential(Duration::ZERO, 2, ms(10)),
            SpinBackoff::exponential(ms(1), 0, ms(10)),
            SpinBackoff::exponential(ms(20), 2, ms(10)),
            SpinBackoff::exponential(ms(1), 2, Duration::from_secs(3601)),
            SpinBackoff::constant(Duration::from_micros(500)),
            SpinBackoff::constant(ms(1)).with_jitter(Duration::from_secs(7200)),
        ] {
            match bad.check() {
                Err(Error::InvalidArgument { name, .. }) => assert_eq!(name, "spin_backoff"),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }
}
