//! The settings every lock of a one-server client shares (`Settings`, built by
//! `ClientBuilder`), the limits they are checked against, and how a URL names a deployment.

use std::sync::Arc;
use std::time::Duration;

use crate::client::tls::TlsSettings;
use crate::error::Result;
use crate::hold::any::AsAny;
use crate::hold::reentry::Reentrancy;

use crate::client::redact;
pub(crate) use crate::hold::acquire::{validate_lease, MAX_LEASE};

/// How long a fencing counter lives once seeded from the server clock (or raised by a quorum
/// write-back): a seed after it expires is this far past every token it handed out
/// (`lua/lib/mint.lua`;
/// [`guide::safety`](crate::guide::safety#the-token-rule-and-why-it-is-monotonic)).
pub(crate) const COUNTER_GRACE: Duration = Duration::from_secs(1);
/// How often the subscriber connection is pinged while waiters rely on it, so that a silently
/// dead connection is noticed within this plus one command timeout.
pub(crate) const SUBSCRIBER_KEEPALIVE: Duration = Duration::from_secs(1);
/// How often a waiter re-checks the lock while its client's subscriber connection is down.
pub(crate) const SUBSCRIBER_DOWN_RECHECK: Duration = Duration::from_millis(100);
/// Locks per renewal script call, as Redisson's `lockWatchdogBatchSize`.
pub(crate) const RENEW_BATCH: usize = 100;

/// Settings shared by every lock of a client. Built by [`ClientBuilder`](crate::ClientBuilder). Its `Debug` shows
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
    /// What the kinds add (each set by a builder method in the kind's own file).
    pub(crate) kinds: KindSettings,
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
    /// A name for the client's connections (`CLIENT SETNAME`), so that tools can say who holds
    /// a lock.
    pub(crate) client_name: Option<String>,
}

/// Which pub/sub a Redis Cluster client uses for lock channels. Set with
/// [`ClientBuilder::cluster_pubsub`](crate::ClientBuilder::cluster_pubsub); ignored outside a cluster.
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
            .field("url", &redact::url(&self.url))
            .field("client_id", &self.client_id)
            .field("watchdog_lease", &self.watchdog_lease)
            .field("connect_timeout", &self.connect_timeout)
            .field("command_timeout", &self.command_timeout)
            .field("connections", &self.connections)
            .field("kinds", &self.kinds)
            .field("sync_replicas", &self.sync_replicas)
            .field("coalesce", &self.coalesce)
            .field("reentrancy", &self.reentrancy)
            .field("tls", &self.tls)
            .field("cluster_pubsub", &self.cluster_pubsub)
            .finish_non_exhaustive()
    }
}

/// A setting that a kind adds to its client's: set by a builder method in the kind's own file
/// (an `impl ClientBuilder` block there), checked when the client is built, read by the kind
/// with [`Settings::kind`]. The client names no kind's setting.
pub(crate) trait KindSetting: AsAny + std::fmt::Debug + Send + Sync {
    /// Whether it is usable: an error names the builder method and how to fix the value.
    fn check(&self) -> Result<()>;
}

/// The kinds' settings of one client, at most one of each type; a kind that set none reads
/// its default.
#[derive(Debug, Clone, Default)]
pub(crate) struct KindSettings(Vec<Arc<dyn KindSetting>>);

impl KindSettings {
    /// Sets `setting`, in place of one of its type set before.
    pub(crate) fn set<T: KindSetting + 'static>(&mut self, setting: T) {
        self.0
            .retain(|s| (**s).as_any().downcast_ref::<T>().is_none());
        self.0.push(Arc::new(setting));
    }

    /// The setting of type `T`, or its default.
    pub(crate) fn get<T: KindSetting + Default + Clone + 'static>(&self) -> T {
        self.0
            .iter()
            .find_map(|s| (**s).as_any().downcast_ref::<T>())
            .cloned()
            .unwrap_or_default()
    }

    /// Checks every setting made.
    pub(crate) fn check(&self) -> Result<()> {
        self.0.iter().try_for_each(|s| s.check())
    }
}

impl Settings {
    /// A kind's setting: as set on the builder, or its default.
    pub(crate) fn kind<T: KindSetting + Default + Clone + 'static>(&self) -> T {
        self.kinds.get()
    }
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
