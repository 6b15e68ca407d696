//! `QuorumClientBuilder`: the masters and the quorum's settings, checked; `build` connects to
//! every master at once, checks their uptimes and starts the client's tasks. Also
//! `QuorumClient::connect` and `QuorumClient::builder`.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::client::builder::ClientBuilder;
use crate::client::redact;
use crate::client::settings;
use crate::client::settings::validate_lease;
use crate::error::{Error, Result};
use crate::hold::backend;
use crate::hold::holds::FieldMaker;
use crate::hold::reentry::{self, Reentrancy};
use crate::hold::watchdog;
use crate::quorum::client::QuorumClient;
use crate::quorum::inner::{
    spawn_connection_watch, spawn_reconnect, spawn_uptime_checks, QuorumInner,
};
use crate::quorum::node::{Node, NodeState};

/// Builds a [`QuorumClient`].
///
/// ```no_run
/// # async fn f() -> relock::Result<()> {
/// use std::time::Duration;
/// let client = relock::QuorumClient::builder()
///     .urls(["redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"])
///     .node_timeout(Duration::from_millis(50))
///     .build()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
#[must_use = "a builder does nothing until `build` is awaited"]
pub struct QuorumClientBuilder {
    urls: Vec<String>,
    node: ClientBuilder,
    client_id: String,
    node_timeout: Duration,
    quarantine: Option<Duration>,
    watchdog_lease: Duration,
    connect_timeout: Duration,
    reentrancy: Reentrancy,
    watch_holds: bool,
}

impl std::fmt::Debug for QuorumClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let urls: Vec<String> = self.urls.iter().map(|u| redact::url(u)).collect();
        f.debug_struct("QuorumClientBuilder")
            .field("urls", &urls)
            .field("client_id", &self.client_id)
            .field("node_timeout", &self.node_timeout)
            .field("quarantine", &self.quarantine)
            .field("watchdog_lease", &self.watchdog_lease)
            .field("reentrancy", &self.reentrancy)
            .finish_non_exhaustive()
    }
}

impl Default for QuorumClientBuilder {
    fn default() -> Self {
        QuorumClientBuilder {
            urls: Vec::new(),
            // Coalescing is for the single-server lock: per-node calls are sent as they are.
            node: ClientBuilder::default().connections(2).coalesce(false),
            client_id: uuid::Uuid::new_v4().to_string(),
            node_timeout: Duration::from_millis(50),
            quarantine: None,
            watchdog_lease: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            reentrancy: Reentrancy::Scoped,
            watch_holds: true,
        }
    }
}

impl QuorumClientBuilder {
    /// The independent masters (`redis://host:port`), at least 1; use an odd number, 3 or 5.
    pub fn urls<I, S>(mut self, urls: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.urls = urls.into_iter().map(Into::into).collect();
        self
    }

    /// How long one node may take to answer one call before it counts as a "no" vote. Keep
    /// it far below the lease. Default: 50 ms.
    pub fn node_timeout(mut self, timeout: Duration) -> Self {
        self.node_timeout = timeout;
        self
    }

    /// How long a node that restarted stays out of the vote (it may have lost locks that
    /// others still hold). Default: the longest lease in use (the watchdog lease, or a longer
    /// fixed lease once one is used). `Duration::ZERO` turns it off: see
    /// [`guide::safety`](crate::guide::safety#restarted-nodes-the-quarantine).
    pub fn restart_quarantine(mut self, quarantine: Duration) -> Self {
        self.quarantine = Some(quarantine);
        self
    }

    /// The lease of locks taken without a fixed lease, renewed every lease/3. Default: 30 s.
    pub fn watchdog_lease(mut self, lease: Duration) -> Self {
        self.watchdog_lease = lease;
        self
    }

    /// The `<client_id>` of every hold's field, on every node. Default: a random UUID.
    pub fn client_id(mut self, id: impl Into<String>) -> Self {
        self.client_id = id.into();
        self
    }

    /// How long connecting to the nodes may take. Default: 5 s.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// TLS on every node: trust these PEM certificates (the CA that signed the servers'
    /// certificates) instead of the system's root certificates. Needs `rediss://` URLs.
    pub fn tls_ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.node = self.node.tls_ca_pem(pem);
        self
    }

    /// TLS on every node: present this client certificate chain and private key (both PEM),
    /// for servers that verify clients (`tls-auth-clients yes`). Needs `rediss://` URLs.
    pub fn tls_client_cert_pem(
        mut self,
        cert_chain: impl Into<Vec<u8>>,
        private_key: impl Into<Vec<u8>>,
    ) -> Self {
        self.node = self.node.tls_client_cert_pem(cert_chain, private_key);
        self
    }

    /// How `lock()` calls re-enter holds; as
    /// [`ClientBuilder::reentrancy`](crate::ClientBuilder::reentrancy), with the same hazard
    /// for [`Reentrancy::PerTask`]. Default: [`Reentrancy::Scoped`].
    pub fn reentrancy(mut self, mode: Reentrancy) -> Self {
        self.reentrancy = mode;
        self
    }

    /// Whether each hold listens on its lock's channel on every node, so that `lost()` fires
    /// within a round trip of a force-unlock (or any deletion announced there) on a majority
    /// of nodes, rather than at the watchdog's next renewal; as
    /// [`ClientBuilder::watch_holds`](crate::ClientBuilder::watch_holds). Default: on.
    pub fn watch_holds(mut self, on: bool) -> Self {
        self.watch_holds = on;
        self
    }

    /// Command connections per node (each lock uses one of them per node). Default: 2.
    pub fn connections(mut self, n: usize) -> Self {
        self.node = self.node.connections(n);
        self
    }

    /// Connects to every node at once and checks their uptimes.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for bad settings or URLs; [`Error::Connection`] naming every
    /// node that could not be reached, when fewer than a majority could be.
    ///
    /// # Cancel safety
    /// Dropping the future closes whatever connections it had opened.
    pub async fn build(self) -> Result<QuorumClient> {
        self.check_settings()?;
        let builder = self.node_builder();
        self.check_urls(&builder)?;
        let (nodes, unreachable) = self.connect_every_node(&builder).await?;
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let inner = Arc::new(self.into_inner(builder, nodes, shutdown_tx));
        // Know every node's uptime before the first vote. Given the connect timeout, not the
        // node timeout: on a busy machine an INFO right after connecting can take longer than
        // a vote, and a node whose uptime is unknown cannot vote until the next check.
        inner
            .check_uptimes(inner.builder.connect_timeout_setting(), true)
            .await;
        let inner = refuse_one_server_twice(inner).await?;
        start_tasks(&inner, unreachable, shutdown_rx);
        Ok(QuorumClient { inner })
    }

    /// The settings that need no node: at least one URL, none twice, the watchdog lease, and
    /// a node timeout well below it.
    fn check_settings(&self) -> Result<()> {
        if self.urls.is_empty() {
            return Err(Error::invalid(
                "urls",
                "give at least one node URL (use 3 or 5)",
            ));
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(dup) = self.urls.iter().find(|u| !seen.insert(u.as_str())) {
            return Err(Error::invalid(
                "urls",
                format!(
                    "`{}` is listed twice; each node must be a different master",
                    redact::url(dup)
                ),
            ));
        }
        validate_lease("watchdog_lease", self.watchdog_lease)?;
        if self.node_timeout.is_zero() || self.node_timeout * 3 > self.watchdog_lease {
            return Err(Error::invalid(
                "node_timeout",
                format!(
                    "{}: must be above zero and well below the watchdog lease ({})",
                    crate::error::Human(self.node_timeout),
                    crate::error::Human(self.watchdog_lease)
                ),
            ));
        }
        Ok(())
    }

    /// The builder of each node's one-server client (its URL still to set).
    fn node_builder(&self) -> ClientBuilder {
        self.node
            .clone()
            .client_id(self.client_id.clone())
            .watchdog_lease(self.watchdog_lease)
            .connect_timeout(self.connect_timeout)
            // Calls are bounded by the node timeout; this only bounds fred's own bookkeeping.
            .command_timeout(self.connect_timeout.max(Duration::from_secs(1)))
            // A node's connections never reconnect by themselves: each stays with the server
            // instance it reached, whose run id and uptime are checked on it before it may
            // vote. A lost connection is replaced whole (`replace_dead`), and checked again.
            .auto_reconnect(false)
    }

    /// Every URL, before connecting to any: one independent master each, and a URL the node's
    /// builder accepts.
    fn check_urls(&self, builder: &ClientBuilder) -> Result<()> {
        for url in &self.urls {
            if settings::deployment(url) != settings::Deployment::Single {
                return Err(Error::invalid(
                    "urls",
                    format!(
                        "`{}`: each quorum node must be one independent master (redis://host:port)",
                        redact::url(url)
                    ),
                ));
            }
            builder.clone().url(url.clone()).check()?;
        }
        Ok(())
    }

    /// Connects to every node at once: the nodes (those connected with their connections) and
    /// the indexes of those that could not be reached; an error naming each of these when
    /// fewer than a majority could be.
    async fn connect_every_node(&self, builder: &ClientBuilder) -> Result<(Vec<Node>, Vec<usize>)> {
        let mut connecting = JoinSet::new();
        for (i, url) in self.urls.iter().enumerate() {
            let b = builder.clone().url(url.clone());
            connecting.spawn(async move { (i, b.build().await) });
        }
        let nodes: Vec<Node> = self
            .urls
            .iter()
            .map(|u| Node {
                reconnecting: Mutex::new(None),
                url: u.clone(),
                name: redact::url(u),
                conn: RwLock::new(None),
                state: Mutex::new(NodeState::default()),
            })
            .collect();
        let mut failures = Vec::new();
        while let Some(r) = connecting.join_next().await {
            let (i, r) = r.map_err(|_| Error::Shutdown)?;
            match r {
                Ok(c) => *nodes[i].conn.write().unwrap() = Some(c.inner),
                Err(e) => failures.push((i, e)),
            }
        }
        let quorum = nodes.len() / 2 + 1;
        if nodes.len() - failures.len() < quorum {
            failures.sort_by_key(|(i, _)| *i);
            return Err(Error::Connection {
                url: self
                    .urls
                    .iter()
                    .map(|u| redact::url(u))
                    .collect::<Vec<_>>()
                    .join(","),
                cause: format!(
                    "only {} of {} nodes reachable, {} needed: {}",
                    nodes.len() - failures.len(),
                    nodes.len(),
                    quorum,
                    failures
                        .iter()
                        .map(|(i, e)| format!("{}: {e}", redact::url(&self.urls[*i])))
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            });
        }
        Ok((nodes, failures.into_iter().map(|(i, _)| i).collect()))
    }

    /// The client's state over its `nodes`, made with the node's `builder` (kept for
    /// reconnects).
    fn into_inner(
        self,
        builder: ClientBuilder,
        nodes: Vec<Node>,
        shutdown: watch::Sender<bool>,
    ) -> QuorumInner {
        let quorum = nodes.len() / 2 + 1;
        QuorumInner {
            shared: backend::Shared::new(reentry::next_client_id()),
            fields: FieldMaker::new(&self.client_id),
            reentrancy: self.reentrancy,
            nodes,
            quorum,
            client_id: self.client_id,
            node_timeout: self.node_timeout,
            watchdog_lease: self.watchdog_lease,
            quarantine: self.quarantine,
            max_lease_ms: AtomicU64::new(self.watchdog_lease.as_millis() as u64),
            counter_grace: Duration::from_secs(1),
            connections: builder.connection_count(),
            shutting_down: AtomicBool::new(false),
            closing_at: Mutex::new(None),
            in_flight: Default::default(),
            releasing: Default::default(),
            watch_holds: self.watch_holds,
            watched: Default::default(),
            shutdown,
            builder,
        }
    }
}

/// Two URLs for one server (an alias, another database number) would count its vote twice:
/// one server could then make a "majority". Its run id tells: such a client is shut down and
/// refused.
async fn refuse_one_server_twice(inner: Arc<QuorumInner>) -> Result<Arc<QuorumInner>> {
    let mut seen: std::collections::HashMap<String, usize> = Default::default();
    for (i, node) in inner.nodes.iter().enumerate() {
        let Some(run_id) = node.state.lock().unwrap().run_id.clone() else {
            continue;
        };
        if let Some(first) = seen.insert(run_id, i) {
            let why = format!(
                "`{}` and `{}` are the same server (one run id): each master may vote once",
                inner.nodes[first].name, node.name
            );
            QuorumClient { inner }.shutdown().await;
            return Err(Error::invalid("urls", why));
        }
    }
    Ok(inner)
}

/// The client's background tasks: a watch of each connected node's connections, a reconnect
/// of each node not reached (`unreachable`), the uptime checks and the watchdog.
fn start_tasks(inner: &Arc<QuorumInner>, unreachable: Vec<usize>, shutdown: watch::Receiver<bool>) {
    for (i, node) in inner.nodes.iter().enumerate() {
        if let Some(conn) = node.conn() {
            spawn_connection_watch(inner, i, &conn);
        }
    }
    for i in unreachable {
        spawn_reconnect(
            Arc::downgrade(inner),
            i,
            shutdown.clone(),
            Duration::from_secs(1),
        );
    }
    spawn_uptime_checks(Arc::downgrade(inner), shutdown.clone());
    watchdog::spawn(Arc::downgrade(inner), shutdown);
}

// The client's constructors live beside its builder, so that the quorum (a lower layer) does
// not name the builder that makes it.
impl QuorumClient {
    /// Connects to the given masters with default settings.
    ///
    /// # Errors
    /// As [`QuorumClientBuilder::build`].
    ///
    /// # Cancel safety
    /// As [`QuorumClientBuilder::build`].
    pub async fn connect<I, S>(urls: I) -> Result<QuorumClient>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        QuorumClientBuilder::default().urls(urls).build().await
    }

    /// A builder with non-default settings.
    pub fn builder() -> QuorumClientBuilder {
        QuorumClientBuilder::default()
    }
}
