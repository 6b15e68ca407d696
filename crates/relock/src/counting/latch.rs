//! [`CountDownLatch`]: a count-down latch on one Redis string, wire-compatible with Redisson's
//! `RCountDownLatch`.

use std::sync::Arc;
use std::time::Duration;

use crate::client::handle::Client;
use crate::client::inner::Inner;
use crate::client::scripts;
use crate::counting::channel::LATCH_CHANNEL;
use crate::counting::counts::validate_count;
use crate::counting::names::Names;
use crate::counting::wait::{wait_until, Check};
use crate::error::{Error, Result};
use crate::hold::keys::validate_name;

scripts::scripts! {
    /// Count-down latch: set the count if the latch has none.
    LATCH_SET = writes "latch_set.lua" [];
    /// Count-down latch: one count down; open it (and publish) at 0.
    LATCH_COUNT_DOWN = writes "latch_count_down.lua" [];
    /// Count-down latch: delete it (it is then open) and publish.
    LATCH_DELETE = writes "latch_delete.lua" [];
}

/// A count-down latch shared by every process on the same Redis, wire-compatible with
/// Redisson's `RCountDownLatch`: [`wait`](CountDownLatch::wait) returns once
/// [`count_down`](CountDownLatch::count_down) has been called as many times as the count set
/// by [`try_set_count`](CountDownLatch::try_set_count).
///
/// A cheap handle (`Clone + Send + Sync`) made by [`Client::count_down_latch`].
/// - The count is the string key `<name>`; a **missing key is count 0: the latch is open**.
///   When the count reaches 0 the key is deleted and `0` is published on
///   `redisson_countdownlatch__channel__{<name>}`, which wakes every waiter on every client.
///   The latch can then be set again (unlike `java.util.concurrent.CountDownLatch`).
/// - Pub/sub may lose a message (a reconnect, a failover), so a waiter also looks again on
///   its own after 50 ms, then 100, 200, 400, 800 ms and from then on every second: **a lost
///   message delays a waiter by at most about 1 s** (plus a round trip), never forever.
///   While the client's pub/sub connection is down, waiters look every 100 ms, and every
///   waiter looks at once after it reconnects.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
/// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
/// let client = relock::Client::connect(&url).await?;
/// let ready = client.count_down_latch("deploy:42:ready");
/// ready.try_set_count(3).await?;      // three services must report
///
/// // in each service:
/// ready.count_down().await?;
/// # for _ in 0..2 { let other = ready.clone(); tokio::spawn(async move { other.count_down().await }); }
///
/// // anywhere:
/// ready.wait().await?;                // returns once all three counted down
/// # assert_eq!(ready.count().await?, 0);
/// # client.shutdown().await; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct CountDownLatch {
    inner: Arc<Inner>,
    name: Arc<str>,
    names: std::result::Result<Arc<Names>, String>,
}

impl Client {
    /// A handle to the count-down latch called `name` (Redisson's `RCountDownLatch`). Cheap;
    /// nothing is sent until it is used. A bad name is reported by the first operation, as
    /// [`Error::InvalidArgument`]; on a Redis Cluster that includes a name with a `{tag}`
    /// whose channel (Redisson wraps the whole name in braces:
    /// `redisson_countdownlatch__channel__{<name>}`) would land in another slot than the key.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// let latch = client.count_down_latch("batch:7");
    /// latch.try_set_count(1).await?;
    /// latch.count_down().await?;
    /// latch.wait().await?;
    /// # assert_eq!(latch.count().await?, 0);
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub fn count_down_latch(&self, name: impl Into<String>) -> CountDownLatch {
        let name: String = self.inner.named(name.into());
        let names = names(&name, self.inner.pubsub().cluster);
        CountDownLatch {
            inner: self.inner.clone(),
            name: name.into(),
            names,
        }
    }
}

fn names(name: &str, cluster: bool) -> std::result::Result<Arc<Names>, String> {
    let reason = |e: Error| match e {
        Error::InvalidArgument { reason, .. } => reason,
        other => other.to_string(),
    };
    validate_name(name).map_err(reason)?;
    let channel = format!("redisson_countdownlatch__channel__{{{name}}}");
    if cluster {
        let slot = |s: &str| fred::util::redis_keyslot(s.as_bytes());
        if slot(name) != slot(&channel) {
            return Err(format!(
                "on a Redis Cluster the latch's key `{name}` and its channel `{channel}` (Redisson's \
                 naming) hash to different slots, so one script cannot touch both. Use a name \
                 without braces"
            ));
        }
    }
    Ok(Arc::new(Names {
        key: name.to_string(),
        channel,
    }))
}

impl CountDownLatch {
    /// The latch's name (also its key).
    pub fn name(&self) -> &str {
        &self.name
    }

    fn names(&self) -> Result<Arc<Names>> {
        self.names
            .clone()
            .map_err(|reason| Error::invalid("name", reason))
    }

    /// Sets the count to `n`, only if the latch has none (it is open); returns whether it was
    /// set. Publishes `1` (Redisson's "new count" message; it wakes nobody).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `n` = 0 (a latch at 0 is open: delete it instead) or
    /// above 10^15, or a bad name; [`Error::WrongType`] if the key holds something else;
    /// connection errors; [`Error::Shutdown`].
    ///
    /// # Cancel safety
    /// If dropped after the command was sent, the count may or may not have been set;
    /// calling it again is harmless (it sets only if absent).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let latch = client.count_down_latch("doctest:latch:try_set_count");
    /// if !latch.try_set_count(2).await? {
    ///     println!("already counting: {} left", latch.count().await?);
    /// }
    /// # assert!(!latch.try_set_count(5).await?); // set already: left as it is
    /// # assert_eq!(latch.count().await?, 2);
    /// # latch.delete().await?;
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub async fn try_set_count(&self, n: u64) -> Result<bool> {
        self.inner.check_running()?;
        let names = self.names()?;
        if n == 0 {
            return Err(Error::invalid(
                "n",
                "a count of 0 is an open latch, which has no key to set; pass at least 1 (or call `delete` to open a latch)",
            ));
        }
        validate_count("n", n, "as a count")?;
        let set: i64 = names
            .run_publishing(
                &self.inner,
                (&LATCH_SET, "latch set"),
                &[],
                vec![n.to_string()],
                false,
            )
            .await?;
        Ok(set == 1)
    }

    /// Takes one off the count. When it reaches 0 the latch opens: the key is deleted and
    /// every waiter, on every client, is woken. On an open latch it does nothing.
    ///
    /// # Errors
    /// [`Error::WrongType`] if the key holds something else; connection errors;
    /// [`Error::Shutdown`]; a bad name.
    ///
    /// # Cancel safety
    /// If dropped after the command was sent, the count may or may not have been taken down.
    /// An [`Error::Timeout`] means the same: counting down again may count twice.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let latch = client.count_down_latch("doctest:latch:count_down");
    /// # latch.try_set_count(2).await?;
    /// latch.count_down().await?;
    /// # assert_eq!(latch.count().await?, 1);
    /// # latch.count_down().await?;
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub async fn count_down(&self) -> Result<()> {
        self.inner.check_running()?;
        let names = self.names()?;
        let _left: i64 = names
            .run_publishing(
                &self.inner,
                (&LATCH_COUNT_DOWN, "latch count down"),
                &[],
                vec![],
                true,
            )
            .await?;
        Ok(())
    }

    /// The current count; 0 means the latch is open (its key is missing).
    ///
    /// # Errors
    /// [`Error::WrongType`] if the key is not a count; connection errors; a bad name.
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let latch = client.count_down_latch("doctest:latch:count");
    /// # latch.try_set_count(3).await?;
    /// println!("{} to go", latch.count().await?);
    /// # assert_eq!(latch.count().await?, 3);
    /// # latch.delete().await?;
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub async fn count(&self) -> Result<u64> {
        let names = self.names()?;
        names.read(&self.inner).await
    }

    /// Waits until the count is 0 (the latch is open); returns at once if it is.
    ///
    /// # Errors
    /// [`Error::WrongType`] if the key is not a count; connection errors and timeouts once
    /// they have lasted one command timeout (a waiter retries them until then);
    /// [`Error::Shutdown`] (also when the client shuts down while waiting); a bad name.
    ///
    /// # Cancel safety
    /// Cancel safe: waiting changes nothing on the server, and a dropped wait releases its
    /// subscription.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let latch = client.count_down_latch("doctest:latch:wait");
    /// # latch.try_set_count(1).await?;
    /// # let other = latch.clone(); tokio::spawn(async move { other.count_down().await });
    /// latch.wait().await?;
    /// println!("open");
    /// # assert_eq!(latch.count().await?, 0);
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub async fn wait(&self) -> Result<()> {
        let open = self.wait_within(None).await?;
        debug_assert!(open, "a wait without a deadline only returns once open");
        Ok(())
    }

    /// Waits at most about `timeout` for the count to reach 0. Returns whether the latch is
    /// open (`Ok(false)`: still closed when the time ran out).
    ///
    /// # Errors
    /// As [`wait`](CountDownLatch::wait).
    ///
    /// # Cancel safety
    /// As [`wait`](CountDownLatch::wait).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let latch = client.count_down_latch("doctest:latch:wait_for");
    /// # latch.try_set_count(1).await?;
    /// # let other = latch.clone(); tokio::spawn(async move { other.count_down().await });
    /// use std::time::Duration;
    /// if !latch.wait_for(Duration::from_secs(5)).await? {
    ///     eprintln!("still {} to go", latch.count().await?);
    /// }
    /// # assert_eq!(latch.count().await?, 0);
    /// # latch.try_set_count(1).await?;
    /// # assert!(!latch.wait_for(Duration::from_millis(20)).await?); // nobody counts down now
    /// # latch.delete().await?;
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub async fn wait_for(&self, timeout: Duration) -> Result<bool> {
        self.wait_within(Some(timeout)).await
    }

    /// Waits at most `wait` (`None`: as long as it takes) for the count to read 0, on the
    /// counting kinds' wait (`wait::wait_until`).
    async fn wait_within(&self, wait: Option<Duration>) -> Result<bool> {
        self.inner.check_running()?;
        let names = self.names()?;
        let check = |_woken: bool| async {
            let count = names.read(&self.inner).await?;
            Ok(if count == 0 {
                Check::Done
            } else {
                Check::NotYet
            })
        };
        wait_until(&self.inner, &names.channel, LATCH_CHANNEL, wait, check).await
    }

    /// Deletes the latch (it is then open: count 0) and wakes its waiters. Returns whether
    /// there was a count to delete.
    ///
    /// Redisson's `delete()` publishes `1` here, which leaves its waiters asleep on a latch
    /// that reads 0; relock publishes `0`, so both Redisson's and relock's waiters wake and
    /// find it open.
    ///
    /// # Errors
    /// [`Error::WrongType`] if the key holds something else (it is left alone); connection
    /// errors; [`Error::Shutdown`]; a bad name.
    ///
    /// # Cancel safety
    /// If dropped after the command was sent, the latch may or may not have been deleted;
    /// calling it again is harmless.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let latch = client.count_down_latch("doctest:latch:delete");
    /// # latch.try_set_count(5).await?;
    /// # let other = latch.clone(); let waiter = tokio::spawn(async move { other.wait().await });
    /// latch.delete().await?; // give up on the count: every waiter goes on
    /// # assert_eq!(latch.count().await?, 0);
    /// # waiter.await.unwrap()?;
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub async fn delete(&self) -> Result<bool> {
        self.inner.check_running()?;
        let names = self.names()?;
        let deleted: i64 = names
            .run_publishing(
                &self.inner,
                (&LATCH_DELETE, "latch delete"),
                &[],
                vec![],
                false,
            )
            .await?;
        Ok(deleted == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_channel_is_redissons_and_tagged_names_are_refused_on_a_cluster_only_when_slots_differ() {
        let n = names("jobs:1", true).unwrap();
        assert_eq!(n.key, "jobs:1");
        assert_eq!(n.channel, "redisson_countdownlatch__channel__{jobs:1}");
        // `{tag}` inside braces: Redis hashes `a{b` for the channel, `b` for the key.
        assert!(names("a{b}c", false).is_ok());
        let e = names("a{b}c", true).unwrap_err();
        assert!(e.contains("different slots"), "{e}");
        assert!(names("", false).is_err());
        assert!(names("x{", false).is_err());
    }
}
