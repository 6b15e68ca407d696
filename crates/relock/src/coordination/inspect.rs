//! [`Client::inspect`]: what kind of thing, and what count, is under a name, for operators
//! (`relock status`). Each layout is read by the room that owns it: a lock's by
//! [`Lock::status`](crate::Lock::status), a count's by `counting::reading`, a rate limiter's
//! by `counting::rate_limiter`.

use crate::client::handle::Client;
use crate::counting::reading::Counted;
use crate::error::{Error, Result};
use crate::exclusive::status::LockStatus;

/// What [`Client::inspect`] found under a name.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Inspection {
    /// A lock (plain, fair or read-write; also an election's or a job's): its status, as
    /// [`Lock::status`](crate::Lock::status) reads it on a fair lock's handle (so a fair line
    /// shows). Free, when only its fencing counter or its line is left.
    Lock(LockStatus),
    /// A string holding an integer: a [`Semaphore`](crate::Semaphore)'s available permits or a
    /// [`CountDownLatch`](crate::CountDownLatch)'s count (one layout: they cannot be told
    /// apart).
    Count(i64),
    /// A [`PermitSemaphore`](crate::PermitSemaphore): its count beside a sorted set of permit
    /// leases.
    PermitSemaphore {
        /// The available permits, those whose lease has ended counted back as
        /// [`PermitSemaphore::available`](crate::PermitSemaphore::available) counts them (but
        /// without giving them back); below 0 after `add_permits` took more than were there.
        available: i64,
        /// The permits whose lease has not ended.
        held: u64,
    },
    /// A [`RateLimiter`](crate::RateLimiter)'s config hash (Redisson's `RRateLimiter`
    /// layout).
    RateLimiter {
        /// Its settings.
        config: crate::RateConfig,
        /// The permits available now, as
        /// [`RateLimiter::available_permits`](crate::RateLimiter::available_permits) reads
        /// them; `None` for a per-client limit (each client has its own).
        available: Option<u64>,
    },
    /// Nothing under the name: no lock, no fencing counter, no line, no count.
    Nothing,
    /// A key of another type, or a string that is not an integer: nothing relock keeps.
    Other,
}

impl Client {
    /// What is under `name`: a lock and its status, a semaphore's or latch's count, a permit
    /// semaphore's available and held permits, a rate limiter's config and available permits,
    /// nothing, or something else. For operators and
    /// tooling (`relock status`): it only reads, and it names the kind from the layout it finds
    /// (the same layout as Redisson's, so it sees Redisson's locks and counts too).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// use relock::Inspection;
    /// let client = relock::Client::connect(&url).await?;
    /// # let sem = client.semaphore("doctest:inspect:slots");
    /// # sem.try_set_permits(3).await?;
    /// for name in ["doctest:inspect:slots", "doctest:inspect:none"] {
    ///     match client.inspect(name).await? {
    ///         Inspection::Lock(s) => println!("{name}: a lock, held: {}", s.is_held()),
    ///         Inspection::Count(n) => println!("{name}: a count of {n}"),
    ///         Inspection::PermitSemaphore { available, held } => {
    ///             println!("{name}: {available} permits available, {held} held")
    ///         }
    ///         Inspection::Nothing => println!("{name}: nothing"),
    ///         _ => println!("{name}: something relock does not keep"),
    ///     }
    /// }
    /// # assert_eq!(client.inspect("doctest:inspect:slots").await?, Inspection::Count(3));
    /// # assert_eq!(client.inspect("doctest:inspect:none").await?, Inspection::Nothing);
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = client.pool().del(vec!["doctest:inspect:slots"]).await.unwrap(); }
    /// # client.shutdown().await; Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::NotALock`] for a hash of data under the name (as every lock operation reports
    /// it); [`Error::WrongType`] when a lock's fencing counter or line holds something else;
    /// [`Error::InvalidArgument`] for a bad name; connection and timeout errors;
    /// [`Error::Shutdown`].
    ///
    /// # Cancel safety
    /// Cancel safe (read only). A lock's status is read at one moment (one script); a permit
    /// semaphore's count and leases with a few commands, so a count that changes meanwhile may
    /// be read half old.
    pub async fn inspect(&self, name: &str) -> Result<Inspection> {
        let lock = self.fair_lock(name);
        match lock.status().await {
            Ok(s) if is_nothing(&s) => Ok(Inspection::Nothing),
            Ok(s) => Ok(Inspection::Lock(s)),
            // Not a lock's hash at the name itself: maybe a count.
            Err(Error::WrongType { key }) if key == lock.name() => {
                Ok(match self.read_count(name).await? {
                    Some(Counted::Count(n)) => Inspection::Count(n),
                    Some(Counted::Permits { available, held }) => {
                        Inspection::PermitSemaphore { available, held }
                    }
                    None => Inspection::Other,
                })
            }
            // A hash that is no lock's: maybe a rate limiter's config.
            Err(Error::NotALock { key, found }) if key == lock.name() => {
                match self.read_rate(&key).await {
                    Ok(Some((config, available))) => {
                        Ok(Inspection::RateLimiter { config, available })
                    }
                    Ok(None) | Err(Error::WrongType { .. }) => Err(Error::NotALock { key, found }),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }
}

/// Nothing of a lock is there: no hold, lease, counter, line or mode.
fn is_nothing(s: &LockStatus) -> bool {
    s.holders.is_empty()
        && s.pttl_ms.is_none()
        && s.counter.is_none()
        && s.counter_pttl_ms.is_none()
        && s.queue.is_empty()
        && s.mode.is_none()
}
