//! The model's side: what Redis should hold (every key, its value and its time to live), the
//! few Redis operations a model needs to say it, and the comparison with what the server holds.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use crate::bench::{Actual, Reply, Stored};

/// How far a key's PTTL on the server may fall below the model's: the time between the script
/// setting it and the model noting it, on a loaded machine. Leases the models draw differ by
/// more than this, so a changed TTL cannot hide in it.
pub const TTL_SLACK_MS: i64 = 1000;

/// A value the model knows exactly, or only within bounds (a token seeded from the server's
/// clock during the script). Once compared, a bounded value takes the server's (`pin`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum V {
    Is(String),
    Within(i64, i64),
    /// A text, `<prefix><n>`, whose number the model knows only within bounds: a record that
    /// names a token seeded from the server's clock during the script.
    Tagged(String, i64, i64),
}

impl V {
    pub fn int(i: i64) -> V {
        V::Is(i.to_string())
    }

    pub fn str(s: &str) -> V {
        V::Is(s.to_owned())
    }

    /// The value as an integer, if the model knows it exactly and it is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            V::Is(s) => s.parse().ok(),
            V::Within(..) | V::Tagged(..) => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            V::Is(s) => Some(s),
            V::Within(..) | V::Tagged(..) => None,
        }
    }

    fn matches(&self, actual: &str) -> bool {
        match self {
            V::Is(s) => s == actual,
            V::Within(lo, hi) => actual.parse::<i64>().is_ok_and(|a| *lo <= a && a <= *hi),
            V::Tagged(prefix, lo, hi) => actual
                .strip_prefix(prefix.as_str())
                .and_then(|n| n.parse::<i64>().ok())
                .is_some_and(|a| *lo <= a && a <= *hi),
        }
    }
}

/// A value, as the model predicts it: every type the bench reads, whether or not a kind's
/// model uses it.
#[allow(dead_code)]
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    Str(V),
    Hash(BTreeMap<String, V>),
    ZSet(BTreeMap<String, V>),
    List(Vec<String>),
    Set(BTreeSet<String>),
}

/// A key's time to live, as the model predicts it: `left` ms when the model noted it `at`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ttl {
    Forever,
    Left { ms: i64, at: Instant },
}

impl Ttl {
    pub fn ms(ms: i64) -> Ttl {
        Ttl::Left {
            ms,
            at: Instant::now(),
        }
    }

    /// What is left now (None: no expiry).
    pub fn left(&self) -> Option<i64> {
        self.left_at(Instant::now())
    }

    /// What was left at `now`.
    pub fn left_at(&self, now: Instant) -> Option<i64> {
        match self {
            Ttl::Forever => None,
            Ttl::Left { ms, at } => {
                Some(ms - now.saturating_duration_since(*at).as_millis() as i64)
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    pub data: Data,
    pub ttl: Ttl,
}

/// Every key the model says the server holds.
#[derive(Debug, Clone, Default)]
pub struct World {
    pub keys: BTreeMap<String, Key>,
    /// When the step's script was sent: a PTTL it read was no longer than the model's then.
    pub sent: Option<Instant>,
}

/// A script's reply, as the model predicts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum R {
    Nil,
    Int(i64),
    /// An integer within bounds (a token from the clock, a PTTL).
    Within(i64, i64),
    Str(String),
    Array(Vec<R>),
    /// An error reply with this code.
    Err(&'static str),
}

impl R {
    pub fn matches(&self, actual: &Reply) -> bool {
        match (self, actual) {
            (R::Nil, Reply::Nil) => true,
            (R::Int(a), Reply::Int(b)) => a == b,
            (R::Within(lo, hi), Reply::Int(b)) => lo <= b && b <= hi,
            // A number a script replies as a string (`tostring(pttl)`).
            (R::Within(lo, hi), Reply::Str(b)) => {
                b.parse().is_ok_and(|b: i64| *lo <= b && b <= *hi)
            }
            (R::Str(a), Reply::Str(b)) => a == b,
            (R::Array(a), Reply::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.matches(y))
            }
            (R::Err(a), Reply::Err(b)) => a == b,
            _ => false,
        }
    }

    /// A key's PTTL as a reply: what is left, give or take the slack (either way: the script
    /// read it before the model is asked, however long a loaded machine takes in between).
    pub fn pttl(world: &World, key: &str) -> R {
        let Some(ttl) = world.keys.get(key).map(|k| k.ttl) else {
            return R::Int(-2);
        };
        match ttl.left() {
            None => R::Int(-1),
            Some(left) => {
                let most = world.sent.and_then(|at| ttl.left_at(at)).unwrap_or(left);
                R::Within(left - TTL_SLACK_MS, most + 5)
            }
        }
    }
}

impl World {
    pub fn exists(&self, key: &str) -> bool {
        self.keys.contains_key(key)
    }

    pub fn del(&mut self, key: &str) -> bool {
        self.keys.remove(key).is_some()
    }

    /// The hash at `key` (None: missing; Err: another type).
    pub fn hash(&self, key: &str) -> Result<Option<&BTreeMap<String, V>>, R> {
        match self.keys.get(key) {
            None => Ok(None),
            Some(Key {
                data: Data::Hash(h),
                ..
            }) => Ok(Some(h)),
            Some(_) => Err(R::Err("WRONGTYPE")),
        }
    }

    /// The field's value (HGET), or WRONGTYPE.
    pub fn hget(&self, key: &str, field: &str) -> Result<Option<&V>, R> {
        Ok(self.hash(key)?.and_then(|h| h.get(field)))
    }

    /// HSET of one field: a new key has no expiry.
    pub fn hset(&mut self, key: &str, field: &str, v: V) {
        let k = self.keys.entry(key.to_owned()).or_insert_with(|| Key {
            data: Data::Hash(BTreeMap::new()),
            ttl: Ttl::Forever,
        });
        match &mut k.data {
            Data::Hash(h) => {
                h.insert(field.to_owned(), v);
            }
            other => panic!("model bug: HSET on {other:?}"),
        }
    }

    /// HDEL of one field; the key goes with its last field. Whether the field was there.
    pub fn hdel(&mut self, key: &str, field: &str) -> bool {
        let Some(Key {
            data: Data::Hash(h),
            ..
        }) = self.keys.get_mut(key)
        else {
            return false;
        };
        let had = h.remove(field).is_some();
        if h.is_empty() {
            self.keys.remove(key);
        }
        had
    }

    /// SET with a time to live (None: no expiry; `keep`: KEEPTTL).
    pub fn set(&mut self, key: &str, v: V, ttl: Option<i64>, keep: bool) {
        let ttl = match (ttl, keep, self.keys.get(key)) {
            (Some(ms), _, _) => Ttl::ms(ms),
            (None, true, Some(k)) => k.ttl,
            _ => Ttl::Forever,
        };
        self.keys.insert(
            key.to_owned(),
            Key {
                data: Data::Str(v),
                ttl,
            },
        );
    }

    /// PEXPIRE on an existing key.
    pub fn pexpire(&mut self, key: &str, ms: i64) {
        if let Some(k) = self.keys.get_mut(key) {
            if ms <= 0 {
                self.keys.remove(key);
            } else {
                k.ttl = Ttl::ms(ms);
            }
        }
    }

    /// What is left of `key`'s time to live (None: missing or no expiry).
    pub fn left(&self, key: &str) -> Option<i64> {
        self.keys.get(key).and_then(|k| k.ttl.left())
    }

    /// Moves every expiry `ms` closer, deleting the keys it reaches (the bench's `age_ttls`).
    pub fn age_ttls(&mut self, ms: i64) {
        self.keys.retain(|_, k| match &mut k.ttl {
            Ttl::Forever => true,
            Ttl::Left { ms: left, .. } => {
                *left -= ms;
                k.ttl.left().is_some_and(|l| l > 0)
            }
        });
    }

    /// Differences between the model and the server, in words; empty when they agree. Each
    /// key's TTL is the model's as of when its PTTL was asked (`Actual::at`), so that a PTTL
    /// the server gives is never above the model's however long the reading takes.
    pub fn differences(&self, actual: &BTreeMap<String, Actual>) -> Vec<String> {
        let mut out = Vec::new();
        for (name, key) in &self.keys {
            let Some(a) = actual.get(name) else {
                out.push(format!(
                    "{name}: the model has {key:?}; the server has no such key"
                ));
                continue;
            };
            if !data_matches(&key.data, &a.data) {
                out.push(format!(
                    "{name}: the model has {:?}; the server has {:?}",
                    key.data, a.data
                ));
            }
            match key.ttl.left_at(a.at) {
                None if a.pttl != -1 => out.push(format!(
                    "{name}: the model has no expiry; the server's PTTL is {}",
                    a.pttl
                )),
                Some(left) if a.pttl > left + 5 || a.pttl < left - TTL_SLACK_MS => {
                    out.push(format!(
                        "{name}: the model's PTTL is {left}; the server's is {}",
                        a.pttl
                    ))
                }
                _ => {}
            }
        }
        for (name, a) in actual {
            if !self.keys.contains_key(name) {
                out.push(format!(
                    "{name}: the server has {a:?}; the model has no such key"
                ));
            }
        }
        out
    }

    /// Takes the server's value for every value the model knew only within bounds, once they
    /// have been compared.
    pub fn pin(&mut self, actual: &BTreeMap<String, Actual>) {
        for (name, key) in &mut self.keys {
            let Some(a) = actual.get(name) else { continue };
            match (&mut key.data, &a.data) {
                (Data::Str(v @ (V::Within(..) | V::Tagged(..))), Stored::Str(s)) => {
                    *v = V::Is(s.clone())
                }
                (Data::Hash(h), Stored::Hash(ah)) | (Data::ZSet(h), Stored::ZSet(ah)) => {
                    for (f, v) in h.iter_mut() {
                        if let (V::Within(..), Some(s)) = (&v, ah.get(f)) {
                            *v = V::Is(s.clone());
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

fn data_matches(model: &Data, actual: &Stored) -> bool {
    let map = |m: &BTreeMap<String, V>, a: &BTreeMap<String, String>| {
        m.len() == a.len()
            && m.iter()
                .all(|(f, v)| a.get(f).is_some_and(|s| v.matches(s)))
    };
    match (model, actual) {
        (Data::Str(v), Stored::Str(s)) => v.matches(s),
        (Data::Hash(m), Stored::Hash(a)) | (Data::ZSet(m), Stored::ZSet(a)) => map(m, a),
        (Data::List(m), Stored::List(a)) => m == a,
        (Data::Set(m), Stored::Set(a)) => m == a,
        _ => false,
    }
}

/// Strings and sorted sets, for the kinds that keep a count or deadlines in them.
impl World {
    /// The string at `key` (GET: None for a missing key; WRONGTYPE for another type).
    pub fn get(&self, key: &str) -> Result<Option<&V>, R> {
        match self.keys.get(key) {
            None => Ok(None),
            Some(Key {
                data: Data::Str(v), ..
            }) => Ok(Some(v)),
            Some(_) => Err(R::Err("WRONGTYPE")),
        }
    }

    /// The sorted set at `key`, member -> score (None: missing; Err: another type).
    pub fn zset(&self, key: &str) -> Result<Option<&BTreeMap<String, V>>, R> {
        match self.keys.get(key) {
            None => Ok(None),
            Some(Key {
                data: Data::ZSet(z),
                ..
            }) => Ok(Some(z)),
            Some(_) => Err(R::Err("WRONGTYPE")),
        }
    }

    /// ZADD of one member: a new key has no expiry; an existing one keeps its own.
    pub fn zadd(&mut self, key: &str, member: &str, score: V) {
        let k = self.keys.entry(key.to_owned()).or_insert_with(|| Key {
            data: Data::ZSet(BTreeMap::new()),
            ttl: Ttl::Forever,
        });
        match &mut k.data {
            Data::ZSet(z) => {
                z.insert(member.to_owned(), score);
            }
            other => panic!("model bug: ZADD on {other:?}"),
        }
    }

    /// ZREM of one member; the key goes with its last member. Whether it was there.
    pub fn zrem(&mut self, key: &str, member: &str) -> bool {
        let Some(Key {
            data: Data::ZSet(z),
            ..
        }) = self.keys.get_mut(key)
        else {
            return false;
        };
        let had = z.remove(member).is_some();
        if z.is_empty() {
            self.keys.remove(key);
        }
        had
    }
}
