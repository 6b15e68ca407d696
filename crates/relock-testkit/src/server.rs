//! One `redis-server` process and the faults we inject into it.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::resp::{self, Value};
use crate::{Error, Result};

/// How long a kit command waits for a reply. A paused server makes commands fail after this.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a fresh server gets to answer PING.
const START_TIMEOUT: Duration = Duration::from_secs(10);

static NEXT_DIR: AtomicU64 = AtomicU64::new(0);

/// How to start a server.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// Persist every write to an append-only file (`appendfsync always`), so that
    /// [`RedisServer::restart_with_data`] keeps the keys. Default: off.
    pub aof: bool,
    /// Extra `--name value` arguments for redis-server.
    pub extra_args: Vec<String>,
    /// Require this password (`--requirepass`) from every client; the kit's own commands
    /// authenticate with it. Default: none.
    pub password: Option<String>,
}

/// A running `redis-server` on `127.0.0.1`, killed and cleaned up on drop.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    dir: PathBuf,
    options: ServerOptions,
    child: Mutex<Option<Child>>,
}

impl RedisServer {
    /// Starts a server with default options (no persistence).
    ///
    /// # Errors
    /// [`Error::RedisServerMissing`] if `redis-server` is not installed, and
    /// [`Error::StartFailed`] if it does not answer PING within 10 s.
    pub fn start() -> Result<Self> {
        Self::start_with(ServerOptions::default())
    }

    /// Starts a server with `options`.
    ///
    /// # Errors
    /// As [`RedisServer::start`].
    pub fn start_with(options: ServerOptions) -> Result<Self> {
        which_redis_server()?;
        let dir = std::env::temp_dir().join(format!(
            "relock-testkit-{}-{}",
            std::process::id(),
            NEXT_DIR.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).map_err(|e| Error::Io {
            what: format!("creating {}", dir.display()),
            source: e,
        })?;
        // A free port can be taken by someone else between probe and bind; try a few.
        let mut last = None;
        for _ in 0..5 {
            let port = free_port()?;
            let server = RedisServer {
                port,
                dir: dir.clone(),
                options: options.clone(),
                child: Mutex::new(None),
            };
            match server.spawn() {
                Ok(()) => return Ok(server),
                Err(e) => {
                    last = Some(e);
                    let _ = server.kill();
                    // Keep the directory for the next attempt: skip Drop's clean-up.
                    std::mem::forget(server);
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        Err(last.expect("at least one attempt"))
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:<port>` (without credentials; see [`RedisServer::url_with_password`]).
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// `redis://:<password>@127.0.0.1:<port>` for a server started with
    /// [`ServerOptions::password`] (the plain URL otherwise).
    pub fn url_with_password(&self) -> String {
        match &self.options.password {
            Some(p) => format!("redis://:{p}@127.0.0.1:{}", self.port),
            None => self.url(),
        }
    }

    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The process id of the running server, if it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.lock().unwrap().as_ref().map(|c| c.id())
    }

    /// The server's temporary directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn spawn(&self) -> Result<()> {
        let mut cmd = Command::new("redis-server");
        cmd.arg("--port")
            .arg(self.port.to_string())
            .args(["--bind", "127.0.0.1", "--save", "", "--daemonize", "no"])
            .args(["--enable-debug-command", "local", "--protected-mode", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(self.log_path());
        if self.options.aof {
            cmd.args(["--appendonly", "yes", "--appendfsync", "always"]);
        } else {
            cmd.args(["--appendonly", "no"]);
        }
        if let Some(p) = &self.options.password {
            cmd.args(["--requirepass", p]);
        }
        cmd.args(&self.options.extra_args);
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| Error::Io {
                what: "spawning redis-server".into(),
                source: e,
            })?;
        *self.child.lock().unwrap() = Some(child);
        let start = Instant::now();
        loop {
            if let Ok(Value::Status(s)) = resp::command_as(
                self.port,
                self.options.password.as_deref(),
                &["PING"],
                COMMAND_TIMEOUT,
            ) {
                if s == "PONG" {
                    return Ok(());
                }
            }
            if let Some(status) = self
                .child
                .lock()
                .unwrap()
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                return Err(self.start_failed(format!("it exited with {status}")));
            }
            if start.elapsed() > START_TIMEOUT {
                return Err(self.start_failed(format!("no PONG within {START_TIMEOUT:?}")));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join(format!("redis-{}.log", self.port))
    }

    fn start_failed(&self, reason: String) -> Error {
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(5).collect();
        Error::StartFailed {
            port: self.port,
            reason,
            log: tail.into_iter().rev().collect::<Vec<_>>().join(" | "),
        }
    }

    /// Sends one command and returns the reply; an error reply becomes [`Error::Command`].
    ///
    /// # Errors
    /// I/O errors (the server is down or paused past 3 s) and error replies.
    pub fn cmd(&self, args: &[&str]) -> Result<Value> {
        let password = self.options.password.as_deref();
        match resp::command_as(self.port, password, args, COMMAND_TIMEOUT) {
            Ok(Value::Error(reply)) => Err(Error::Command {
                port: self.port,
                command: args.join(" "),
                reply,
            }),
            Ok(v) => Ok(v),
            Err(e) => Err(Error::Io {
                what: format!("`{}` on port {}", args.join(" "), self.port),
                source: e,
            }),
        }
    }

    fn cmd_int(&self, args: &[&str]) -> Result<i64> {
        let v = self.cmd(args)?;
        v.as_int().ok_or_else(|| Error::Command {
            port: self.port,
            command: args.join(" "),
            reply: format!("expected an integer, got {v:?}"),
        })
    }

    /// `DBSIZE`.
    pub fn dbsize(&self) -> Result<i64> {
        self.cmd_int(&["DBSIZE"])
    }

    /// All keys (`KEYS *`), sorted; for assertions on what was left behind.
    pub fn keys(&self) -> Result<Vec<String>> {
        let mut keys: Vec<String> = match self.cmd(&["KEYS", "*"])? {
            Value::Array(Some(items)) => items.iter().filter_map(Value::as_string).collect(),
            _ => Vec::new(),
        };
        keys.sort();
        Ok(keys)
    }

    /// Active pub/sub channels (`PUBSUB CHANNELS`), sorted.
    pub fn pubsub_channels(&self) -> Result<Vec<String>> {
        let mut chans: Vec<String> = match self.cmd(&["PUBSUB", "CHANNELS"])? {
            Value::Array(Some(items)) => items.iter().filter_map(Value::as_string).collect(),
            _ => Vec::new(),
        };
        chans.sort();
        Ok(chans)
    }

    /// Subscribers of one channel (`PUBSUB NUMSUB`).
    pub fn pubsub_numsub(&self, channel: &str) -> Result<i64> {
        match self.cmd(&["PUBSUB", "NUMSUB", channel])? {
            Value::Array(Some(items)) if items.len() == 2 => Ok(items[1].as_int().unwrap_or(0)),
            other => Err(Error::Command {
                port: self.port,
                command: "PUBSUB NUMSUB".into(),
                reply: format!("{other:?}"),
            }),
        }
    }

    /// How many times the server ran `command` (from `INFO commandstats`, e.g. `evalsha`).
    pub fn command_calls(&self, command: &str) -> Result<u64> {
        let info = self
            .cmd(&["INFO", "commandstats"])?
            .as_string()
            .unwrap_or_default();
        let prefix = format!("cmdstat_{}:calls=", command.to_ascii_lowercase());
        Ok(info
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|rest| rest.split(',').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0))
    }

    /// `CONFIG RESETSTAT`: zeroes `INFO commandstats`.
    pub fn reset_stats(&self) -> Result<()> {
        self.cmd(&["CONFIG", "RESETSTAT"]).map(drop)
    }

    /// `SCRIPT FLUSH`: the next EVALSHA gets NOSCRIPT.
    pub fn script_flush(&self) -> Result<()> {
        self.cmd(&["SCRIPT", "FLUSH"]).map(drop)
    }

    /// `CLIENT PAUSE <ms> ALL`.
    pub fn client_pause(&self, pause: Duration) -> Result<()> {
        self.cmd(&["CLIENT", "PAUSE", &pause.as_millis().to_string(), "ALL"])
            .map(drop)
    }

    /// `CLIENT KILL TYPE <normal|pubsub|...>`; returns how many were killed.
    pub fn client_kill_type(&self, kind: &str) -> Result<i64> {
        self.cmd_int(&["CLIENT", "KILL", "TYPE", kind])
    }

    /// `DEBUG SLEEP <secs>`, sent from a background thread (the server blocks; so would we).
    pub fn debug_sleep(&self, secs: f64) {
        let port = self.port;
        let secs = secs.to_string();
        std::thread::spawn(move || {
            let _ = resp::command(port, &["DEBUG", "SLEEP", &secs], Duration::from_secs(60));
        });
    }

    /// Sends a signal to the process (`kill -<sig> <pid>`).
    fn signal(&self, sig: &str) -> Result<()> {
        let pid = self.pid().ok_or_else(|| Error::Io {
            what: format!("signalling redis-server on port {}", self.port),
            source: std::io::Error::other("the server is not running"),
        })?;
        let status = Command::new("kill")
            .args([sig, &pid.to_string()])
            .status()
            .map_err(|e| Error::Io {
                what: "running kill".into(),
                source: e,
            })?;
        if status.success() {
            Ok(())
        } else {
            Err(Error::Io {
                what: format!("kill {sig} {pid}"),
                source: std::io::Error::other(status.to_string()),
            })
        }
    }

    /// SIGSTOP: the server stops answering but keeps its sockets.
    pub fn pause(&self) -> Result<()> {
        self.signal("-STOP")
    }

    /// SIGCONT after [`RedisServer::pause`].
    pub fn resume(&self) -> Result<()> {
        self.signal("-CONT")
    }

    /// SIGKILL, and waits for the process to be gone.
    pub fn kill(&self) -> Result<()> {
        if let Some(child) = self.child.lock().unwrap().take() {
            kill_child(child);
        }
        Ok(())
    }

    /// Kills the server and starts it again on the same port with no data.
    ///
    /// # Errors
    /// As [`RedisServer::start`].
    pub fn restart_empty(&self) -> Result<()> {
        self.kill()?;
        let aof_dir = self.dir.join("appendonlydir");
        let _ = std::fs::remove_dir_all(aof_dir);
        let _ = std::fs::remove_file(self.dir.join("dump.rdb"));
        self.spawn()
    }

    /// Kills the server and starts it again on the same port, reloading its append-only file.
    /// Needs [`ServerOptions::aof`]; without it the restart is empty.
    ///
    /// # Errors
    /// As [`RedisServer::start`].
    pub fn restart_with_data(&self) -> Result<()> {
        self.kill()?;
        self.spawn()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(child) = self.child.lock().map(|mut c| c.take()).unwrap_or(None) {
            // A paused server ignores SIGTERM, but not SIGKILL.
            kill_child(child);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn kill_child(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

pub(crate) fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| Error::Io {
        what: "finding a free port".into(),
        source: e,
    })?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| Error::Io {
            what: "finding a free port".into(),
            source: e,
        })
}

fn which_redis_server() -> Result<()> {
    match Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => Ok(()),
        _ => Err(Error::RedisServerMissing),
    }
}

/// N independent masters (no replication between them), for quorum locks.
#[derive(Debug)]
pub struct RedisMasters {
    servers: Vec<RedisServer>,
}

impl RedisMasters {
    /// Starts `n` servers.
    ///
    /// # Errors
    /// As [`RedisServer::start`].
    pub fn start(n: usize) -> Result<Self> {
        Ok(RedisMasters {
            servers: (0..n)
                .map(|_| RedisServer::start())
                .collect::<Result<_>>()?,
        })
    }

    /// The servers, in start order.
    pub fn servers(&self) -> &[RedisServer] {
        &self.servers
    }

    /// Their URLs, in start order.
    pub fn urls(&self) -> Vec<String> {
        self.servers.iter().map(RedisServer::url).collect()
    }
}

impl std::ops::Index<usize> for RedisMasters {
    type Output = RedisServer;
    fn index(&self, i: usize) -> &RedisServer {
        &self.servers[i]
    }
}
