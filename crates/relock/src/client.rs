//! [`Client`]: the connections, the background tasks, and the settings every lock shares.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fred::clients::{Pool, SubscriberClient};
use fred::interfaces::ClientLike;
use fred::types::config::{Config as FredConfig, ReconnectPolicy};
use fred::types::Builder;
use tokio::sync::watch;

use crate::error::{Error, Result};
use crate::holds::FieldMaker;
use crate::keys::{LockKeys, Side};
use crate::pubsub::PubSub;
use crate::reentry::Reentrancy;
use crate::tls::TlsSettings;
use crate::{reentry, scripts, watchdog};

/// Longest lease accepted: PEXPIRE takes milliseconds, and tokens are µs in a Lua double.
const MAX_LEASE: Duration = Duration::from_secs(60 * 60 * 24 * 365 * 30);
/// How long a fencing counter lives once seeded from the server clock (or raised by a quorum
/// write-back): a seed after it expires is this far past every token it handed out
/// (`lua/lib/mint.lua`, docs/safety.md).
const COUNTER_GRACE: Duration = Duration::from_secs(1);
/// How often the subscriber connection is pinged while waiters rely on it, so that a silently
/// dead connection is noticed within this plus one command timeout.
const SUBSCRIBER_KEEPALIVE: Duration = Duration::from_secs(1);
/// How often a waiter re-checks the lock while its client's subscriber connection is down.
const SUBSCRIBER_DOWN_RECHECK: Duration = Duration::from_millis(100);
/// Locks per renewal script call, as Redisson's `lockWatchdogBatchSize`.
const RENEW_BATCH: usize = 100;

/// Settings shared by every lock of a client. Built by [`ClientBuilder`]. Its `Debug` shows
/// the URL without credentials.
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) url: String,
    pub(crate) client_id: String,
    pub(crate) watchdog_lease: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) command_timeout: Duration,
    pub(crate) connections: usize,
    pub(crate) counter_grace: Duration,
    pub(crate) persistent_counters: bool,
    pub(crate) watch_holds: bool,
    pub(crate) key_prefix: String,
    pub(crate) renew_batch: usize,
    pub(crate) fair_heartbeat: Duration,
    pub(crate) sync_replicas: Option<(u32, Duration)>,
    pub(crate) coalesce: bool,
    pub(crate) reentrancy: Reentrancy,
    pub(crate) tls: TlsSettings,
    pub(crate) cluster_pubsub: ClusterPubSub,
    /// Whether the command connections reconnect by themselves. A quorum node's do not: a
    /// connection then belongs to one server instance for its whole life, so a vote that it
    /// carries comes from the instance whose run id and uptime were checked on it (a
    /// reconnect could reach a server that restarted empty, before anyone noticed).
    pub(crate) auto_reconnect: bool,
}

/// Which pub/sub a Redis Cluster client uses for lock channels. Set with
/// [`ClientBuilder::cluster_pubsub`]; ignored outside a cluster.
///
/// Redisson has the same choice (`shardedSubscriptionMode` in its Cluster configuration, since
/// 3.29.0; default `AUTO`: sharded on Redis 7.0 and later). Services that share a lock must
/// use the same one, or they do not hear each other's releases (they still wake at the
/// holder's lease end).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ClusterPubSub {
    /// `SPUBLISH` / `SSUBSCRIBE` (Redis 7.0+): a release reaches only the shard of the lock's
    /// slot. Matches Redisson 3.29+ with its default `shardedSubscriptionMode: AUTO` on Redis 7.
    /// The default.
    #[default]
    Sharded,
    /// `PUBLISH` / `SUBSCRIBE`: a release is broadcast to every node. Matches Redisson before
    /// 3.29.0, or with `shardedSubscriptionMode: OFF`.
    Classic,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("url", &crate::redact::url(&self.url))
            .field("client_id", &self.client_id)
            .field("watchdog_lease", &self.watchdog_lease)
            .field("connect_timeout", &self.connect_timeout)
            .field("command_timeout", &self.command_timeout)
            .field("connections", &self.connections)
            .field("fair_heartbeat", &self.fair_heartbeat)
            .field("sync_replicas", &self.sync_replicas)
            .field("coalesce", &self.coalesce)
            .field("reentrancy", &self.reentrancy)
            .field("tls", &self.tls)
            .field("cluster_pubsub", &self.cluster_pubsub)
            .finish_non_exhaustive()
    }
}

/// Builds a [`Client`] with explicit settings.
///
/// ```no_run
/// # async fn f() -> relock::Result<()> {
/// use std::time::Duration;
/// let client = relock::Client::builder()
///     .url("redis://127.0.0.1:6379")
///     .client_id("billing-7")
///     .watchdog_lease(Duration::from_secs(10))
///     .build()
///     .await?;
/// # Ok(()) }
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
                fair_heartbeat: Duration::from_secs(5),
                sync_replicas: None,
                coalesce: true,
                reentrancy: Reentrancy::Scoped,
                tls: TlsSettings::default(),
                cluster_pubsub: ClusterPubSub::Sharded,
                auto_reconnect: true,
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
    /// `unix:///path/to/redis.sock` for a local socket. `rediss://`, `rediss-cluster://` and
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
    /// throughput (`docs/performance.md` has the sweep). Default: 4.
    pub fn connections(mut self, n: usize) -> Self {
        self.settings.connections = n;
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

    /// How long a fair-lock waiter keeps its place in line without a heartbeat. Each client
    /// refreshes its waiters every deadline/5, so a waiter whose process died stops holding
    /// up the line after at most this long. It is also the first lease of a watchdog hold
    /// that a release hands to a waiter (renewed to the watchdog lease soon after), so a
    /// waiter that died just before it was handed the lock holds it no longer than this.
    /// Default: 5 s; at least 100 ms.
    pub fn fair_heartbeat(mut self, deadline: Duration) -> Self {
        self.settings.fair_heartbeat = deadline;
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
    /// ```no_run
    /// # async fn f() -> relock::Result<()> {
    /// let client = relock::Client::builder()
    ///     .url("redis://127.0.0.1:6379")
    ///     .reentrancy(relock::Reentrancy::PerTask) // code written for Redisson's thread model
    ///     .build()
    ///     .await?;
    /// # Ok(()) }
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
                    crate::redact::url(&self.settings.url)
                ),
            ));
        }
        let mut fred_config = FredConfig::from_url(&url).map_err(|e| {
            let raw = &self.settings.url;
            Error::invalid(
                "url",
                crate::redact::in_text(&format!("`{}`: {}", raw, e.details()), raw),
            )
        })?;
        if tls {
            fred_config.tls = Some(crate::tls::config(&self.settings.tls)?);
        }
        sentinel_credentials(&mut fred_config, &url);
        Ok(fred_config)
    }

    /// After every fresh acquisition, wait (Redis `WAIT`) until `replicas` replicas of the
    /// lock's master acknowledged it, for at most `timeout`; if fewer did, release the lock and
    /// return [`Error::ReplicationFailed`]. This narrows the window in which a failover to a
    /// replica loses an acknowledged lock (see `docs/safety.md`). Redis 7.0's `WAIT` is used
    /// (acknowledged in replica memory; `WAITAOF`, 7.2+, is not used). Default: off.
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
    /// name, whichever side came first (`docs/safety.md`, "Sharing names with Redisson").
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
                    "{:?} is too short to renew every lease/3; use at least 30 ms",
                    s.watchdog_lease
                ),
            ));
        }
        if let Some((n, t)) = s.sync_replicas {
            if n == 0 || t.is_zero() || t > s.command_timeout {
                return Err(Error::invalid(
                    "sync_replicas",
                    format!(
                        "({n}, {t:?}): need at least 1 replica and a timeout above zero and at most the command timeout ({:?})",
                        s.command_timeout
                    ),
                ));
            }
        }
        if s.fair_heartbeat < Duration::from_millis(100) || s.fair_heartbeat > MAX_LEASE {
            return Err(Error::invalid(
                "fair_heartbeat",
                format!(
                    "{:?}: use at least 100 ms (waiters refresh every deadline/5) and at most 30 years",
                    s.fair_heartbeat
                ),
            ));
        }
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
        let s = self.settings;
        let builder = fred_builder(fred_config.clone(), &s);
        let pool = if s.auto_reconnect {
            builder.build_pool(s.connections)
        } else {
            // fred's default policy: never reconnect.
            fred_command_settings(Builder::from_config(fred_config), &s).build_pool(s.connections)
        }
        .map_err(|e| connection_error(&s, e.to_string()))?;
        let subscriber = builder
            .build_subscriber_client()
            .map_err(|e| connection_error(&s, e.to_string()))?;
        let cluster = deployment(&s.url) == Deployment::Cluster;
        start(s, pool, subscriber, cluster, true).await
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
    /// release and a latch's count-down carry a request id, so a resent copy counts nothing.
    /// Still, a resent acquire whose first run succeeded leaves a hold that expires with its
    /// lease: prefer
    /// `max_command_attempts = 1` and a command timeout on the pool. The URL, connection count
    /// and TLS settings of this builder are not used.
    ///
    /// ```no_run
    /// # async fn f(pool: relock::fred::clients::Pool) -> relock::Result<()> {
    /// let client = relock::Client::builder().build_with_pool(pool).await?;
    /// let guard = client.lock("orders:42").lock().await?;
    /// # drop(guard); Ok(()) }
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

/// A fred builder for `config` with relock's policies: fred's defaults never reconnect and
/// never time out; both are wrong for locks.
fn fred_builder(config: FredConfig, s: &Settings) -> Builder {
    let mut builder = Builder::from_config(config);
    builder.set_policy(ReconnectPolicy::new_exponential(0, 50, 2_000, 2));
    fred_command_settings(builder, s)
}

/// relock's timeouts and single command attempt on a fred builder.
fn fred_command_settings(mut builder: Builder, s: &Settings) -> Builder {
    builder
        .with_connection_config(|c| {
            c.connection_timeout = s.connect_timeout;
            c.internal_command_timeout = s.command_timeout;
            // A command is written at most once: a resent acquire could leave a hold nobody
            // knows of. An interrupted command fails instead, and the caller cleans up.
            c.max_command_attempts = 1;
            c.unresponsive.max_timeout = Some(s.command_timeout);
            c.unresponsive.interval = (s.command_timeout / 4).max(Duration::from_millis(50));
        })
        .with_performance_config(|p| {
            p.default_command_timeout = s.command_timeout;
            p.broadcast_channel_capacity = 4096;
        });
    builder
}

/// What `lua/lib/shape.lua` found, from its `NOTALOCK <found>` error, without the script
/// location Redis appends (` script: <sha>, on @user_script:84.`).
fn not_a_lock_found(details: &str) -> String {
    let found = details.split_once("NOTALOCK ").map_or("", |(_, f)| f);
    let found = found.split_once(" script: ").map_or(found, |(f, _)| f);
    found.trim_end().to_string()
}

/// fred's error at connect time, typed: refused credentials, a refused permission and a bad
/// setting are not connection trouble (they are not transient); anything else is
/// [`connection_error`].
fn connect_error(s: &Settings, e: fred::error::Error) -> Error {
    if let Some(typed) = refusal(&crate::redact::url(&s.url), "connect", "", &e) {
        return typed;
    }
    connection_error(s, e.to_string())
}

/// The server's refusals that a retry cannot cure, as their own variants.
fn refusal(url: &str, operation: &'static str, key: &str, e: &fred::error::Error) -> Option<Error> {
    let d = e.details();
    let has = |code: &str| {
        d.starts_with(code) || d.contains(&format!(" {code} ")) || d.contains(&format!(": {code}"))
    };
    if has("WRONGPASS") || has("NOAUTH") || d.contains("invalid username-password") {
        return Some(Error::Authentication {
            url: url.to_string(),
            source: e.clone(),
        });
    }
    // Inside a script Redis 7 does not say NOPERM for a refused channel or command.
    if has("NOPERM")
        || d.contains("can't publish to the channel")
        || d.contains("can't run this command")
        || d.contains("no permissions to")
    {
        return Some(Error::Permission {
            operation,
            server: url.to_string(),
            key: key.to_string(),
            source: e.clone(),
        });
    }
    if d.contains("DB index is out of range") || d.contains("invalid DB index") {
        return Some(Error::Configuration {
            url: url.to_string(),
            source: e.clone(),
        });
    }
    None
}

/// `Os { code: 111, kind: ConnectionRefused, message: "Connection refused" }` (an I/O error's
/// `Debug`, which fred puts in its messages) as `Connection refused (os error 111)`.
fn tidy_io(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("Os { code: ") {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let Some(inner) = tail
            .find(" }")
            .and_then(|end| tail.get("Os { code: ".len()..end))
        else {
            break;
        };
        let end = "Os { code: ".len() + inner.len();
        let code = inner.split(',').next().unwrap_or("").trim();
        let message = inner
            .split_once("message: \"")
            .map_or("", |(_, m)| m.trim_end_matches('"'));
        out.push_str(&format!("{message} (os error {code})"));
        rest = &tail[end + 2..];
    }
    out.push_str(rest);
    out
}

/// A connection error naming the server without credentials, with a hint for TLS trouble.
fn connection_error(s: &Settings, cause: String) -> Error {
    let cause = tidy_io(&cause);
    let mut cause = crate::redact::in_text(&cause, &s.url);
    let tls = s.url.starts_with("rediss");
    if !tls
        && (cause.contains("reset by peer")
            || cause.contains("unexpected end of file")
            || cause.contains("UnexpectedEof"))
    {
        cause.push_str(
            "; the server closed the connection at once: it may speak TLS only (use a rediss:// URL)",
        );
    }
    if tls
        && (cause.contains("timed out")
            || cause.starts_with("no connection within")
            || cause.contains("InvalidContentType")
            || cause.contains("CorruptMessage"))
    {
        cause.push_str(
            "; no TLS handshake completed: the server may not speak TLS on this port (use a redis:// URL)",
        );
    }
    if cause.contains("Failed to connect to all sentinel nodes") {
        // fred drops each sentinel's own error (a refused connection, WRONGPASS).
        if cause.ends_with('.') {
            cause.pop();
        }
        cause.push_str(
            "; no sentinel accepted the connection and the credentials (a sentinel's own error \
             is not reported): the sentinels get sentinelUsername/sentinelPassword from the \
             URL's query if given, else the URL's user:password@ (docs/operations.md, Credentials)",
        );
    }
    if cause.contains("InvalidCertificate") || cause.contains("UnknownIssuer") {
        cause.push_str(
            "; the server's TLS certificate was rejected: give the CA that signed it \
             with ClientBuilder::tls_ca_pem, and use a host name (or IP) that the \
             certificate names",
        );
    }
    Error::Connection {
        url: crate::redact::url(&s.url),
        cause,
    }
}

/// A URL-like description of a fred configuration's servers (no credentials), for messages.
fn describe(config: &FredConfig) -> String {
    use fred::types::config::ServerConfig;
    let tls = if config.uses_tls() { "s" } else { "" };
    match &config.server {
        ServerConfig::Centralized { server } => format!("redis{tls}://{server}"),
        ServerConfig::Clustered { hosts, .. } => format!(
            "redis{tls}-cluster://{}",
            hosts
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        ),
        ServerConfig::Sentinel {
            hosts,
            service_name,
            ..
        } => format!(
            "redis{tls}-sentinel://{}?sentinelServiceName={service_name}",
            hosts
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        ),
        #[allow(unreachable_patterns)]
        _ => "redis (fred pool)".to_string(),
    }
}

/// Connects `pool` (if it is not yet) and `subscriber`, then starts the client's tasks.
/// `owns_pool`: shutdown and drop close the pool (not a pool the caller gave us).
async fn start(
    s: Settings,
    pool: Pool,
    subscriber: SubscriberClient,
    cluster: bool,
    owns_pool: bool,
) -> Result<Client> {
    // Without reconnects (a quorum node), a failed connection never comes back: say so for the
    // owner to replace the set. Subscribed before `init`, so that no failure passes unseen; as
    // state, so that one that came before anyone looked is still there.
    let pool_failed = watch::channel(false);
    if !s.auto_reconnect {
        use fred::interfaces::EventInterface;
        for c in pool.clients() {
            let (mut errors, failed) = (c.error_rx(), pool_failed.0.clone());
            // Ends with the client (its sender closes) or at the first connection failure;
            // an error reply (NOPERM, BUSY) is the server's answer, not a broken connection.
            tokio::spawn(async move {
                while let Ok((e, _)) = errors.recv().await {
                    if matches!(
                        e.kind(),
                        fred::error::ErrorKind::IO | fred::error::ErrorKind::Canceled
                    ) {
                        failed.send_replace(true);
                        return;
                    }
                }
            });
        }
    }
    {
        let closer = CloseOnDrop {
            pool: (!pool.is_connected()).then(|| pool.clone()),
            subscriber: Some(subscriber.clone()),
        };
        let connect = async {
            if !pool.is_connected() {
                pool.init().await?;
            }
            subscriber.init().await?;
            Ok::<_, fred::error::Error>(())
        };
        match tokio::time::timeout(s.connect_timeout, connect).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(connect_error(&s, e)),
            Err(_) => {
                return Err(connection_error(
                    &s,
                    format!("no connection within {:?}", s.connect_timeout),
                ))
            }
        }
        closer.disarm();
    }
    // No `manage_subscriptions()`: fred would re-subscribe its own list after a reconnect,
    // including a channel whose UNSUBSCRIBE failed during the outage. The dispatcher re-subscribes
    // exactly the channels in use, and confirms each, on every reconnect (`PubSub`).
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let sharded = cluster && s.cluster_pubsub == ClusterPubSub::Sharded;
    let pubsub = PubSub::new(subscriber, sharded, cluster);
    pubsub.spawn_dispatcher(shutdown_rx.clone());
    let stopping = watch::channel(false).0;
    pubsub.spawn_keepalive(
        SUBSCRIBER_KEEPALIVE,
        s.command_timeout,
        stopping.subscribe(),
    );
    pubsub.spawn_topology_watch(&pool, shutdown_rx.clone());
    let shared = crate::backend::Shared::new(reentry::next_client_id());
    let batcher = (s.coalesce && !cluster && s.sync_replicas.is_none()).then(|| {
        crate::batch::Batcher::spawn(
            pool.clone(),
            pool.size(),
            shared.in_place.clone(),
            shared.tracker.clone(),
        )
    });
    let inner = Arc::new(Inner {
        pool_failed: pool_failed.1,
        batcher,
        shared,
        fields: FieldMaker::new(&s.client_id),
        settings: s,
        pool,
        pubsub,
        line: crate::line::Line::default(),
        heartbeats: std::sync::Once::new(),
        runtime: tokio::runtime::Handle::current(),
        watches: Arc::default(),
        permits: crate::leases::Leases::default(),
        permit_renewal: std::sync::Once::new(),
        owns_pool,
        parked: AtomicUsize::new(0),
        rediscovering: Arc::new(AtomicBool::new(false)),
        shutting_down: AtomicBool::new(false),
        stopping,
        shutdown: shutdown_tx,
    });
    watchdog::spawn(Arc::downgrade(&inner), shutdown_rx.clone());
    tracing::debug!(url = %inner.server(), client_id = %inner.settings.client_id, "relock client connected");
    Ok(Client { inner })
}

pub(crate) fn validate_lease(name: &'static str, lease: Duration) -> Result<()> {
    if lease < Duration::from_millis(1) {
        return Err(Error::invalid(
            name,
            format!("{lease:?}: a lease must be at least 1 ms"),
        ));
    }
    if lease > MAX_LEASE {
        return Err(Error::invalid(
            name,
            format!("{lease:?}: a lease must be at most 30 years"),
        ));
    }
    Ok(())
}

/// Which kind of deployment a URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Deployment {
    Single,
    Cluster,
    Sentinel,
}

pub(crate) fn deployment(url: &str) -> Deployment {
    match url.split("://").next().unwrap_or_default() {
        "redis-cluster" | "valkey-cluster" | "rediss-cluster" | "valkeys-cluster" => {
            Deployment::Cluster
        }
        "redis-sentinel" | "valkey-sentinel" | "rediss-sentinel" | "valkeys-sentinel" => {
            Deployment::Sentinel
        }
        _ => Deployment::Single,
    }
}

/// The credentials a Sentinel client gives the sentinels: `sentinelUsername` and
/// `sentinelPassword` from the URL's query when present (an empty `sentinelPassword=` means
/// the sentinels need none), else the URL's own `user:password@`, which then serves the
/// sentinels and the master alike.
fn sentinel_credentials(config: &mut FredConfig, url: &str) {
    use fred::types::config::ServerConfig;
    let query = url.split_once('?').map_or("", |(_, q)| q);
    let given = |key: &str| {
        query
            .split('&')
            .any(|kv| kv.split_once('=').map_or(kv, |(k, _)| k) == key)
    };
    let (main_user, main_password) = (config.username.clone(), config.password.clone());
    if let ServerConfig::Sentinel {
        username, password, ..
    } = &mut config.server
    {
        if !given("sentinelUsername") && !given("sentinelPassword") {
            *username = main_user;
            *password = main_password;
        }
        if password.as_deref() == Some("") {
            *password = None;
        }
        if username.as_deref() == Some("") {
            *username = None;
        }
    }
}

/// Checks the scheme, and turns the comma-separated node lists we accept
/// (`redis-cluster://h1:p1,h2:p2`) into fred's form (`redis-cluster://h1:p1?node=h2:p2`).
fn fred_url(url: &str) -> Result<String> {
    let shown = crate::redact::url(url);
    let bad = |why: &str| {
        Error::invalid(
            "url",
            format!(
                "`{shown}`: {why}. Expected redis://host:port, redis-cluster://host:port[,host:port...], \
                 redis-sentinel://host:port[,host:port...]?sentinelServiceName=NAME, unix:///path/to/redis.sock, \
                 or rediss… for TLS"
            ),
        )
    };
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(bad("no scheme"));
    };
    let scheme = match scheme {
        "redis" | "valkey" => "redis",
        "redis-cluster" | "valkey-cluster" => "redis-cluster",
        "redis-sentinel" | "valkey-sentinel" => "redis-sentinel",
        "rediss" | "valkeys" => "rediss",
        "rediss-cluster" | "valkeys-cluster" => "rediss-cluster",
        "rediss-sentinel" | "valkeys-sentinel" => "rediss-sentinel",
        "unix" | "redis+unix" | "valkey+unix" => {
            // fred's form: redis+unix://[[user:]password@]/path/to/redis.sock
            if !rest.contains('/') {
                return Err(bad(
                    "a unix socket URL needs a path: unix:///path/to/redis.sock",
                ));
            }
            return Ok(format!("redis+unix://{rest}"));
        }
        _ => return Err(bad("unknown scheme")),
    };
    let (hosts, query) = match rest.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (rest, None),
    };
    let (auth, hosts) = match hosts.rsplit_once('@') {
        Some((a, h)) => (Some(a), h),
        None => (None, hosts),
    };
    let (hosts, db) = match hosts.split_once('/') {
        Some((h, d)) => (h, Some(d)),
        None => (hosts, None),
    };
    let mut nodes = hosts.split(',').filter(|h| !h.is_empty());
    let Some(first) = nodes.next() else {
        return Err(bad("no host"));
    };
    let extra: Vec<&str> = nodes.collect();
    if (scheme == "redis" || scheme == "rediss") && !extra.is_empty() {
        return Err(bad(
            "several hosts need redis-cluster:// or redis-sentinel://",
        ));
    }
    if scheme.ends_with("-sentinel") && !query.is_some_and(|q| q.contains("sentinelServiceName=")) {
        return Err(bad("a sentinel URL needs ?sentinelServiceName=NAME"));
    }
    // fred sends no AUTH at all without a password: a sentinel user name alone would be
    // dropped without a word.
    let param = |key: &str| {
        query.and_then(|q| {
            q.split('&').find_map(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                (k == key).then_some(v)
            })
        })
    };
    if param("sentinelUsername").is_some_and(|u| !u.is_empty())
        && param("sentinelPassword").is_none_or(str::is_empty)
    {
        return Err(bad(
            "sentinelUsername needs a sentinelPassword (without one, no credentials would reach the sentinels)",
        ));
    }
    let mut out = format!("{scheme}://");
    if let Some(a) = auth {
        out.push_str(a);
        out.push('@');
    }
    out.push_str(first);
    if let Some(d) = db {
        out.push('/');
        out.push_str(d);
    }
    let mut params: Vec<String> = query.map(|q| vec![q.to_string()]).unwrap_or_default();
    params.extend(extra.iter().map(|n| format!("node={n}")));
    if !params.is_empty() {
        out.push('?');
        out.push_str(&params.join("&"));
    }
    Ok(out)
}

/// Closes fred clients on drop unless disarmed (an abandoned or failed `build`).
struct CloseOnDrop {
    pool: Option<Pool>,
    subscriber: Option<SubscriberClient>,
}

impl CloseOnDrop {
    fn disarm(mut self) {
        self.pool = None;
        self.subscriber = None;
    }
}

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        let (pool, sub) = (self.pool.take(), self.subscriber.take());
        if pool.is_none() && sub.is_none() {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                if let Some(p) = pool {
                    let _ = p.quit().await;
                }
                if let Some(s) = sub {
                    let _ = s.quit().await;
                }
            });
        }
    }
}

/// A connection to Redis and the home of its locks: cheap to clone, `Send + Sync`.
///
/// One client has a pool of command connections, one subscriber connection for waking
/// waiters, and one watchdog task that renews every lock taken without a fixed lease.
/// Dropping the last clone stops both tasks and closes the connections; locks still held
/// then expire after their lease. [`Client::shutdown`] releases them at once instead.
///
/// ```no_run
/// # async fn f() -> relock::Result<()> {
/// let client = relock::Client::connect("redis://127.0.0.1:6379").await?;
/// let guard = client.lock("orders:42").lock().await?;
/// // ... exclusive work, fenced by guard.fencing_token() ...
/// guard.unlock().await?;
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

#[derive(Debug)]
pub(crate) struct Inner {
    /// Becomes true when a command connection fails, for a client whose connections do not
    /// reconnect by themselves (a quorum node): the set must be replaced.
    pub(crate) pool_failed: watch::Receiver<bool>,
    /// Coalesces plain acquires and releases (none on a cluster, or when turned off).
    pub(crate) batcher: Option<crate::batch::Batcher>,
    /// Its id, its holds and its background work.
    pub(crate) shared: crate::backend::Shared,
    /// Makes every hold's own field.
    pub(crate) fields: FieldMaker,
    pub(crate) settings: Settings,
    pub(crate) pool: Pool,
    pub(crate) pubsub: Arc<PubSub>,
    /// Fair-lock waiters of this client, by field.
    pub(crate) line: crate::line::Line,
    /// Started with the first fair waiter (`fair::join_queue`), on `runtime`.
    pub(crate) heartbeats: std::sync::Once,
    /// The runtime the client was built on, where its background tasks run: a task started
    /// later (the fair heartbeat) runs there too, not on the runtime of whatever called it,
    /// which may end sooner.
    pub(crate) runtime: tokio::runtime::Handle,
    /// Holds waiting for their watch (`hold_watch`).
    pub(crate) watches: Arc<crate::hold_watch::Watches>,
    /// Permits held through this client's guards on permit-expirable semaphores.
    pub(crate) permits: crate::leases::Leases,
    /// Started with the first renewed permit (`permits`).
    pub(crate) permit_renewal: std::sync::Once,
    /// Whether the pool is ours to close (not one given to `build_with_pool`).
    owns_pool: bool,
    /// Acquire calls of this client asleep right now, waiting for a wake-up or a timer.
    pub(crate) parked: AtomicUsize,
    /// A reconnect to find the current master is under way.
    rediscovering: Arc<AtomicBool>,
    pub(crate) shutting_down: AtomicBool,
    /// Turns true when `shutdown()` begins (work in flight makes its last attempts).
    pub(crate) stopping: watch::Sender<bool>,
    pub(crate) shutdown: watch::Sender<bool>,
}

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

    /// The client's command connections, for the application's own commands on the same
    /// Redis (for example the writes a lock protects), whatever the URL's kind (cluster,
    /// sentinel, TLS, credentials). Don't `QUIT` them, and keep blocking commands off them:
    /// lock operations share them. Closed by [`shutdown`](Client::shutdown).
    ///
    /// ```no_run
    /// # async fn f(client: relock::Client) -> relock::Result<()> {
    /// use relock::fred::interfaces::KeysInterface;
    /// let guard = client.lock("orders:42").lock().await?;
    /// let _: () = client.pool().set("orders:42:state", "paid", None, None, false).await.unwrap();
    /// guard.unlock().await
    /// # }
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

    /// Fair-lock waiters of this client that may be in a line right now.
    pub fn queued_waiters(&self) -> usize {
        self.inner.line.queued_count()
    }

    /// Holds of this client whose watch listens on their lock's channel right now (at most
    /// 10,000; see [`ClientBuilder::watch_holds`]).
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
        // Release every hold and leave every line at once, not one round trip after another.
        let mut work = tokio::task::JoinSet::new();
        let first = inner.shared.holds.all();
        let first_permits = inner.permits.all();
        for hold in first.iter().cloned() {
            hold.mark_ended();
            let inner = inner.clone();
            work.spawn(async move {
                if let Err(e) = inner.run_release(&hold.keys, &hold.field, true).await {
                    tracing::warn!(lock = %hold.keys.lock, error = %e, "release at shutdown failed; the lease will expire");
                }
            });
        }
        for entry in inner.line.all() {
            let inner = inner.clone();
            work.spawn(async move {
                // After any attempt in flight, which could put us back in line.
                let _gate = entry.gate.lock().await;
                if entry.queued.swap(false, Ordering::SeqCst) {
                    let leave = crate::line::leave(inner.pool.next(), &entry, inner.publish_cmd(), inner.grace_ms());
                    let error = match tokio::time::timeout(inner.settings.command_timeout, leave).await {
                        Ok(Ok(())) => None,
                        Ok(Err(e)) => Some(crate::redact::in_text(&e.to_string(), &inner.settings.url)),
                        Err(_) => Some(format!("no reply within {:?}", inner.settings.command_timeout)),
                    };
                    if let Some(error) = error {
                        tracing::warn!(lock = %entry.keys.lock, %error, "leaving the line at shutdown failed; the heartbeat deadline will evict us");
                    }
                }
            });
        }
        give_back_permits(inner, &mut work, first_permits.clone());
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
        let late_permits = inner
            .permits
            .all()
            .into_iter()
            .filter(|l| !first_permits.iter().any(|f| Arc::ptr_eq(f, l)))
            .collect();
        give_back_permits(inner, &mut work, late_permits);
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

/// Shutdown: gives back `leases` (permits this client's guards hold on permit-expirable
/// semaphores) in parallel on `work`; each is marked lost first, so its guard reports it.
fn give_back_permits(
    inner: &Arc<Inner>,
    work: &mut tokio::task::JoinSet<()>,
    leases: Vec<Arc<crate::leases::Lease>>,
) {
    for lease in leases {
        lease.mark_lost();
        let inner = inner.clone();
        work.spawn(async move {
            let publish = inner.publish_cmd();
            let call =
                crate::leases::release(inner.pool.next(), &lease.keys, &lease.id, publish, None);
            let error = match tokio::time::timeout(inner.settings.command_timeout, call).await {
                Ok(Ok(_)) => None,
                Ok(Err(e)) => Some(crate::redact::in_text(&e.to_string(), &inner.settings.url)),
                Err(_) => Some(format!("no reply within {:?}", inner.settings.command_timeout)),
            };
            if let Some(error) = error {
                tracing::warn!(semaphore = %lease.keys.count, id = %lease.id, %error, "giving back a permit at shutdown failed; it comes back when its lease ends");
            }
            inner.permits.remove(&lease);
        });
    }
}

impl Inner {
    /// A waiter's sleep: until `woken`, or for `sleep`, and never past the caller's
    /// `deadline`; counted in [`Client::parked_waiters`]. Returns `None`, without sleeping,
    /// when the deadline has already passed (the caller gives up), else whether `woken`
    /// fired; and [`Error::Shutdown`] if the client shut down meanwhile.
    pub(crate) async fn park<F: std::future::Future>(
        &self,
        sleep: Duration,
        deadline: Option<tokio::time::Instant>,
        woken: F,
    ) -> Result<Option<bool>> {
        struct Parked<'a>(&'a AtomicUsize);
        impl Drop for Parked<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let now = tokio::time::Instant::now();
        // While the subscriber is down, no release message can wake us: look again soon
        // rather than sleep for the holder's whole lease.
        let sleep = if self.pubsub.is_connected() {
            sleep
        } else {
            sleep.min(SUBSCRIBER_DOWN_RECHECK)
        };
        let sleep = match deadline {
            Some(d) if now >= d => return Ok(None),
            Some(d) => sleep.min(d - now),
            None => sleep,
        };
        self.parked.fetch_add(1, Ordering::SeqCst);
        let parked = Parked(&self.parked);
        let woke = tokio::time::timeout(sleep, woken).await.is_ok();
        drop(parked);
        self.check_running()?;
        Ok(Some(woke))
    }

    pub(crate) fn check_running(&self) -> Result<()> {
        if self.shutting_down.load(Ordering::SeqCst) {
            Err(Error::Shutdown)
        } else {
            Ok(())
        }
    }

    /// Runs `release.lua` for `field`: one hold, or every hold of the owner (`all`).
    /// Returns 1 (released), 0 (still held by the owner) or None (the owner holds nothing).
    pub(crate) async fn run_release(
        &self,
        keys: &LockKeys,
        field: &str,
        all: bool,
    ) -> std::result::Result<Option<i64>, fred::error::Error> {
        let mode = if all { "all" } else { "1" };
        if let Some(side) = keys.rw {
            let (script, mut script_keys) = match side {
                Side::Read => (&scripts::RW_READ_RELEASE, vec![keys.read_timeout(field)]),
                Side::Write => (&scripts::RW_WRITE_RELEASE, vec![]),
            };
            script_keys.insert(0, keys.lock.clone());
            let args = vec![
                field.to_string(),
                mode.into(),
                self.publish_cmd().into(),
                keys.hold_prefix(),
                keys.channel.clone(),
            ];
            return script.run(self.pool.next(), script_keys, args).await;
        }
        let fair = keys.queue.is_some();
        let channel = keys.channel.clone();
        let fair_channel = keys.wake_channel().to_string();
        let keys = keys.release_keys();
        if fair {
            // A fair release may hand the lock on, minting the next holder's token.
            let args = vec![
                field.to_string(),
                mode.into(),
                self.publish_cmd().into(),
                self.grace_ms().to_string(),
                channel,
                fair_channel,
            ];
            return scripts::FAIR_RELEASE
                .run(self.pool.next(), keys, args)
                .await;
        }
        let args = [
            field.to_string(),
            mode.into(),
            self.publish_cmd().into(),
            channel,
        ];
        match &self.batcher {
            Some(b) => b.run(crate::batch::Op::Release { keys, args }).await,
            None => {
                scripts::RELEASE
                    .run(self.pool.next(), keys, args.to_vec())
                    .await
            }
        }
    }

    /// The command scripts publish wake-ups with: sharded on a cluster, so that the message
    /// goes to the lock's shard only (and SPUBLISH is allowed in a script on that slot).
    pub(crate) fn publish_cmd(&self) -> &'static str {
        if self.pubsub.sharded {
            "spublish"
        } else {
            "publish"
        }
    }

    /// Splits `items` into script batches of at most `renew_batch`. On a cluster a script may
    /// only touch one slot, so a batch holds the locks of one slot (all keys of a lock share
    /// its slot through the hash tag).
    pub(crate) fn batches<T: Clone>(
        &self,
        items: &[T],
        lock_key: impl Fn(&T) -> &str,
    ) -> Vec<Vec<T>> {
        let size = self.settings.renew_batch;
        if !self.pubsub.cluster {
            return items.chunks(size).map(<[T]>::to_vec).collect();
        }
        let mut by_slot: std::collections::BTreeMap<u16, Vec<T>> = Default::default();
        for item in items {
            let slot = fred::types::Key::from(lock_key(item)).cluster_hash();
            by_slot.entry(slot).or_default().push(item.clone());
        }
        by_slot
            .into_values()
            .flat_map(|v| v.chunks(size).map(<[T]>::to_vec).collect::<Vec<_>>())
            .collect()
    }

    /// The fencing counter's life once seeded, in ms; 0 for counters that never expire
    /// ([`ClientBuilder::persistent_fencing_counters`]).
    pub(crate) fn grace_ms(&self) -> u64 {
        if self.settings.persistent_counters {
            return 0;
        }
        self.settings.counter_grace.as_millis() as u64
    }

    /// `name` with the client's [`key_prefix`](ClientBuilder::key_prefix), if any.
    pub(crate) fn named(&self, name: String) -> String {
        if self.settings.key_prefix.is_empty() {
            name
        } else {
            format!("{}{name}", self.settings.key_prefix)
        }
    }

    /// The server's URL without credentials, for messages.
    pub(crate) fn server(&self) -> String {
        crate::redact::url(&self.settings.url)
    }

    /// Reconnects every connection (once at a time), so that a Sentinel client finds the
    /// current master and a cluster client the current topology.
    pub(crate) fn rediscover(&self) {
        if self.rediscovering.swap(true, Ordering::SeqCst) {
            return;
        }
        let (pool, sub) = (self.pool.clone(), self.pubsub.clone());
        // A quorum node's connections are never moved to another server instance.
        let auto_reconnect = self.settings.auto_reconnect;
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            self.rediscovering.store(false, Ordering::SeqCst);
            return;
        };
        let done = self.rediscovering.clone();
        rt.spawn(async move {
            tracing::warn!(
                "a master refused writes (READONLY): reconnecting to find the current one"
            );
            if auto_reconnect {
                let _ = pool.force_reconnection().await;
            }
            let _ = sub.subscriber.force_reconnection().await;
            sub.wake_all();
            done.store(false, Ordering::SeqCst);
        });
    }

    /// Queues `hold` for its watch (`hold_watch`), if this client watches holds.
    /// Watches a permit as [`watch_hold`](Self::watch_hold) watches a hold.
    pub(crate) fn watch_permit(&self, lease: &Arc<crate::leases::Lease>) {
        if self.settings.watch_holds {
            crate::hold_watch::watch_permit(&self.pubsub, &self.pool, &self.runtime, lease);
        }
    }

    pub(crate) fn watch_hold(&self, hold: &Arc<crate::holds::Hold>) {
        if self.settings.watch_holds {
            crate::hold_watch::watch(
                &self.watches,
                &self.pubsub,
                &self.pool,
                &self.runtime,
                &self.shutdown,
                hold,
            );
        }
    }

    /// Whether the lock hash `lock` exists, and `field`'s value in it (none for `""`), in one
    /// read that first makes sure the key is a lock: `NotALock` / `WrongType` otherwise
    /// (`lua/check.lua`), so that data under a lock's name is never reported as a held lock.
    pub(crate) async fn check(&self, lock: &str, field: String) -> Result<(bool, Option<String>)> {
        let (exists, value, _) = self.check_with_pttl(lock, field).await?;
        Ok((exists, value))
    }

    /// [`check`](Self::check), with the lock's PTTL (-2: no key, -1: no expiry).
    pub(crate) async fn check_with_pttl(
        &self,
        lock: &str,
        field: String,
    ) -> Result<(bool, Option<String>, i64)> {
        let (exists, value, pttl): (i64, Option<String>, i64) = crate::scripts::CHECK
            .run_read_only(self.pool.next(), vec![lock.to_string()], vec![field])
            .await
            .map_err(|e| self.error("check", lock, e))?;
        Ok((exists == 1, value, pttl))
    }

    /// Turns a fred error into ours, naming the server, what we were doing and on which key.
    pub(crate) fn error(&self, operation: &'static str, key: &str, e: fred::error::Error) -> Error {
        use fred::error::ErrorKind;
        if self.shutting_down.load(Ordering::SeqCst) {
            return Error::Shutdown;
        }
        match e.kind() {
            ErrorKind::Timeout => {
                return Error::Timeout {
                    operation,
                    server: self.server(),
                    timeout: self.settings.command_timeout,
                }
            }
            ErrorKind::IO | ErrorKind::Canceled => {
                return Error::Connection {
                    url: self.server(),
                    cause: crate::redact::in_text(
                        &format!("during `{operation}`: {}", e.details()),
                        &self.settings.url,
                    ),
                }
            }
            _ => {}
        }
        // First: its text names a field of the user's data (escaped, no spaces), which must
        // not be read as another error code.
        if e.details().contains("NOTALOCK ") {
            return Error::NotALock {
                key: key.to_string(),
                found: not_a_lock_found(e.details()),
            };
        }
        if let Some(refused) = refusal(&self.server(), operation, key, &e) {
            return refused;
        }
        if e.details().starts_with("READONLY") {
            // We are talking to a master that was demoted (a Sentinel failover): reconnect,
            // which asks the sentinels for the current master. Callers retry.
            self.rediscover();
        } else if e.details().contains("WRONGTYPE") {
            return Error::WrongType {
                key: key.to_string(),
            };
        }
        Error::Redis {
            operation,
            server: self.server(),
            source: e,
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        if self.shutting_down.load(Ordering::SeqCst) {
            return;
        }
        // The last handle went without `shutdown()` (for example `main` returned and the
        // runtime dropped the release tasks): say what is left to expire on the server.
        let left: Vec<String> = self
            .shared
            .holds
            .all()
            .iter()
            .filter(|h| !h.is_lost())
            .map(|h| h.keys.lock.clone())
            .collect();
        if !left.is_empty() {
            tracing::warn!(
                locks = ?left,
                "relock client dropped while holding locks; they stay held until their lease ends. \
                 Call Client::shutdown().await (or use Lock::with) before the runtime ends"
            );
        }
        let (pool, sub) = (
            self.owns_pool.then(|| self.pool.clone()),
            self.pubsub.subscriber.clone(),
        );
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = sub.quit().await;
                if let Some(pool) = pool {
                    let _ = pool.quit().await;
                }
            });
        }
    }
}
