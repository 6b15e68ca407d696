//! Connecting a client: the URL in fred's terms (sentinel credentials, unix sockets), fred's
//! builders with relock's reconnect policy and timeouts, and `start`, which connects the pool
//! and the subscriber and starts the client's tasks.

use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;
use std::time::Duration;

use fred::clients::{Pool, SubscriberClient};
use fred::interfaces::ClientLike;
use fred::types::config::{Config as FredConfig, ReconnectPolicy};
use fred::types::Builder;
use tokio::sync::watch;

use crate::client::batch;
use crate::client::handle::Client;
use crate::client::identity;
use crate::client::inner::Inner;
use crate::client::pubsub::PubSub;
use crate::client::redact;
use crate::client::refusal::{connect_error, connection_error};
use crate::client::settings::{ClusterPubSub, Settings, SUBSCRIBER_KEEPALIVE};
use crate::error::{Error, Result};
use crate::hold::backend;
use crate::hold::holds::FieldMaker;
use crate::hold::reentry;
use crate::hold::watchdog;

/// A fred builder for `config` with relock's policies: fred's defaults never reconnect and
/// never time out; both are wrong for locks.
pub(crate) fn fred_builder(config: FredConfig, s: &Settings) -> Builder {
    let mut builder = Builder::from_config(config);
    builder.set_policy(ReconnectPolicy::new_exponential(0, 50, 2_000, 2));
    fred_command_settings(builder, s)
}

/// relock's timeouts and single command attempt on a fred builder.
pub(crate) fn fred_command_settings(mut builder: Builder, s: &Settings) -> Builder {
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

/// A URL-like description of a fred configuration's servers (no credentials), for messages.
pub(crate) fn describe(config: &FredConfig) -> String {
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

/// Without reconnects (a quorum node), a failed connection never comes back: says so for the
/// owner to replace the set. Subscribed before `init`, so that no failure passes unseen; as
/// state, so that one that came before anyone looked is still there.
fn watch_failures(s: &Settings, pool: &Pool) -> (watch::Sender<bool>, watch::Receiver<bool>) {
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
    pool_failed
}

/// Connects `pool` (if it is not yet) and `subscriber` within the connect timeout; on a
/// failure or the timeout, closes what this call started.
async fn connect(s: &Settings, pool: &Pool, subscriber: &SubscriberClient) -> Result<()> {
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
        Ok(Err(e)) => return Err(connect_error(s, e)),
        Err(_) => {
            return Err(connection_error(
                s,
                format!(
                    "no connection within {}",
                    crate::error::Human(s.connect_timeout)
                ),
            ))
        }
    }
    closer.disarm();
    Ok(())
}

/// Connects `pool` (if it is not yet) and `subscriber`, then starts the client's tasks.
/// `owns_pool`: shutdown and drop close the pool (not a pool the caller gave us).
pub(crate) async fn start(
    s: Settings,
    pool: Pool,
    subscriber: SubscriberClient,
    cluster: bool,
    owns_pool: bool,
) -> Result<Client> {
    let pool_failed = watch_failures(&s, &pool);
    connect(&s, &pool, &subscriber).await?;
    // No `manage_subscriptions()`: fred would re-subscribe its own list after a reconnect,
    // including a channel whose UNSUBSCRIBE failed during the outage. The dispatcher re-subscribes
    // exactly the channels in use, and confirms each, on every reconnect (`PubSub`).
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    if let Some(name) = &s.client_name {
        let name = identity::connection_name(&s.client_id, name);
        identity::name_connections(&pool, name, shutdown_rx.clone()).await;
    }
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
    let shared = backend::Shared::new(reentry::next_client_id());
    let batcher = (s.coalesce && !cluster && s.sync_replicas.is_none()).then(|| {
        batch::Batcher::spawn(
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
        runtime: tokio::runtime::Handle::current(),
        watches: Arc::default(),
        kinds: Default::default(),
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

/// The credentials a Sentinel client gives the sentinels: `sentinelUsername` and
/// `sentinelPassword` from the URL's query when present (an empty `sentinelPassword=` means
/// the sentinels need none), else the URL's own `user:password@`, which then serves the
/// sentinels and the master alike.
pub(crate) fn sentinel_credentials(config: &mut FredConfig, url: &str) {
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

/// fred's form of a unix socket URL, from what follows `unix://`: `/path/to/redis.sock`, or
/// `user:password@/path/to/redis.sock` (`:password@` for the default user; a lone userinfo is a
/// user name, as in every URL). The credentials end at the first `@/`, since a path may hold an
/// `@` (`redact` splits them there too). fred reads credentials only from a URL with a host,
/// which it then ignores (`redis+unix://user:password@localhost/path`).
fn unix_url(rest: &str) -> String {
    match rest.split_once("@/") {
        Some((auth, path)) if !auth.contains('/') => {
            format!("redis+unix://{auth}@localhost/{path}")
        }
        _ => format!("redis+unix://{rest}"),
    }
}

/// Checks the scheme, and turns the comma-separated node lists we accept
/// (`redis-cluster://h1:p1,h2:p2`) into fred's form (`redis-cluster://h1:p1?node=h2:p2`).
pub(crate) fn fred_url(url: &str) -> Result<String> {
    let shown = redact::url(url);
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
    let scheme = match fred_scheme(scheme) {
        Some(Scheme::Tcp(scheme)) => scheme,
        Some(Scheme::Unix) if rest.contains('/') => return Ok(unix_url(rest)),
        Some(Scheme::Unix) => {
            return Err(bad(
                "a unix socket URL needs a path: unix:///path/to/redis.sock",
            ))
        }
        None => return Err(bad("unknown scheme")),
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
    if sentinel_user_without_password(query) {
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

/// A URL scheme as fred knows it.
enum Scheme {
    /// fred's spelling of a TCP scheme (`valkey…` spellings are Redis's).
    Tcp(&'static str),
    /// A unix socket.
    Unix,
}

/// fred's scheme for a URL's scheme, or `None` for one it does not know.
fn fred_scheme(scheme: &str) -> Option<Scheme> {
    Some(Scheme::Tcp(match scheme {
        "redis" | "valkey" => "redis",
        "redis-cluster" | "valkey-cluster" => "redis-cluster",
        "redis-sentinel" | "valkey-sentinel" => "redis-sentinel",
        "rediss" | "valkeys" => "rediss",
        "rediss-cluster" | "valkeys-cluster" => "rediss-cluster",
        "rediss-sentinel" | "valkeys-sentinel" => "rediss-sentinel",
        "unix" | "redis+unix" | "valkey+unix" => return Some(Scheme::Unix),
        _ => return None,
    }))
}

/// Whether a URL's query names a sentinel user without a password. fred sends no AUTH at all
/// without a password: the user name alone would be dropped without a word.
fn sentinel_user_without_password(query: Option<&str>) -> bool {
    let param = |key: &str| {
        query.and_then(|q| {
            q.split('&').find_map(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                (k == key).then_some(v)
            })
        })
    };
    param("sentinelUsername").is_some_and(|u| !u.is_empty())
        && param("sentinelPassword").is_none_or(str::is_empty)
}

/// Closes fred clients on drop unless disarmed (an abandoned or failed `build`).
pub(crate) struct CloseOnDrop {
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
