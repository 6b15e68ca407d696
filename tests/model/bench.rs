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
    /// Told at each message heard: waiting for a marker wakes when it comes, not at a poll.
    arrived: Arc<tokio::sync::Notify>,
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
        let arrived = Arc::new(tokio::sync::Notify::new());
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
            let told = arrived.clone();
            tokio::spawn(async move {
                while let Ok(m) = rx.recv().await {
                    let v = m.value.as_string().unwrap_or_default();
                    h.lock().unwrap().push((m.channel.to_string(), v));
                    told.notify_one();
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
            arrived,
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

    /// Every key on the server, with its value and PTTL, read by one script: one round trip
    /// per step instead of three per key, and every PTTL read at one instant.
    pub fn snapshot(&self) -> BTreeMap<String, Actual> {
        // Per key: its name, type, PTTL and contents (a flat list of strings).
        const SNAPSHOT: &str = "local out = {} \
            for _, k in ipairs(redis.call('keys', '*')) do \
              local t = redis.call('type', k)['ok'] \
              local v \
              if t == 'string' then v = {redis.call('get', k)} \
              elseif t == 'hash' then v = redis.call('hgetall', k) \
              elseif t == 'zset' then v = redis.call('zrange', k, 0, -1, 'withscores') \
              elseif t == 'list' then v = redis.call('lrange', k, 0, -1) \
              elseif t == 'set' then v = redis.call('smembers', k) \
              else v = {} end \
              table.insert(out, {k, t, redis.call('pttl', k), v}) \
            end \
            return out";
        // When the PTTLs are read: no earlier than this.
        let at = std::time::Instant::now();
        let reply = self.eval(SNAPSHOT, &[], &[]);
        let Reply::Array(keys) = reply else {
            panic!("the snapshot script: {reply:?}");
        };
        let text = |r: Reply| match r {
            Reply::Str(s) => s,
            Reply::Int(i) => i.to_string(),
            other => panic!("the snapshot script: {other:?}"),
        };
        let mut all = BTreeMap::new();
        for entry in keys {
            let Reply::Array(entry) = entry else {
                panic!("the snapshot script: {entry:?}");
            };
            let [key, kind, pttl, values]: [Reply; 4] =
                entry.try_into().expect("name, type, PTTL, contents");
            let (key, kind) = (text(key), text(kind));
            let Reply::Int(pttl) = pttl else {
                panic!("PTTL {key}: {pttl:?}");
            };
            let values: Vec<String> = match values {
                Reply::Array(v) => v.into_iter().map(text).collect(),
                other => panic!("{key}: {other:?}"),
            };
            let pairs = |v: Vec<String>| -> BTreeMap<String, String> {
                v.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect()
            };
            let data = match kind.as_str() {
                "string" => Stored::Str(values.into_iter().next().expect("a value")),
                "hash" => Stored::Hash(pairs(values)),
                "zset" => Stored::ZSet(pairs(values)),
                "list" => Stored::List(values),
                "set" => Stored::Set(values.into_iter().collect()),
                other => panic!("{key}: a {other}, which the model test does not read"),
            };
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
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            assert!(
                !left.is_zero(),
                "the subscriber did not hear marker {marker} within 10 s"
            );
            // Lets the subscriber's task run (the runtime runs only inside block_on) until it
            // has heard something more (a message heard before this wait left a permit).
            let _ = self
                .rt
                .block_on(async { tokio::time::timeout(left, self.arrived.notified()).await });
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
