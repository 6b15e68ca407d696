//! [`Client`]: the connections, the background tasks, and the settings every lock shares.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use fred::interfaces::ClientLike;

use crate::client::inner::{Inner, Round};
use crate::error::{Error, Result};

/// A connection to Redis and the home of its locks: cheap to clone, `Send + Sync`.
///
/// One client has a pool of command connections, one subscriber connection for waking
/// waiters, and one watchdog task that renews every lock taken without a fixed lease.
/// Dropping the last clone stops both tasks and closes the connections; locks still held
/// then expire after their lease. [`Client::shutdown`] releases them at once instead.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
/// # if std::env::var_os("RELOCK_DOCTEST_URL").is_none() { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) }
/// let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
/// let client = relock::Client::connect(&url).await?;
/// let guard = client.lock("reports:daily").lock().await?;
/// // ... exclusive work, fenced by guard.fencing_token() ...
/// # assert_eq!(client.held_locks(), 1);
/// guard.unlock().await?;
/// # assert_eq!(client.held_locks(), 0);
/// client.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("url", &self.inner.server())
            .field("client_id", &self.inner.settings.client_id)
            .field("held_locks", &self.held_locks())
            .field("parked_waiters", &self.parked_waiters())
            .field(
                "shut_down",
                &self.inner.shutting_down.load(Ordering::SeqCst),
            )
            .finish()
    }
}

impl Client {
    /// The client's command connections, for the application's own commands on the same
    /// Redis (for example the writes a lock protects), whatever the URL's kind (cluster,
    /// sentinel, TLS, credentials). Don't `QUIT` them, and keep blocking commands off them:
    /// lock operations share them. Closed by [`shutdown`](Client::shutdown).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// use relock::fred::interfaces::KeysInterface;
    /// let guard = client.lock("payments:9").lock().await?;
    /// let _: () = client.pool().set("payments:9:state", "paid", None, None, false).await.unwrap();
    /// guard.unlock().await?;
    /// # let state: Option<String> = client.pool().getdel("payments:9:state").await.unwrap();
    /// # assert_eq!(state.as_deref(), Some("paid"));
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub fn pool(&self) -> &fred::clients::Pool {
        &self.inner.pool
    }

    /// This client's id, the `<client_id>` of its owner fields.
    pub fn client_id(&self) -> &str {
        &self.inner.settings.client_id
    }

    /// The lease used when a lock has no fixed lease.
    pub fn watchdog_lease(&self) -> Duration {
        self.inner.settings.watchdog_lease
    }

    /// How many locks this client holds right now (distinct lock and owner pairs).
    pub fn held_locks(&self) -> usize {
        self.inner.shared.holds.held()
    }

    /// Acquire calls of this client (plain or fair locks, semaphores) and latch waits asleep
    /// right now, waiting for a message, the holder's lease, a re-check, or their deadline.
    pub fn parked_waiters(&self) -> usize {
        self.inner.parked.load(Ordering::SeqCst)
    }

    /// Holds of this client whose watch listens on their lock's channel right now (at most
    /// 10,000; see [`ClientBuilder::watch_holds`](crate::ClientBuilder::watch_holds)).
    pub fn watched_holds(&self) -> usize {
        self.inner
            .pubsub
            .watched
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Channels this client is subscribed to right now (one per lock, semaphore or latch with
    /// local waiters, or with a watched hold).
    pub fn subscribed_channels(&self) -> usize {
        self.inner.pubsub.channel_count()
    }

    /// Checks that the client reaches Redis right now, for a readiness probe: one `PING` on
    /// each of its command connections and one on its pub/sub connection, all at once, each
    /// bounded by the command timeout. Returns the slowest round trip.
    ///
    /// # Errors
    /// [`Error::Shutdown`] after [`shutdown`](Client::shutdown); [`Error::Timeout`] when a
    /// connection gave no answer within the command timeout; the connection's error (with the
    /// server, its password redacted) when one failed.
    ///
    /// # Cancel safety
    /// Cancel safe: a `PING` changes nothing.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// match client.ping().await {
    ///     Ok(rtt) => println!("ready ({rtt:?})"),
    ///     Err(e) => eprintln!("not ready: {e}"),
    /// }
    /// # assert!(client.ping().await.is_ok());
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub async fn ping(&self) -> Result<Duration> {
        let inner = &self.inner;
        inner.check_running()?;
        let limit = inner.settings.command_timeout;
        let timeout = || Error::Timeout {
            operation: "ping",
            server: inner.server(),
            timeout: limit,
        };
        let start = tokio::time::Instant::now();
        let commands = futures_util::future::join_all(
            inner
                .pool
                .clients()
                .iter()
                .map(|c| c.ping::<fred::types::Value>(None)),
        );
        let subscriber = inner.pubsub.subscriber.ping::<fred::types::Value>(None);
        let (commands, subscriber) =
            tokio::time::timeout(limit, async { tokio::join!(commands, subscriber) })
                .await
                .map_err(|_| timeout())?;
        for r in commands.into_iter().chain([subscriber]) {
            r.map_err(|e| inner.error("ping", "", e))?;
        }
        Ok(start.elapsed())
    }

    /// Releases every lock this client holds (and gives back the permits its
    /// [`PermitGuard`](crate::PermitGuard)s hold), stops the watchdog and the dispatcher, wakes
    /// waiters (they return [`Error::Shutdown`]) and closes the connections.
    ///
    /// It first waits (at most one command timeout) for the attempts, releases and leaves of
    /// the line already in flight, including those of `lock()` calls that were cancelled just
    /// before: a hold such an attempt was granted is released too. Guards still alive
    /// afterwards report themselves lost; their `unlock` returns [`Error::LockLost`]. Calling
    /// it twice is harmless.
    ///
    /// # Cancel safety
    /// If dropped part-way, the locks not yet released expire after their lease, and the
    /// connections close when the last clone of the client is dropped.
    pub async fn shutdown(&self) {
        let inner = &self.inner;
        if inner.shutting_down.swap(true, Ordering::SeqCst) {
            return;
        }
        inner.stopping.send_replace(true);
        inner.pubsub.wake_all();
        inner.shared.close();
        let settle = inner.settings.command_timeout + Duration::from_millis(100);
        if tokio::time::timeout(settle, inner.shared.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("shutdown: work in flight did not finish within {settle:?}; releasing what is held anyway");
        }
        let mut work = tokio::task::JoinSet::new();
        // What must land before a hold's lock is free (nothing, for most kinds: then this
        // costs no round trip).
        for step in inner.kinds.steps() {
            step.before_releases(inner, &mut work);
        }
        while work.join_next().await.is_some() {}
        // Release every hold, and run every kind's shutdown step (leave lines, give back
        // permits), at once, not one round trip after another.
        let first = inner.shared.holds.all();
        for hold in first.iter().cloned() {
            hold.mark_ended();
            let inner = inner.clone();
            work.spawn(async move {
                if let Err(e) = inner.run_release(&hold.keys, &hold.field, true).await {
                    tracing::warn!(lock = %hold.keys.lock, error = %e, "release at shutdown failed; the lease will expire");
                }
            });
        }
        for step in inner.kinds.steps() {
            step.at_shutdown(inner, &mut work, Round::First);
        }
        while work.join_next().await.is_some() {}
        // An attempt that passed its running check just before the flag was set may have been
        // granted meanwhile: release whatever holds appeared after the first list was taken.
        let _ = tokio::time::timeout(settle, inner.shared.tracker.wait()).await;
        let stragglers: Vec<_> = inner
            .shared
            .holds
            .all()
            .into_iter()
            .filter(|h| !first.iter().any(|f| Arc::ptr_eq(f, h)))
            .collect();
        for hold in stragglers {
            hold.mark_ended();
            if let Err(e) = inner.run_release(&hold.keys, &hold.field, true).await {
                tracing::warn!(lock = %hold.keys.lock, error = %e, "release at shutdown failed; the lease will expire");
            }
        }
        // Kinds' state that those attempts added (a permit granted, a waiter back in line).
        for step in inner.kinds.steps() {
            step.at_shutdown(inner, &mut work, Round::Late);
        }
        while work.join_next().await.is_some() {}
        inner.shared.holds.clear();
        inner.pubsub.wake_all();
        let _ = inner.shutdown.send(true);
        let _ = inner.pubsub.subscriber.quit().await;
        if inner.owns_pool {
            let _ = inner.pool.quit().await;
        }
    }
}
