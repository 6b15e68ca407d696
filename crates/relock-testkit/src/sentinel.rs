//! Sentinel on loopback: one master, one replica and three sentinels, with a helper that makes
//! the sentinels fail the master over.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::resp::{self, Value};
use crate::server::{free_port, RedisServer, ServerOptions};
use crate::{Error, Result};

/// The service name the sentinels monitor.
pub(crate) const SERVICE: &str = "mymaster";
/// How long the set-up may take to settle (sentinels discovering the replica and each other):
/// 20 s once ran out on a loaded 2-core machine in CI; settling normally takes 1-3 s.
const TIMEOUT: Duration = Duration::from_secs(40);

/// One master, one replica, three sentinels. Dropping it kills every process.
#[derive(Debug)]
pub struct RedisSentinel {
    servers: Vec<RedisServer>,
    sentinels: Vec<(u16, PathBuf, Child)>,
    options: ServerOptions,
}

impl RedisSentinel {
    /// Starts the master, the replica (and waits for its sync), and three sentinels (and waits
    /// until each sees the replica and the other sentinels).
    ///
    /// # Errors
    /// As [`RedisServer::start`]; [`Error::StartFailed`] if the set-up does not settle in 20 s.
    pub fn start() -> Result<Self> {
        Self::start_with(ServerOptions::default())
    }

    /// As [`RedisSentinel::start`], the master and the replica started with `options`. With
    /// [`ServerOptions::acl_user`] the replica syncs as that user and the sentinels monitor,
    /// reconfigure and fail over the servers as that user (`sentinel auth-user`/`auth-pass`);
    /// with [`ServerOptions::password`], as the default user if there is no ACL user. The
    /// sentinels are protected the same way: `requirepass` with [`ServerOptions::password`]
    /// (`sentinel sentinel-pass` between them) and the same ACL user, so that one URL's
    /// credentials ([`RedisSentinel::url_with_acl_user`]) work on the sentinels and on the
    /// master. The kit's own commands authenticate with the password.
    ///
    /// # Errors
    /// As [`RedisSentinel::start`]; [`Error::StartFailed`] for [`ServerOptions::tls`] (not
    /// supported by the kit's sentinels).
    pub fn start_with(options: ServerOptions) -> Result<Self> {
        if options.tls {
            return Err(Error::StartFailed {
                port: 0,
                reason: "the kit's sentinel set-up does not support ServerOptions::tls".into(),
                log: String::new(),
            });
        }
        let master = RedisServer::start_with(options.clone())?;
        let mut extra_args = options.extra_args.clone();
        extra_args.extend([
            "--replicaof".into(),
            "127.0.0.1".into(),
            master.port().to_string(),
        ]);
        let replica = RedisServer::start_with(ServerOptions {
            extra_args,
            ..options.clone()
        })?;
        let mut this = RedisSentinel {
            servers: vec![master, replica],
            sentinels: Vec::new(),
            options,
        };
        this.wait(
            || {
                this.servers[1]
                    .cmd(&["INFO", "replication"])
                    .ok()
                    .and_then(|v| v.as_string())
                    .is_some_and(|r| r.contains("master_link_status:up"))
            },
            "the replica to sync",
        )?;
        for _ in 0..3 {
            let port = free_port()?;
            let dir = this.servers[0].dir().join(format!("sentinel-{port}"));
            std::fs::create_dir_all(&dir).map_err(|e| Error::Io {
                what: "sentinel dir".into(),
                source: e,
            })?;
            let conf = dir.join("sentinel.conf");
            let mut text = format!(
                "port {port}\nbind 127.0.0.1\ndir {}\nlogfile {}\nsentinel monitor {SERVICE} 127.0.0.1 {} 2\n\
                 sentinel down-after-milliseconds {SERVICE} 1000\nsentinel failover-timeout {SERVICE} 5000\n",
                dir.display(),
                dir.join("sentinel.log").display(),
                this.servers[0].port()
            );
            text.push_str(&this.sentinel_auth_lines());
            std::fs::write(&conf, text).map_err(|e| Error::Io {
                what: "sentinel.conf".into(),
                source: e,
            })?;
            let child = Command::new("redis-server")
                .arg(&conf)
                .arg("--sentinel")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| Error::Io {
                    what: "spawning redis-server --sentinel".into(),
                    source: e,
                })?;
            this.sentinels.push((port, dir, child));
        }
        let ports: Vec<u16> = this.sentinel_ports();
        this.wait(
            || {
                ports.iter().all(|p| {
                    match this.sentinel_cmd(
                        *p,
                        &["SENTINEL", "MASTER", SERVICE],
                        Duration::from_secs(1),
                    ) {
                        Ok(Value::Array(Some(kv))) => {
                            let get = |k: &str| {
                                kv.chunks(2)
                                    .find(|c| c[0].as_string().as_deref() == Some(k))
                                    .and_then(|c| c[1].as_int())
                            };
                            get("num-slaves") == Some(1) && get("num-other-sentinels") == Some(2)
                        }
                        _ => false,
                    }
                })
            },
            "the sentinels to see the replica and each other",
        )?;
        Ok(this)
    }

    fn wait(&self, mut cond: impl FnMut() -> bool, what: &str) -> Result<()> {
        let start = Instant::now();
        while !cond() {
            if start.elapsed() > TIMEOUT {
                return Err(Error::StartFailed {
                    port: self.servers[0].port(),
                    reason: format!("{what}: not within {TIMEOUT:?}"),
                    log: String::new(),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// The sentinel.conf lines that protect a sentinel and let it reach the servers.
    fn sentinel_auth_lines(&self) -> String {
        let mut text = String::new();
        if let Some(p) = &self.options.password {
            text.push_str(&format!("requirepass {p}\nsentinel sentinel-pass {p}\n"));
        }
        if let Some((user, p)) = &self.options.acl_user {
            text.push_str(&format!(
                "user {user} on >{p} ~* &* +@all\nsentinel auth-user {SERVICE} {user}\nsentinel auth-pass {SERVICE} {p}\n"
            ));
        } else if let Some(p) = &self.options.password {
            text.push_str(&format!("sentinel auth-pass {SERVICE} {p}\n"));
        }
        text
    }

    /// One command to the sentinel on `port`, authenticated with the password if there is one.
    fn sentinel_cmd(&self, port: u16, args: &[&str], timeout: Duration) -> std::io::Result<Value> {
        resp::command_as(port, self.options.password.as_deref(), args, timeout)
    }

    /// The sentinels' ports.
    pub fn sentinel_ports(&self) -> Vec<u16> {
        self.sentinels.iter().map(|(p, _, _)| *p).collect()
    }

    /// `redis-sentinel://` URL naming the three sentinels and the service.
    pub fn url(&self) -> String {
        let addrs: Vec<String> = self
            .sentinel_ports()
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        format!(
            "redis-sentinel://{}?sentinelServiceName={SERVICE}",
            addrs.join(",")
        )
    }

    /// `redis-sentinel://<user>:<password>@` URL naming the three sentinels and the service, for
    /// a set-up started with [`ServerOptions::acl_user`] (as [`RedisSentinel::url`] otherwise).
    pub fn url_with_acl_user(&self) -> String {
        match &self.options.acl_user {
            Some((user, p)) => self.url().replacen("://", &format!("://{user}:{p}@"), 1),
            None => self.url(),
        }
    }

    /// The two data servers (initially master, then replica).
    pub fn servers(&self) -> &[RedisServer] {
        &self.servers
    }

    /// The data server that is master right now.
    pub fn master(&self) -> Option<&RedisServer> {
        self.servers.iter().find(|s| s.is_master())
    }

    /// `SENTINEL FAILOVER` and waits until the sentinels report the other server as master,
    /// it says so itself, and the old master has been turned into a replica. Returns the new
    /// master.
    ///
    /// # Errors
    /// Command errors; [`Error::StartFailed`] if it does not complete in 20 s.
    pub fn failover(&self) -> Result<&RedisServer> {
        let old = self.master().map(RedisServer::port).unwrap_or_default();
        let new = self
            .servers
            .iter()
            .find(|s| s.port() != old)
            .expect("two servers");
        let p = self.sentinel_ports()[0];
        self.sentinel_cmd(
            p,
            &["SENTINEL", "FAILOVER", SERVICE],
            Duration::from_secs(3),
        )
        .and_then(|v| match v {
            Value::Error(e) => Err(std::io::Error::other(e)),
            v => Ok(v),
        })
        .map_err(|e| Error::Io {
            what: "SENTINEL FAILOVER".into(),
            source: e,
        })?;
        let ports = self.sentinel_ports();
        let old_server = self.servers.iter().find(|s| s.port() == old);
        self.wait(|| {
            new.is_master()
                && old_server.is_none_or(|o| !o.is_master())
                && ports.iter().all(|p| {
                    matches!(
                        self.sentinel_cmd(*p, &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE], Duration::from_secs(1)),
                        Ok(Value::Array(Some(a))) if a.get(1).and_then(Value::as_int) == Some(i64::from(new.port()))
                    )
                })
        }, "the failover")?;
        Ok(new)
    }
}

impl Drop for RedisSentinel {
    fn drop(&mut self) {
        for (_, dir, child) in &mut self.sentinels {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
