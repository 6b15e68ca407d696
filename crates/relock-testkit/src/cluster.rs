//! A Redis Cluster on loopback: 3 masters and 3 replicas, built with `redis-cli --cluster
//! create`, with helpers to find the master of a key and to fail a master over.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::resp::Value;
use crate::server::{free_port, RedisServer, ServerOptions};
use crate::{Error, Result};

const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// 3 masters + 3 replicas. Dropping it kills every node.
#[derive(Debug)]
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts 6 nodes, creates the cluster (one replica per master) and waits until every node
    /// reports `cluster_state:ok` and every replica is in sync.
    ///
    /// # Errors
    /// As [`RedisServer::start`]; [`Error::StartFailed`] if the cluster does not form in 20 s.
    pub fn start() -> Result<Self> {
        Self::start_with(ServerOptions::default())
    }

    /// As [`RedisCluster::start`], every node started with `options`: with
    /// [`ServerOptions::password`] and [`ServerOptions::acl_user`] every node refuses
    /// unauthenticated clients, replicas sync as the ACL user, the kit (cluster creation, and
    /// helpers such as [`RedisCluster::keys`]) authenticates with the password, and
    /// [`RedisCluster::url_with_acl_user`] names the user. `extra_args` are added to every node's;
    /// `aof` applies to every node.
    ///
    /// # Errors
    /// As [`RedisCluster::start`]; [`Error::StartFailed`] for [`ServerOptions::tls`] (a TLS
    /// cluster is not supported by the kit).
    pub fn start_with(options: ServerOptions) -> Result<Self> {
        if options.tls {
            return Err(Error::StartFailed {
                port: 0,
                reason: "the kit's cluster does not support ServerOptions::tls".into(),
                log: String::new(),
            });
        }
        let mut nodes = Vec::new();
        for _ in 0..6 {
            // The bus port is probed apart from the node's own (which `start_with` retries),
            // so it can be taken in between too: a node that fails to start gets a new one
            // (a clean-clone run saw "bind: Address already in use" on the bus port).
            let mut last = None;
            for _ in 0..5 {
                let bus = free_port()?;
                let mut extra_args: Vec<String> = [
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "1000",
                    "--cluster-port",
                    &bus.to_string(),
                ]
                .map(String::from)
                .to_vec();
                extra_args.extend(options.extra_args.iter().cloned());
                match RedisServer::start_with(ServerOptions {
                    extra_args,
                    ..options.clone()
                }) {
                    Ok(node) => {
                        last = None;
                        nodes.push(node);
                        break;
                    }
                    Err(e) => last = Some(e),
                }
            }
            if let Some(e) = last {
                return Err(e);
            }
        }
        let mut create = Command::new("redis-cli");
        if let Some(p) = &options.password {
            // Through the environment, not `-a`: no warning, and not in `ps`.
            create.env("REDISCLI_AUTH", p);
        }
        let out = create
            .args(["--cluster", "create"])
            .args(nodes.iter().map(RedisServer::addr))
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .map_err(|e| Error::Io {
                what: "running redis-cli --cluster create (install redis-tools)".into(),
                source: e,
            })?;
        if !out.status.success() {
            return Err(Error::StartFailed {
                port: nodes[0].port(),
                reason: format!(
                    "redis-cli --cluster create failed: {}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ),
                log: String::new(),
            });
        }
        let cluster = RedisCluster { nodes };
        cluster.wait_ready()?;
        Ok(cluster)
    }

    /// Waits until every node says `cluster_state:ok`, and every replica's link is up.
    ///
    /// # Errors
    /// [`Error::StartFailed`] after 20 s.
    pub fn wait_ready(&self) -> Result<()> {
        let start = Instant::now();
        loop {
            let ok = self.nodes.iter().all(|n| {
                let info = n.cmd(&["CLUSTER", "INFO"]).ok().and_then(|v| v.as_string());
                let repl = n
                    .cmd(&["INFO", "replication"])
                    .ok()
                    .and_then(|v| v.as_string());
                info.is_some_and(|i| i.contains("cluster_state:ok"))
                    && repl.is_some_and(|r| {
                        r.contains("role:master") || r.contains("master_link_status:up")
                    })
            });
            if ok {
                return Ok(());
            }
            if start.elapsed() > READY_TIMEOUT {
                return Err(Error::StartFailed {
                    port: self.nodes[0].port(),
                    reason: "the cluster did not become ready in 20 s".into(),
                    log: String::new(),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// All six nodes, in start order.
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// `redis-cluster://` URL naming every node.
    pub fn url(&self) -> String {
        let addrs: Vec<String> = self.nodes.iter().map(RedisServer::addr).collect();
        format!("redis-cluster://{}", addrs.join(","))
    }

    /// `redis-cluster://<user>:<password>@` URL naming every node, for a cluster started with
    /// [`ServerOptions::acl_user`] (as [`RedisCluster::url`] otherwise).
    pub fn url_with_acl_user(&self) -> String {
        let addrs: Vec<String> = self.nodes.iter().map(RedisServer::addr).collect();
        match &self.nodes[0].options().acl_user {
            Some((user, p)) => format!("redis-cluster://{user}:{p}@{}", addrs.join(",")),
            None => self.url(),
        }
    }

    /// The nodes that are masters right now.
    pub fn masters(&self) -> Vec<&RedisServer> {
        self.nodes.iter().filter(|n| n.is_master()).collect()
    }

    /// One name per master, `<prefix>:<i>` for the first `i` that lands on each, with that
    /// master's port: for tests that want a key on every master.
    ///
    /// # Errors
    /// Command errors.
    pub fn one_name_per_master(&self, prefix: &str) -> Result<Vec<(String, u16)>> {
        let masters = self.masters().len();
        let mut names: Vec<(String, u16)> = Vec::new();
        for i in 0.. {
            let name = format!("{prefix}:{i}");
            let port = self.master_of(&name)?.port();
            if !names.iter().any(|(_, p)| *p == port) {
                names.push((name, port));
            }
            if names.len() == masters {
                break;
            }
        }
        Ok(names)
    }

    /// The master serving `key`'s slot right now.
    ///
    /// # Errors
    /// Command errors.
    pub fn master_of(&self, key: &str) -> Result<&RedisServer> {
        let slot = self.nodes[0]
            .cmd(&["CLUSTER", "KEYSLOT", key])?
            .as_int()
            .unwrap_or(-1);
        let port = self.slot_owner_port(slot)?;
        self.nodes
            .iter()
            .find(|n| n.port() as i64 == port)
            .ok_or_else(|| Error::Command {
                port: self.nodes[0].port(),
                command: "CLUSTER SLOTS".into(),
                reply: format!("no node serves slot {slot}"),
            })
    }

    fn slot_owner_port(&self, slot: i64) -> Result<i64> {
        for n in self.masters() {
            if let Value::Array(Some(ranges)) = n.cmd(&["CLUSTER", "SLOTS"])? {
                for r in ranges {
                    if let Value::Array(Some(r)) = r {
                        let (lo, hi) = (r[0].as_int().unwrap_or(-1), r[1].as_int().unwrap_or(-1));
                        if (lo..=hi).contains(&slot) {
                            if let Value::Array(Some(m)) = &r[2] {
                                return Ok(m[1].as_int().unwrap_or(-1));
                            }
                        }
                    }
                }
                break;
            }
        }
        Ok(-1)
    }

    /// The replica of `master`.
    pub fn replica_of(&self, master: &RedisServer) -> Option<&RedisServer> {
        self.nodes.iter().find(|n| {
            n.cmd(&["INFO", "replication"])
                .ok()
                .and_then(|v| v.as_string())
                .is_some_and(|r| r.contains(&format!("master_port:{}", master.port())))
        })
    }

    /// Graceful failover: `CLUSTER FAILOVER` on `master`'s replica (which first catches up),
    /// then waits until it is master and the cluster is ok.
    ///
    /// # Errors
    /// Command errors, or [`Error::StartFailed`] if it does not complete in 20 s.
    pub fn failover(&self, master: &RedisServer) -> Result<&RedisServer> {
        self.promote(master, &["CLUSTER", "FAILOVER"])
    }

    /// `CLUSTER FAILOVER TAKEOVER` on `master`'s replica: promoted without the master's (or the
    /// other masters') agreement, and without catching up. For a master that is dead or stopped.
    ///
    /// # Errors
    /// As [`RedisCluster::failover`].
    pub fn takeover(&self, master: &RedisServer, replica: &RedisServer) -> Result<()> {
        let _ = master;
        replica.cmd(&["CLUSTER", "FAILOVER", "TAKEOVER"])?;
        self.wait_master(replica)
    }

    fn promote(&self, master: &RedisServer, cmd: &[&str]) -> Result<&RedisServer> {
        let replica = self.replica_of(master).ok_or_else(|| Error::Command {
            port: master.port(),
            command: "INFO replication".into(),
            reply: "no replica found".into(),
        })?;
        replica.cmd(cmd)?;
        self.wait_master(replica)?;
        Ok(replica)
    }

    fn wait_master(&self, node: &RedisServer) -> Result<()> {
        let start = Instant::now();
        while !(node.is_master()
            && node
                .cmd(&["CLUSTER", "INFO"])
                .ok()
                .and_then(|v| v.as_string())
                .is_some_and(|i| i.contains("cluster_state:ok")))
        {
            if start.elapsed() > READY_TIMEOUT {
                return Err(Error::StartFailed {
                    port: node.port(),
                    reason: "failover did not complete in 20 s".into(),
                    log: String::new(),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Waits until `master`'s replica has acknowledged everything the master has written.
    ///
    /// # Errors
    /// [`Error::StartFailed`] if it does not catch up in 20 s.
    pub fn wait_replica_synced(&self, master: &RedisServer) -> Result<()> {
        let start = Instant::now();
        loop {
            let info = master
                .cmd(&["INFO", "replication"])?
                .as_string()
                .unwrap_or_default();
            let field = |prefix: &str| {
                info.lines()
                    .find_map(|l| l.strip_prefix(prefix))
                    .map(str::to_string)
            };
            let own = field("master_repl_offset:").and_then(|v| v.trim().parse::<i64>().ok());
            let acked = field("slave0:").and_then(|v| {
                v.split(',')
                    .find_map(|kv| kv.strip_prefix("offset="))
                    .and_then(|o| o.trim().parse::<i64>().ok())
            });
            if own.is_some() && own == acked {
                return Ok(());
            }
            if start.elapsed() > READY_TIMEOUT {
                return Err(Error::StartFailed {
                    port: master.port(),
                    reason: format!("replica not in sync after 20 s: {own:?} vs {acked:?}"),
                    log: String::new(),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Keys on all masters (sorted).
    pub fn keys(&self) -> Vec<String> {
        let mut all: Vec<String> = self
            .masters()
            .iter()
            .flat_map(|m| m.keys().unwrap_or_default())
            .collect();
        all.sort();
        all
    }

    /// Active shard channels on all nodes (`PUBSUB SHARDCHANNELS`).
    pub fn shard_channels(&self) -> Vec<String> {
        let mut all = Vec::new();
        for n in &self.nodes {
            if let Ok(Value::Array(Some(items))) = n.cmd(&["PUBSUB", "SHARDCHANNELS"]) {
                all.extend(items.iter().filter_map(Value::as_string));
            }
        }
        all.sort();
        all
    }
}

impl RedisServer {
    /// Whether this node is a master (`ROLE`).
    pub fn is_master(&self) -> bool {
        matches!(self.cmd(&["ROLE"]), Ok(Value::Array(Some(r))) if r.first().and_then(Value::as_string).as_deref() == Some("master"))
    }
}
