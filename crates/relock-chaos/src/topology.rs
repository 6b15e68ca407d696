//! The servers a run needs, per lock kind: what the clients connect to, what the nemeses hit,
//! and where the harness looks for leaks. Everything is started by the test kit and stopped
//! when the topology is dropped.

use std::path::PathBuf;

use relock_testkit::{FaultProxy, RedisCluster, RedisMasters, RedisSentinel, RedisServer};

use crate::kind::Kind;

/// The quorum kind's masters.
pub const QUORUM_MASTERS: usize = 3;

#[allow(clippy::large_enum_variant)] // one per run
pub enum Topology {
    /// One server behind a fault proxy (plain, fair, spin and read-write locks, the semaphore,
    /// elections, jobs, the rate limiter). `clock` is the libfaketime
    /// offset file the server reads its wall clock from, when libfaketime is installed.
    Single {
        server: RedisServer,
        proxy: FaultProxy,
        clock: Option<PathBuf>,
    },
    /// Independent masters, each behind its own fault proxy.
    Quorum {
        masters: RedisMasters,
        proxies: Vec<FaultProxy>,
    },
    Cluster(RedisCluster),
    Sentinel(RedisSentinel),
}

impl Topology {
    pub fn start(kind: Kind, dir: &std::path::Path) -> Result<Self, String> {
        let e = |what: &str| {
            let what = what.to_owned();
            move |err: relock_testkit::Error| format!("{what}: {err}")
        };
        Ok(match kind {
            Kind::Plain
            | Kind::Fair
            | Kind::Spin
            | Kind::Rw
            | Kind::Sem
            | Kind::Election
            | Kind::Job
            | Kind::Rate => {
                let (server, clock) = crate::clock::start_server(dir).map_err(e("redis-server"))?;
                let proxy = FaultProxy::start(&server.addr()).map_err(e("fault proxy"))?;
                Topology::Single {
                    server,
                    proxy,
                    clock,
                }
            }
            Kind::Quorum => {
                let masters = RedisMasters::start(QUORUM_MASTERS).map_err(e("masters"))?;
                let proxies = masters
                    .servers()
                    .iter()
                    .map(|s| FaultProxy::start(&s.addr()))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(e("fault proxy"))?;
                Topology::Quorum { masters, proxies }
            }
            Kind::Cluster => Topology::Cluster(RedisCluster::start().map_err(e("cluster"))?),
            Kind::Sentinel => Topology::Sentinel(RedisSentinel::start().map_err(e("sentinel"))?),
        })
    }

    /// The URLs a client is given (`--url`, repeated for the quorum).
    pub fn client_urls(&self) -> Vec<String> {
        match self {
            Topology::Single { proxy, .. } => vec![proxy.url()],
            Topology::Quorum { proxies, .. } => proxies.iter().map(FaultProxy::url).collect(),
            Topology::Cluster(c) => vec![c.url()],
            Topology::Sentinel(s) => vec![s.url()],
        }
    }

    /// Every server that holds locks (replicas included), for the leak checks.
    pub fn lock_servers(&self) -> Vec<&RedisServer> {
        match self {
            Topology::Single { server, .. } => vec![server],
            Topology::Quorum { masters, .. } => masters.servers().iter().collect(),
            Topology::Cluster(c) => c.nodes().iter().collect(),
            Topology::Sentinel(s) => s.servers().iter().collect(),
        }
    }

    pub fn proxies(&self) -> Vec<&FaultProxy> {
        match self {
            Topology::Single { proxy, .. } => vec![proxy],
            Topology::Quorum { proxies, .. } => proxies.iter().collect(),
            _ => Vec::new(),
        }
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        if let Topology::Single {
            server,
            clock: Some(file),
            ..
        } = self
        {
            // The kit SIGKILLs the server after this: libfaketime cannot clean up after itself.
            if let Some(pid) = server.pid() {
                crate::clock::forget(pid);
            }
            let _ = std::fs::remove_file(file);
        }
    }
}

/// Lock keys and subscriptions left on `servers`. A fencing counter (or a fair lock's ticket
/// sequence, or a semaphore call's request id) is not a leak while it has a TTL: it outlives
/// its lock on purpose and expires. The keys in `keep` (the sem kind's semaphores, whose
/// counts the harness checks itself) are meant to stay.
pub fn leftovers(servers: &[&RedisServer], keep: &[String]) -> (Vec<String>, Vec<String>) {
    use relock_testkit::Value;
    let mut keys = Vec::new();
    let mut channels = Vec::new();
    for s in servers {
        let role = s.cmd(&["ROLE"]).ok();
        let is_replica = matches!(&role, Some(Value::Array(Some(items)))
            if items.first().and_then(Value::as_string).as_deref() == Some("slave"));
        if !is_replica {
            for k in s.keys().unwrap_or_default() {
                if keep.contains(&k) {
                    continue;
                }
                let counter =
                    k.starts_with("redisson_lock_token:") || k.starts_with("relock_request:");
                let ttl = s.cmd(&["PTTL", &k]).ok().and_then(|v| v.as_int());
                if !(counter && ttl.is_some_and(|t| t > 0)) {
                    keys.push(format!("{}: {k} (pttl {ttl:?})", s.port()));
                }
            }
        }
        // Sentinels talk to the servers on their own channel.
        for c in s
            .pubsub_channels()
            .unwrap_or_default()
            .into_iter()
            .filter(|c| !c.starts_with("__sentinel__:"))
        {
            channels.push(format!("{}: {c}", s.port()));
        }
        if let Ok(Value::Array(Some(items))) = s.cmd(&["PUBSUB", "SHARDCHANNELS"]) {
            for c in items.iter().filter_map(Value::as_string) {
                channels.push(format!("{}: {c} (sharded)", s.port()));
            }
        }
    }
    (keys, channels)
}
