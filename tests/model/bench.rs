//! The real side: one redis-server started by the test kit, a connection that runs the scripts,
//! and a subscriber that hears every message published on the server.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use relock::fred;
use relock::fred::interfaces::{ClientLike, EventInterface, LuaInterface, PubsubInterface};
use relock::fred::types::{CustomCommand, Value};
use relock_testkit::RedisServer;

/// A script's or a command's reply, as the model predicts it too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Nil,
    Int(i64),
    Str(String),
    Array(Vec<Reply>),
    /// An error reply: its code, the first word (`WRONGTYPE`, `NOTALOCK`, `ERR`).
    Err(String),
}

impl Reply {
    fn from_value(v: Value) -> Reply {
        match v {
            Value::Null => Reply::Nil,
            Value::Integer(i) => Reply::Int(i),
            Value::Boolean(b) => Reply::Int(b as i64),
            Value::Array(a) => Reply::Array(a.into_iter().map(Reply::from_value).collect()),
            other => Reply::Str(other.as_string().unwrap_or_else(|| format!("{other:?}"))),
        }
    }

    fn from_error(e: &fred::error::Error) -> Reply {
        let code = e
            .details()
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_owned();
        Reply::Err(code)
    }
}

/// One key as the server has it: its value and its PTTL (-1: no expiry), read at `read`.
#[derive(Debug, Clone, PartialEq)]
pub struct Actual {
    pub data: Stored,
    pub pttl: i64,
    /// When the PTTL was asked for: the model's TTL is compared as it was then, not after
    /// the rest of a slow snapshot.
    pub at: std::time::Instant,
}

/// A key's value, by type.
#[derive(Debug, Clone, PartialEq)]
pub enum Stored {
    Str(String),
    Hash(BTreeMap<String, String>),
    /// Member -> score, as Redis formats it (`5`, not `5.0`).
    ZSet(BTreeMap<String, String>),
    List(Vec<String>),
    Set(BTreeSet<String>),
}

/// One redis-server and the connections the model test drives it with.
pub struct Bench {
    rt: tokio::runtime::Runtime,
    _server: RedisServer,
    conn: fred::clients::Client,
    _sub: fred::clients::SubscriberClient,
    heard: Arc<Mutex<Vec<(String, String)>>>,
    markers: std::cell::Cell<u64>,
}

/// The channel the bench publishes its own markers on, to know it has heard everything before.
const MARKER: &str = "model-test:marker";

impl Bench {
    pub fn start() -> Bench {
        let server = relock_tests::server();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let config = fred::types::config::Config::from_url(&server.url()).unwrap();
        let (conn, sub, heard) = rt.block_on(async {
            let conn = fred::types::Builder::from_config(config.clone())
                .build()
                .unwrap();
            conn.init().await.unwrap();
            let sub = fred::types::Builder::from_config(config)
                .build_subscriber_client()
                .unwrap();
            sub.init().await.unwrap();
            let heard = Arc::new(Mutex::new(Vec::new()));
            let mut rx = sub.message_rx();
            let h = heard.clone();
            tokio::spawn(async move {
                while let Ok(m) = rx.recv().await {
                    let v = m.value.as_string().unwrap_or_default();
                    h.lock().unwrap().push((m.channel.to_string(), v));
                }
            });
            sub.psubscribe("*").await.unwrap();
            (conn, sub, heard)
        });
        Bench {
            rt,
            _server: server,
            conn,
            _sub: sub,
            heard,
            markers: std::cell::Cell::new(0),
        }
    }

    /// Runs `lua` (EVAL) with `keys` and `args`.
    pub fn eval(&self, lua: &str, keys: &[String], args: &[String]) -> Reply {
        let r = self.rt.block_on(self.conn.eval::<Value, _, _, _>(
            lua.to_owned(),
            keys.to_vec(),
            args.to_vec(),
        ));
        match r {
            Ok(v) => Reply::from_value(v),
            Err(e) => Reply::from_error(&e),
        }
    }

    /// Runs one command.
    pub fn cmd(&self, args: &[&str]) -> Reply {
        let (name, rest) = args.split_first().expect("a command");
        let cmd = CustomCommand::new(name.to_string(), None::<u16>, false);
        let rest: Vec<String> = rest.iter().map(|s| s.to_string()).collect();
        match self.rt.block_on(self.conn.custom::<Value, _>(cmd, rest)) {
            Ok(v) => Reply::from_value(v),
            Err(e) => Reply::from_error(&e),
        }
    }

    fn strings(&self, args: &[&str]) -> Vec<String> {
        match self.cmd(args) {
            Reply::Array(a) => a
                .into_iter()
                .map(|r| match r {
                    Reply::Str(s) => s,
                    Reply::Int(i) => i.to_string(),
                    other => panic!("{args:?}: {other:?}"),
                })
                .collect(),
            other => panic!("{args:?}: {other:?}"),
        }
    }

    /// The server's clock (TIME), in µs.
    pub fn now_us(&self) -> i64 {
        let t = self.strings(&["TIME"]);
        t[0].parse::<i64>().unwrap() * 1_000_000 + t[1].parse::<i64>().unwrap()
    }

    /// Every key on the server, with its value and PTTL.
    pub fn snapshot(&self) -> BTreeMap<String, Actual> {
        let mut all = BTreeMap::new();
        for key in self.strings(&["KEYS", "*"]) {
            let kind = match self.cmd(&["TYPE", &key]) {
                Reply::Str(s) => s,
                other => panic!("TYPE {key}: {other:?}"),
            };
            let pairs = |v: Vec<String>| -> BTreeMap<String, String> {
                v.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect()
            };
            let data = match kind.as_str() {
                "string" => match self.cmd(&["GET", &key]) {
                    Reply::Str(s) => Stored::Str(s),
                    Reply::Int(i) => Stored::Str(i.to_string()),
                    // Expired between KEYS and GET.
                    Reply::Nil => continue,
                    other => panic!("GET {key}: {other:?}"),
                },
                "hash" => Stored::Hash(pairs(self.strings(&["HGETALL", &key]))),
                "zset" => Stored::ZSet(pairs(self.strings(&[
                    "ZRANGE",
                    &key,
                    "0",
                    "-1",
                    "WITHSCORES",
                ]))),
                "list" => Stored::List(self.strings(&["LRANGE", &key, "0", "-1"])),
                "set" => Stored::Set(self.strings(&["SMEMBERS", &key]).into_iter().collect()),
                "none" => continue,
                other => panic!("{key}: a {other}, which the model test does not read"),
            };
            let at = std::time::Instant::now();
            let pttl = match self.cmd(&["PTTL", &key]) {
                Reply::Int(p) => p,
                other => panic!("PTTL {key}: {other:?}"),
            };
            if pttl == -2 {
                continue;
            }
            all.insert(key, Actual { data, pttl, at });
        }
        all
    }

    /// The messages published since the last call, in order: a marker is published on the
    /// script's connection and awaited, so everything published before it has been heard.
    pub fn heard(&self) -> Vec<(String, String)> {
        let n = self.markers.get() + 1;
        self.markers.set(n);
        let marker = n.to_string();
        let _: i64 = self
            .rt
            .block_on(self.conn.publish(MARKER, marker.as_str()))
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let done = {
                let h = self.heard.lock().unwrap();
                h.iter().any(|(c, v)| c == MARKER && *v == marker)
            };
            if done {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the subscriber did not hear marker {marker} within 10 s"
            );
            // Lets the subscriber's task run (the runtime runs only inside block_on).
            self.rt
                .block_on(async { tokio::time::sleep(Duration::from_millis(1)).await });
        }
        let mut h = self.heard.lock().unwrap();
        h.drain(..).filter(|(c, _)| c != MARKER).collect()
    }

    /// Moves every key's expiry `ms` closer, deleting those it reaches: time passing, as far
    /// as TTLs go, without waiting for it.
    pub fn age_ttls(&self, ms: i64) {
        // One script, so that no time passes between reading a PTTL and setting it.
        let lua = "local ms = tonumber(ARGV[1]) \
                   for _, k in ipairs(redis.call('keys', '*')) do \
                     local p = redis.call('pttl', k) \
                     if p >= 0 then \
                       if p - ms <= 0 then redis.call('del', k) \
                       else redis.call('pexpire', k, p - ms) end \
                     end \
                   end \
                   return 1";
        let r = self.eval(lua, &[], &[ms.to_string()]);
        assert_eq!(r, Reply::Int(1), "aging the keys");
    }

    /// What an empty restart leaves: no key, no cached script.
    pub fn wipe(&self) {
        assert_eq!(self.cmd(&["FLUSHALL"]), Reply::Str("OK".into()));
        assert_eq!(self.cmd(&["SCRIPT", "FLUSH"]), Reply::Str("OK".into()));
        self.heard();
    }
}
