//! `ClientBuilder`: the settings of a `Client`, checked, then `build` (or `build_with_pool`)
//! connects and starts it (`connect`).

use std::time::Duration;

use fred::clients::Pool;
use fred::interfaces::ClientLike;
use fred::types::config::Config as FredConfig;
use fred::types::Builder;

use crate::client::connect::{
    describe, fred_builder, fred_command_settings, fred_url, sentinel_credentials, start,
};
use crate::client::handle::Client;
use crate::client::identity;
use crate::client::redact;
use crate::client::refusal::connection_error;
use crate::client::settings::{
    deployment, validate_lease, ClusterPubSub, Deployment, KindSetting, Settings, COUNTER_GRACE,
    RENEW_BATCH,
};
use crate::client::tls;
use crate::client::tls::TlsSettings;
use crate::error::{Error, Result};
use crate::hold::reentry::Reentrancy;

/// Builds a [`Client`] with explicit settings.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
/// # if std::env::var_os("RELOCK_DOCTEST_URL").is_none() { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) }
/// use std::time::Duration;
/// let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
/// let client = relock::Client::builder()
///     .url(url)
///     .client_id("billing-7")
///     .watchdog_lease(Duration::from_secs(10))
///     .build()
///     .await?;
/// # assert_eq!((client.client_id(), client.watchdog_lease()), ("billing-7", Duration::from_secs(10)));
/// # client.shutdown().await; Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is awaited"]
pub struct ClientBuilder {
    settings: Settings,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        ClientBuilder {
            settings: Settings {
                url: "redis://127.0.0.1:6379".into(),
                client_id: uuid::Uuid::new_v4().to_string(),
                watchdog_lease: Duration::from_secs(30),
                connect_timeout: Duration::from_secs(5),
                command_timeout: Duration::from_secs(3),
                connections: 4,
                counter_grace: COUNTER_GRACE,
                persistent_counters: false,
                watch_holds: true,
                key_prefix: String::new(),
                renew_batch: RENEW_BATCH,
                kinds: Default::default(),
                sync_replicas: None,
                coalesce: true,
                reentrancy: Reentrancy::Scoped,
                tls: TlsSettings::default(),
                cluster_pubsub: ClusterPubSub::Sharded,
                auto_reconnect: true,
                client_name: None,
            },
        }
    }
}

impl ClientBuilder {
    /// Whether the command connections reconnect by themselves (see `Settings`).
    pub(crate) fn auto_reconnect(mut self, on: bool) -> Self {
        self.settings.auto_reconnect = on;
        self
    }

    /// The Redis URL: `redis://[user:password@]host:port[/db]` for one server,
    /// `redis-cluster://host:port[,host:port...]` for a Redis Cluster,
    /// `redis-sentinel://host:port[,host:port...]?sentinelServiceName=NAME` for Sentinel, and
    /// `unix://[user:password@]/path/to/redis.sock` for a local socket (`:password@` for the
    /// default user, as in the other forms). `rediss://`, `rediss-cluster://` and
    /// `rediss-sentinel://` use TLS (rustls; the system's roots unless
    /// [`tls_ca_pem`](ClientBuilder::tls_ca_pem) is set). `valkey` works in place of `redis`.
    /// Default: `redis://127.0.0.1:6379`.
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.settings.url = url.into();
        self
    }

    /// A Redis Cluster, by some of its nodes (`host:port`); the client discovers the rest.
    /// Same as the URL `redis-cluster://h1:p1,h2:p2`.
    pub fn cluster_nodes<I, S>(mut self, nodes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let nodes: Vec<String> = nodes.into_iter().map(|n| n.as_ref().to_string()).collect();
        self.settings.url = format!("redis-cluster://{}", nodes.join(","));
        self
    }

    /// A master watched by Sentinel: the service name and some sentinels (`host:port`).
    /// Same as the URL `redis-sentinel://s1:p1,s2:p2?sentinelServiceName=NAME`.
    pub fn sentinel<I, S>(mut self, service: &str, sentinels: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let nodes: Vec<String> = sentinels
            .into_iter()
            .map(|n| n.as_ref().to_string())
            .collect();
        self.settings.url = format!(
            "redis-sentinel://{}?sentinelServiceName={service}",
            nodes.join(",")
        );
        self
    }

    /// The `<client_id>` part of every owner field. Two live clients must never share one.
    /// Default: a random UUID v4.
    pub fn client_id(mut self, id: impl Into<String>) -> Self {
        self.settings.client_id = id.into();
        self
    }

    /// A name for this client (1 to 64 of `A-Z a-z 0-9 . _ -`), so that people can tell who
    /// holds a lock: its command connections are named `relock:<client id>:<name>:<host>:<pid>`
    /// on the server (`CLIENT SETNAME`, again after each reconnect), which `relock status` and
    /// [`Lock::describe_owner`](crate::Lock::describe_owner) read. The owner field Redisson reads is unchanged. It needs
    /// the `client|setname` permission; without it, a warning says so and nothing else
    /// changes. Default: no name (nothing is sent).
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.settings.client_name = Some(name.into());
        self
    }

    /// The lease of locks taken without [`Lock::with_lease`](crate::Lock::with_lease); the watchdog renews them every
    /// lease/3. Default: 30 s.
    pub fn watchdog_lease(mut self, lease: Duration) -> Self {
        self.settings.watchdog_lease = lease;
        self
    }

    /// How long connecting may take before [`Error::Connection`]: `build()` (and
    /// [`Client::connect`]) never takes longer. A server that accepts the TCP connection but
    /// does not answer fails sooner, after [`command_timeout`](Self::command_timeout), which
    /// bounds each command of the handshake (`AUTH`, `PING`, `CLIENT ID`, `INFO`). Default: 5 s.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.settings.connect_timeout = timeout;
        self
    }

    /// How long one command may take before [`Error::Timeout`]. Default: 3 s.
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.settings.command_timeout = timeout;
        self
    }

    /// Command connections. Scripts are pipelined on each connection and concurrent lock
    /// operations are coalesced (see [`coalesce`](Self::coalesce)), so a few connections are
    /// enough: on a small machine the client's CPU, not the connection count, limits
    /// throughput (the repository's
    /// [docs/performance.md](https://github.com/relock-rs/relock/blob/main/docs/performance.md)
    /// has the sweep). Default: 4.
    pub fn connections(mut self, n: usize) -> Self {
        self.settings.connections = n;
        self
    }

    /// Sets a kind's own setting (each kind's builder methods call this, in its own file).
    pub(crate) fn kind_setting<T: KindSetting + 'static>(mut self, setting: T) -> Self {
        self.settings.kinds.set(setting);
        self
    }

    /// Whether plain-lock acquires and releases that are waiting for a connection are sent
    /// together, in one script call (each runs exactly as it would alone, one after the other;
    /// an operation's error is its own). Under load this saves most of the client's and the
    /// kernel's work per operation; an idle client sends each one at once, alone. Never on a
    /// Redis Cluster (one call serves one slot) nor with [`sync_replicas`](Self::sync_replicas).
    /// Default: true.
    pub fn coalesce(mut self, on: bool) -> Self {
        self.settings.coalesce = on;
        self
    }

    /// On a Redis Cluster: sharded pub/sub (the default, as Redisson 3.29+ on Redis 7) or
    /// classic pub/sub (as older Redisson, or `shardedSubscriptionMode: OFF`) for lock
    /// channels. See [`ClusterPubSub`].
    pub fn cluster_pubsub(mut self, mode: ClusterPubSub) -> Self {
        self.settings.cluster_pubsub = mode;
        self
    }

    /// TLS: trust these PEM certificates (the CA that signed the server's certificate) instead
    /// of the system's root certificates. Needs a `rediss…://` URL.
    pub fn tls_ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.settings.tls.ca_pem = Some(pem.into());
        self
    }

    /// TLS: present this client certificate chain and private key (both PEM), for servers that
    /// verify clients (`tls-auth-clients yes`). Needs a `rediss…://` URL.
    pub fn tls_client_cert_pem(
        mut self,
        cert_chain: impl Into<Vec<u8>>,
        private_key: impl Into<Vec<u8>>,
    ) -> Self {
        self.settings.tls.client = Some((cert_chain.into(), private_key.into()));
        self
    }

    /// TLS: accept any server certificate, without checking who signed it or its name.
    /// **Only for tests**: it makes the connection open to a man in the middle. Needs a
    /// `rediss…://` URL.
    pub fn tls_insecure_skip_verify(mut self, skip: bool) -> Self {
        self.settings.tls.insecure = skip;
        self
    }

    /// How `lock()` calls re-enter holds. Default: [`Reentrancy::Scoped`], re-entry only
    /// inside a hold's scope ([`LockGuard::scope`](crate::LockGuard::scope),
    /// [`Lock::with`](crate::Lock::with)) or an [`Owner::scope`](crate::Owner::scope), so that concurrent
    /// futures exclude each other as with `tokio::sync::Mutex`.
    ///
    /// [`Reentrancy::PerTask`] makes the current task the owner, as Redisson makes the thread.
    /// **Hazard:** every future polled by one task is then one owner: branches of `join!`,
    /// `select!`, `FuturesUnordered` and successive `block_on` bodies on one thread re-enter
    /// each other's holds and run their critical sections at the same time.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// let client = relock::Client::builder()
    ///     .url(url)
    ///     .reentrancy(relock::Reentrancy::PerTask) // code written for Redisson's thread model
    ///     .build()
    ///     .await?;
    /// # let lock = client.lock("doctest:reentrancy");
    /// # let outer = lock.lock().await?;
    /// # let inner = lock.lock().await?; // the same task: re-enters, no scope needed
    /// # assert_eq!(lock.hold_count().await?, 2);
    /// # inner.unlock().await?;
    /// # outer.unlock().await?;
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub fn reentrancy(mut self, mode: Reentrancy) -> Self {
        self.settings.reentrancy = mode;
        self
    }

    pub(crate) fn connect_timeout_setting(&self) -> Duration {
        self.settings.connect_timeout
    }

    pub(crate) fn connection_count(&self) -> usize {
        self.settings.connections
    }

    /// Validates the settings and the URL without connecting.
    pub(crate) fn check(&self) -> Result<FredConfig> {
        self.validate()?;
        let url = fred_url(&self.settings.url)?;
        let tls = url.starts_with("rediss") || url.starts_with("valkeys");
        if self.settings.tls.is_set() && !tls {
            return Err(Error::invalid(
                "tls",
                format!(
                    "TLS options were set but `{}` is not a TLS URL: use rediss://, rediss-cluster:// or rediss-sentinel://",
                    redact::url(&self.settings.url)
                ),
            ));
        }
        let mut fred_config = FredConfig::from_url(&url).map_err(|e| {
            let raw = &self.settings.url;
            Error::invalid(
                "url",
                redact::in_text(&format!("`{}`: {}", raw, e.details()), raw),
            )
        })?;
        if tls {
            fred_config.tls = Some(tls::config(&self.settings.tls)?);
        }
        sentinel_credentials(&mut fred_config, &url);
        Ok(fred_config)
    }

    /// After every fresh acquisition, wait (Redis `WAIT`) until `replicas` replicas of the
    /// lock's master acknowledged it, for at most `timeout`; if fewer did, release the lock and
    /// return [`Error::ReplicationFailed`]. This narrows the window in which a failover to a
    /// replica loses an acknowledged lock (see
    /// [`guide::safety`](crate::guide::safety#replication-cluster-and-sentinel)). Redis 7.0's
    /// `WAIT` is used (acknowledged in replica memory; `WAITAOF`, 7.2+, is not used). Default:
    /// off.
    pub fn sync_replicas(mut self, replicas: u32, timeout: Duration) -> Self {
        self.settings.sync_replicas = Some((replicas, timeout));
        self
    }

    /// Fencing counters that never expire, as Redisson's `RFencedLock` keeps them: one small
    /// key (`redisson_lock_token:{name}`) per lock name ever taken, left on the server.
    ///
    /// Turn it on in every relock client that shares lock names with Java services using
    /// `RFencedLock` (or any client that creates the counter at 1 when it is missing): with
    /// the default 1 s counter life, a Java client that finds relock's counter expired starts
    /// again at 1, below relock's earlier tokens, so a resource that compares tokens of both
    /// would take Java's as stale-but-newer. With it on, tokens rise for every client of the
    /// name, whichever side came first
    /// ([`guide::safety`](crate::guide::safety#sharing-names-with-redissons-rfencedlock)).
    ///
    /// Either way relock never gives an expiry to, lowers or deletes a counter it found
    /// without one. Default: off (the counter lives 1 s past its seed; nothing is left behind).
    pub fn persistent_fencing_counters(mut self, on: bool) -> Self {
        self.settings.persistent_counters = on;
        self
    }

    /// Whether each hold listens on its lock's channel, so that its `lost()` fires within a
    /// round trip of a force-unlock or of any deletion announced there (Redisson's
    /// `forceUnlock`, `relock force-unlock`), not at the watchdog's next renewal (up to a third
    /// of the lease later). A hold subscribes once it has lived 30 ms (shorter holds cost
    /// nothing), and at most 10,000 holds of a client listen at once (the rest rely on the
    /// renewal). A permit of a permit-expirable semaphore listens on the semaphore's channel
    /// the same way, so a `release_id` of it elsewhere (Redisson's `release(id)`) fires its
    /// `lost()` at once. Off: one subscription less per held lock or permit, and a deletion is
    /// noticed by the renewal alone. Default: on.
    pub fn watch_holds(mut self, on: bool) -> Self {
        self.settings.watch_holds = on;
        self
    }

    /// A prefix put before every name this client's locks, semaphores and latches are given
    /// (`key_prefix("locks:")` makes `client.lock("orders:42")` the key `locks:orders:42`),
    /// so that lock keys can never collide with the application's data keys. Java services
    /// that share these locks must use the full name. Default: none (Redisson's names, as
    /// given). It may not contain `{` or `}` (the name's own hash tag decides its cluster
    /// slot). [`MAX_NAME_LEN`](crate::MAX_NAME_LEN) counts the prefix. A
    /// [`QuorumClient`](crate::QuorumClient) has no prefix of its own: give it prefixed names.
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.settings.key_prefix = prefix.into();
        self
    }

    fn validate(&self) -> Result<()> {
        let s = &self.settings;
        if let Some(name) = &s.client_name {
            identity::validate(name)?;
            // The client id goes into the connection name too, which Redis takes only as
            // printable ASCII without spaces.
            if !s.client_id.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(Error::invalid(
                    "client_id",
                    format!(
                        "`{}`: with a client_name, the client id must be printable ASCII without spaces (it is part of the connection's name on the server)",
                        crate::error::short(&s.client_id)
                    ),
                ));
            }
        }
        if s.key_prefix.contains(['{', '}']) || s.key_prefix.len() > 256 {
            return Err(Error::invalid(
                "key_prefix",
                format!(
                    "`{}`: a key prefix may not contain `{{` or `}}` (each name's own hash tag decides its cluster slot) and may have at most 256 bytes",
                    crate::error::short(&s.key_prefix)
                ),
            ));
        }
        if s.client_id.is_empty() || s.client_id.contains(':') {
            return Err(Error::invalid(
                "client_id",
                format!("`{}`: must be non-empty and contain no `:` (it prefixes every hold's field `<client_id>:<n>`)", s.client_id),
            ));
        }
        validate_lease("watchdog_lease", s.watchdog_lease)?;
        if s.watchdog_lease < Duration::from_millis(30) {
            return Err(Error::invalid(
                "watchdog_lease",
                format!(
                    "{} is too short to renew every lease/3; use at least 30 ms",
                    crate::error::Human(s.watchdog_lease)
                ),
            ));
        }
        if let Some((n, t)) = s.sync_replicas {
            if n == 0 || t.is_zero() || t > s.command_timeout {
                return Err(Error::invalid(
                    "sync_replicas",
                    format!(
                        "({n}, {}): need at least 1 replica and a timeout above zero and at most the command timeout ({})",
                        crate::error::Human(t),
                        crate::error::Human(s.command_timeout)
                    ),
                ));
            }
        }
        s.kinds.check()?;
        for (name, d) in [
            ("connect_timeout", s.connect_timeout),
            ("command_timeout", s.command_timeout),
        ] {
            if d.is_zero() {
                return Err(Error::invalid(name, "must be greater than zero"));
            }
        }
        if s.connections == 0 || s.connections > 256 {
            return Err(Error::invalid(
                "connections",
                format!("{}: use 1 to 256", s.connections),
            ));
        }
        Ok(())
    }

    /// Connects, starts the watchdog and the waiter dispatcher.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad setting or URL, [`Error::Connection`] (naming the
    /// URL) when Redis cannot be reached within the connect timeout.
    ///
    /// # Cancel safety
    /// Dropping the future closes whatever connections it had opened.
    pub async fn build(self) -> Result<Client> {
        let fred_config = self.check()?;
        let pool = self
            .pool_builder(fred_config.clone())
            .build_pool(self.settings.connections)
            .map_err(|e| connection_error(&self.settings, e.to_string()))?;
        let s = self.settings;
        let subscriber = fred_builder(fred_config, &s)
            .build_subscriber_client()
            .map_err(|e| connection_error(&s, e.to_string()))?;
        let cluster = deployment(&s.url) == Deployment::Cluster;
        start(s, pool, subscriber, cluster, true).await
    }

    /// A fred builder for this builder's URL (with its credentials and TLS) and the settings
    /// relock gives its own command connections: the command and connect timeouts, one
    /// attempt per command (an interrupted command fails rather than being sent again), the
    /// check for unresponsive connections, and the reconnect policy (not the client name, nor
    /// the connection count: you choose it in `build_pool`). For a pool of your own that you
    /// pass to [`build_with_pool`](Self::build_with_pool), or that runs your commands beside
    /// relock's with the same timeouts.
    ///
    /// The builder holds the URL's credentials, and fred's `Debug` output of it shows them:
    /// do not log it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use relock::fred::interfaces::ClientLike;
    /// use std::time::Duration;
    ///
    /// let settings = relock::Client::builder()
    ///     .url("redis://127.0.0.1:6379")
    ///     .command_timeout(Duration::from_secs(2));
    /// let fred = settings.fred_builder()?;
    /// assert_eq!(fred.get_connection_config().max_command_attempts, 1);
    /// assert_eq!(fred.get_performance_config().default_command_timeout, Duration::from_secs(2));
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: the rest skipped"); return Ok(()) };
    /// # let settings = settings.url(&url);
    /// # let fred = settings.fred_builder()?;
    /// let pool = fred.build_pool(4)?;
    /// let client = settings.build_with_pool(pool).await?;
    /// # client.shutdown().await;
    /// # client.pool().quit().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad setting or URL, as [`build`](Self::build).
    pub fn fred_builder(&self) -> Result<Builder> {
        Ok(self.pool_builder(self.check()?))
    }

    /// The builder of the command pool for `config` (see [`fred_builder`](Self::fred_builder)).
    fn pool_builder(&self, config: FredConfig) -> Builder {
        if self.settings.auto_reconnect {
            fred_builder(config, &self.settings)
        } else {
            // fred's default policy: never reconnect.
            fred_command_settings(Builder::from_config(config), &self.settings)
        }
    }

    /// Builds a client on a fred pool you already have, for its commands. Waiters still need a
    /// subscriber connection of their own (a connection in subscribed mode cannot run
    /// commands): relock opens one to the same server(s), with the pool's configuration (URL,
    /// credentials, TLS) and relock's reconnect policy and timeouts. The pool is connected
    /// first if it is not yet.
    ///
    /// relock's own pools never resend a command after a reconnect; yours may (fred's
    /// `max_command_attempts`). That is safe, because every hold has its own field (a resent
    /// acquire is refused, a resent release or renewal is idempotent); a semaphore's
    /// release, a latch's count-down and a rate limiter's release carry a request id, so a
    /// resent copy counts nothing. Still, a resent acquire whose first run succeeded leaves a
    /// hold that expires with its lease (a rate limiter's, permits that count until their
    /// interval ends): prefer
    /// `max_command_attempts = 1` and a command timeout on the pool. The URL, connection count
    /// and TLS settings of this builder are not used.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use relock::fred::{interfaces::ClientLike, types::{config::Config, Builder}};
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let pool = Builder::from_config(Config::from_url(&url)?).build_pool(2)?;
    /// let client = relock::Client::builder().build_with_pool(pool).await?;
    /// let guard = client.lock("refunds:3").lock().await?;
    /// # assert!(client.lock("refunds:3").is_locked().await?);
    /// # guard.unlock().await?;
    /// # client.shutdown().await;
    /// # client.pool().quit().await?; // the pool is yours to close
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`build`](ClientBuilder::build).
    ///
    /// # Cancel safety
    /// As [`build`](ClientBuilder::build); the pool is left as it is.
    pub async fn build_with_pool(mut self, pool: Pool) -> Result<Client> {
        let config = pool.next().client_config();
        self.settings.url = describe(&config);
        self.validate()?;
        let s = self.settings;
        let cluster = config.server.is_clustered();
        let subscriber = fred_builder(config, &s)
            .build_subscriber_client()
            .map_err(|e| connection_error(&s, e.to_string()))?;
        start(s, pool, subscriber, cluster, false).await
    }
}

// The client's constructors live beside its builder, so that the client (a lower layer) does
// not name the builder that makes it.
impl Client {
    /// Connects with default settings; see [`ClientBuilder`] for the others.
    ///
    /// # Errors
    /// As [`ClientBuilder::build`].
    ///
    /// # Cancel safety
    /// As [`ClientBuilder::build`].
    pub async fn connect(url: impl Into<String>) -> Result<Client> {
        ClientBuilder::default().url(url).build().await
    }

    /// A builder for a client with non-default settings.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }
}
