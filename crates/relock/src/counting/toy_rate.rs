//! A toy rate limiter (test-only): a counting kind that publishes nothing, built from the
//! counting room's guide. At most `limit` takes per window (a string count that expires with
//! its window); a caller that finds the window full polls, on the room's shared wait, no later
//! than the window's end.
// Nothing here is reachable from outside the crate: the kind is compiled for tests only.
#![allow(unreachable_pub)]

use std::sync::Arc;
use std::time::Duration;

use crate::client::handle::Client;
use crate::client::inner::Inner;
use crate::client::scripts;
use crate::counting::counts::{unexpected, validate_count};
use crate::counting::names::Names;
use crate::counting::wait::{wait_until, Check};
use crate::error::{Error, Result};
use crate::hold::keys::{prefixed, validate_name};
use crate::hold::wake::{Format, Waiters, Waking};

scripts::scripts! {
    /// Toy rate limiter: take one of the window's permits, or say when the window ends.
    TOY_RATE_TAKE = writes "toy_rate_take.lua" [];
}

/// The format of a channel nothing publishes on: the shared wait subscribes to one, and no
/// message ever comes (its re-checks, bounded by the window's end, do the waking).
static SILENT: Format = Format::new("toy_rate", || Arc::new(Silent));

/// A silent channel's state: none.
#[derive(Debug)]
struct Silent;

impl Waking for Silent {
    fn deliver(&self, _: &str, _: &dyn Waiters) {}
}

/// What one take found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Take {
    /// Taken; this many more can be taken in the window.
    Taken(u64),
    /// None left; the window ends within this long (`None`: the count has no expiry).
    Full(Option<Duration>),
}

/// Reads `toy_rate_take.lua`'s reply.
pub(crate) fn read_take(reply: &[i64]) -> Option<Take> {
    match *reply {
        [1, left] if left >= 0 => Some(Take::Taken(left as u64)),
        [0, pttl] if pttl >= 0 => Some(Take::Full(Some(Duration::from_millis(pttl as u64)))),
        [0, -1] => Some(Take::Full(None)),
        // -2: the window ended between the script's reads, which cannot happen in one script.
        _ => None,
    }
}

/// A toy rate limiter: at most `limit` takes per `window`.
#[derive(Debug, Clone)]
pub(crate) struct RateLimiter {
    inner: Arc<Inner>,
    names: std::result::Result<Arc<Names>, String>,
    limit: u64,
    window: Duration,
}

impl Client {
    /// A handle to the toy rate limiter called `name`: `limit` takes per `window`.
    pub(crate) fn toy_rate_limiter(
        &self,
        name: impl Into<String>,
        limit: u64,
        window: Duration,
    ) -> RateLimiter {
        let name = self.inner.named(name.into());
        let names = validate_name(&name)
            .map(|()| {
                Arc::new(Names {
                    // Never published on: the shared wait needs a channel to subscribe to.
                    channel: prefixed("toy_rate__channel", &name),
                    key: name,
                })
            })
            .map_err(|e| match e {
                Error::InvalidArgument { reason, .. } => reason,
                other => other.to_string(),
            });
        RateLimiter {
            inner: self.inner.clone(),
            names,
            limit,
            window,
        }
    }
}

impl RateLimiter {
    fn names(&self) -> Result<Arc<Names>> {
        self.names
            .clone()
            .map_err(|reason| Error::invalid("name", reason))
    }

    /// One take, sent once: a take whose reply is lost may have counted (the limiter errs on
    /// the side of fewer takes).
    async fn take(&self, names: &Names) -> Result<Take> {
        let reply: Vec<i64> = TOY_RATE_TAKE
            .run(
                self.inner.conn(),
                vec![names.key.clone()],
                vec![
                    self.limit.to_string(),
                    self.window.as_millis().max(1).to_string(),
                ],
            )
            .await
            .map_err(|e| self.inner.error("rate take", &names.key, e))?;
        read_take(&reply).ok_or_else(|| unexpected("rate take", &self.inner, &reply))
    }

    /// Takes one permit of the current window if one is left; never waits.
    pub(crate) async fn try_acquire(&self) -> Result<bool> {
        self.acquire_within(Some(Duration::ZERO)).await
    }

    /// Takes one permit, waiting at most `wait` (`None`: as long as it takes) for a window
    /// with one left. Returns whether it took one.
    pub(crate) async fn acquire_within(&self, wait: Option<Duration>) -> Result<bool> {
        self.inner.check_running()?;
        let names = self.names()?;
        validate_count("limit", self.limit, "permits per window")?;
        let check = |_woken: bool| async {
            Ok(match self.take(&names).await? {
                Take::Taken(_) => Check::Done,
                Take::Full(Some(ends)) => Check::Within(ends + Duration::from_millis(1)),
                Take::Full(None) => Check::NotYet,
            })
        };
        wait_until(&self.inner, &names.channel, SILENT, wait, check).await
    }

    /// The takes counted in the current window.
    pub(crate) async fn used(&self) -> Result<u64> {
        self.names()?.read(&self.inner).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use relock_testkit::RedisServer;
    use tokio::time::Instant;

    #[test]
    fn replies_read_as_taken_or_full_until_the_window_ends() {
        assert_eq!(read_take(&[1, 2]), Some(Take::Taken(2)));
        assert_eq!(
            read_take(&[0, 250]),
            Some(Take::Full(Some(Duration::from_millis(250))))
        );
        assert_eq!(read_take(&[0, -1]), Some(Take::Full(None)));
        assert_eq!(read_take(&[0, -2]), None);
        assert_eq!(read_take(&[1, -1]), None);
        assert_eq!(read_take(&[2, 1]), None);
    }

    #[tokio::test]
    async fn a_full_window_is_polled_until_it_ends_and_nothing_is_published() {
        let server = RedisServer::start().unwrap();
        let client = Client::connect(&server.url()).await.unwrap();
        let window = Duration::from_millis(400);
        let limiter = client.toy_rate_limiter("toy:rate", 3, window);
        let started = Instant::now();
        for _ in 0..3 {
            assert!(limiter.try_acquire().await.unwrap());
        }
        assert!(!limiter.try_acquire().await.unwrap());
        assert_eq!(limiter.used().await.unwrap(), 3);
        // A short wait ends before the window does.
        assert!(!limiter
            .acquire_within(Some(Duration::from_millis(20)))
            .await
            .unwrap());
        // A wait long enough takes the first permit of the next window.
        assert!(limiter
            .acquire_within(Some(Duration::from_secs(5)))
            .await
            .unwrap());
        assert!(started.elapsed() >= window);
        assert_eq!(limiter.used().await.unwrap(), 1);
        assert_eq!(server.command_calls("publish").unwrap(), 0);
        client.shutdown().await;
    }

    #[tokio::test]
    async fn a_bad_name_and_a_zero_limit_are_refused_before_anything_is_sent() {
        let server = RedisServer::start().unwrap();
        let client = Client::connect(&server.url()).await.unwrap();
        let bad = client.toy_rate_limiter("a{b", 1, Duration::from_secs(1));
        assert!(matches!(
            bad.try_acquire().await,
            Err(Error::InvalidArgument { name: "name", .. })
        ));
        let zero = client.toy_rate_limiter("toy:rate:zero", 0, Duration::from_secs(1));
        assert!(matches!(
            zero.try_acquire().await,
            Err(Error::InvalidArgument { name: "limit", .. })
        ));
        assert_eq!(server.dbsize().unwrap(), 0);
        client.shutdown().await;
    }
}
