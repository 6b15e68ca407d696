//! [`Lock::status`]: what Redis holds for a lock, for operators (`relock status`).

use fred::types::Value;

use crate::client::lock_scripts;
use crate::error::Result;
use crate::exclusive::lock::Lock;

/// A snapshot of a lock as Redis holds it: its holders, its lease, its fencing counter and, for
/// a fair lock, its line, all read at one moment (one script).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockStatus {
    /// The lock's name (its hash key).
    pub name: String,
    /// The owner fields of the lock hash with their hold counts (one for an exclusive lock
    /// unless the hash was written by hand); empty when the lock is free.
    pub holders: Vec<Holder>,
    /// The lock's remaining lease in ms; `None` when free, `Some(-1)` with no expiry.
    pub pttl_ms: Option<i64>,
    /// The fencing counter (the last token handed out) while it lives.
    pub counter: Option<u64>,
    /// The counter's remaining life in ms.
    pub counter_pttl_ms: Option<i64>,
    /// A fair lock's waiting line, first first (empty for a plain lock).
    pub queue: Vec<Waiter>,
    /// A read-write lock's mode (`read` or `write`, its hash's `mode` field); `None` for a
    /// lock. Its holders' fields then end in `:write` for the write hold.
    pub mode: Option<String>,
}

impl LockStatus {
    /// Whether anyone holds the lock.
    pub fn is_held(&self) -> bool {
        !self.holders.is_empty()
    }
}

/// One owner field of a lock hash.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Holder {
    /// The field: `<client id>:<n>` (relock) or `<uuid>:<thread id>` (Redisson).
    pub field: String,
    /// Its hold count (re-entries).
    pub count: i64,
    /// Who wrote it, judged by its shape.
    pub layout: OwnerLayout,
}

/// Which library an owner field looks like it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OwnerLayout {
    /// `<client id>:<n>` with `n` from a 62-bit random start: at least 2³².
    Relock,
    /// `<uuid>:<thread id>`: a small thread id (Java's Redisson).
    Redisson,
    /// `<uuid>:<uuid>`: node-redisson, which names its holder by a second UUID.
    NodeRedisson,
    /// Neither shape.
    Unknown,
}

/// The Redis names of one lock, for tools that watch it (`relock watch` subscribes to the
/// channel and to keyspace notifications of the keys).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyNames {
    /// The lock hash (the lock's name itself).
    pub lock: String,
    /// Where releases are published (Redisson's `redisson_lock__channel:{name}`); a sharded
    /// channel (`SPUBLISH`) on a Redis Cluster.
    pub channel: String,
    /// The fencing counter.
    pub counter: String,
    /// A fair lock's waiting line: one sorted set of owner fields by ticket, with each
    /// waiter's heartbeat deadline and first lease beside them (the
    /// [data layout](crate::guide::data_layout)); `None` for a plain lock.
    pub queue: Option<String>,
    /// A fair lock's grant record: `<field>=<token>` of the waiter a handoff gave the lock
    /// last, for that handoff's lease; `None` for a plain lock.
    pub grant: Option<String>,
    /// A fair lock's own channel, where a release names the waiter it hands the lock to
    /// (`<field>=<token>`) or tells to come (`<field>`); `None` for a plain lock.
    pub fair_channel: Option<String>,
}

/// A fair-lock waiter in line.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Waiter {
    /// Its owner field (the field its hold will have).
    pub field: String,
    /// 0 for the first in line.
    pub position: usize,
    /// Its ticket (arrival order).
    pub ticket: u64,
    /// Its heartbeat deadline, server time in ms since 1970; past it, it is dropped from line.
    pub deadline_ms: Option<i64>,
}

/// A number from a script's reply, whether it came as an integer or as a string.
fn num<T: std::str::FromStr>(v: &Value) -> Option<T> {
    v.as_string()?.parse().ok()
}

fn layout(field: &str) -> OwnerLayout {
    // A read-write lock's write hold: the owner, then `:write`.
    let field = field.strip_suffix(":write").unwrap_or(field);
    let uuid = |s: &str| s.len() == 36 && s.bytes().all(|b| b == b'-' || b.is_ascii_hexdigit());
    match field.rsplit_once(':') {
        Some((_, n)) => match n.parse::<u64>() {
            Ok(n) if n >= 1 << 32 => OwnerLayout::Relock,
            Ok(_) => OwnerLayout::Redisson,
            Err(_) if uuid(n) => OwnerLayout::NodeRedisson,
            Err(_) => OwnerLayout::Unknown,
        },
        None => OwnerLayout::Unknown,
    }
}

impl Lock {
    /// The Redis keys and channel of this lock.
    ///
    /// ```
    /// # async fn f(client: relock::Client) -> relock::Result<()> {
    /// let names = client.fair_lock("jobs:nightly").key_names()?;
    /// assert_eq!(names.channel, "redisson_lock__channel:{jobs:nightly}");
    /// assert_eq!(names.queue.as_deref(), Some("relock_fair_line:{jobs:nightly}"));
    /// assert_eq!(names.grant.as_deref(), Some("relock_fair_grant:{jobs:nightly}"));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a name whose keys could not share a
    /// cluster slot, as for every operation on the lock.
    pub fn key_names(&self) -> Result<KeyNames> {
        let keys = self.keys()?;
        let line = self.line(&keys);
        Ok(KeyNames {
            lock: keys.lock.clone(),
            channel: keys.channel.clone(),
            counter: keys.token.clone(),
            fair_channel: line.as_ref().map(|_| keys.wake.clone()),
            grant: line.as_ref().map(|q| q.grant.clone()),
            queue: line.map(|q| q.line),
        })
    }

    /// A snapshot of this lock on the server: holders, lease, fencing counter, and the fair
    /// line. For operators and tooling (`relock status`); a program that wants the lock should
    /// take it, not look first.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let held = client.lock("jobs:nightly").lock().await?; // someone holds it
    /// let status = client.lock("jobs:nightly").status().await?;
    /// for h in &status.holders {
    ///     println!("{} holds it ({} times), {:?} ms left", h.field, h.count, status.pttl_ms);
    /// }
    /// # assert!(status.is_held() && status.holders.len() == 1);
    /// # held.unlock().await?;
    /// # client.shutdown().await; Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::WrongType`](crate::Error::WrongType) if the lock's key, its counter or its line
    /// has another type (a string, a list…); [`Error::NotALock`](crate::Error::NotALock) if the
    /// lock's key is a hash that is not a lock's (a data hash, one without a time to live); a
    /// read-write lock's hash is a status (its [`mode`](LockStatus::mode)); connection and
    /// timeout errors as for [`is_locked`](Lock::is_locked).
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    pub async fn status(&self) -> Result<LockStatus> {
        let keys = self.keys()?;
        let inner = &self.inner;
        let mut script_keys = vec![keys.lock.clone(), keys.token.clone()];
        if let Some(q) = self.line(&keys) {
            script_keys.push(q.line);
        }
        // One script, so that the holders, lease, counter and line are of one moment (a watch
        // that reads them apart sees a holder still there beside a line it has already left).
        let reply: Value = lock_scripts::STATUS
            .run_read_only(inner.conn(), script_keys, vec!["0".into()])
            .await
            .map_err(|e| inner.error("status", &keys.lock, e))?;
        decode(reply, &keys.lock)
    }
}

/// The status script's reply for the lock `name`: any reply, however malformed, is a status,
/// `NotALock`, or `WrongType`, never a panic.
fn decode(reply: Value, name: &str) -> Result<LockStatus> {
    let wrong = || crate::Error::WrongType {
        key: name.to_owned(),
    };
    let Value::Array(mut parts) = reply else {
        return Err(wrong());
    };
    if let Some(refused) = refusal(&parts) {
        return Err(refused);
    }
    if parts.len() != 5 {
        return Err(wrong());
    }
    let line = parts.pop().unwrap_or(Value::Null);
    let counter_pttl = parts.pop().and_then(|v| num::<i64>(&v)).unwrap_or(-2);
    let counter = parts.pop().and_then(|v| num::<u64>(&v));
    let pttl = parts.pop().and_then(|v| num::<i64>(&v)).unwrap_or(-2);
    let raw = match parts.pop() {
        Some(Value::Array(raw)) => raw,
        _ => return Err(wrong()),
    };
    let (holders, mode) = read_holders(&raw).ok_or_else(wrong)?;
    let queue = read_line(line).ok_or_else(wrong)?;
    Ok(LockStatus {
        name: name.to_owned(),
        pttl_ms: (pttl != -2).then_some(pttl),
        holders,
        counter,
        counter_pttl_ms: (counter_pttl != -2).then_some(counter_pttl),
        queue,
        mode,
    })
}

/// The script's refusal to read the key, if it refused: `{"notalock", key, found}` (data under
/// the lock's name) or `{"wrongtype", key}`.
fn refusal(parts: &[Value]) -> Option<crate::Error> {
    match parts {
        [tag, key, found] if tag.as_str().as_deref() == Some("notalock") => {
            Some(crate::Error::NotALock {
                key: key.as_string().unwrap_or_default(),
                found: found.as_string().unwrap_or_default(),
            })
        }
        [tag, key] if tag.as_str().as_deref() == Some("wrongtype") => {
            Some(crate::Error::WrongType {
                key: key.as_string().unwrap_or_default(),
            })
        }
        _ => None,
    }
}

/// The lock hash's fields and values (`HGETALL`): its holders, sorted by field, and a
/// read-write lock's mode. `None` if it is not a lock's: a lock hash maps owner fields to hold
/// counts, and a read-write lock's has its `mode` too.
fn read_holders(raw: &[Value]) -> Option<(Vec<Holder>, Option<String>)> {
    let mut holders = Vec::with_capacity(raw.len() / 2);
    let mut mode = None;
    for pair in raw.chunks(2) {
        let field = pair.first().and_then(|v| v.as_string())?;
        let count = pair.get(1).and_then(|v| v.as_string())?;
        if field == "mode" && (count == "read" || count == "write") {
            mode = Some(count);
            continue;
        }
        let count = count.parse::<i64>().ok()?;
        holders.push(Holder {
            layout: layout(&field),
            field,
            count,
        });
    }
    holders.sort_by(|a, b| a.field.cmp(&b.field));
    Some((holders, mode))
}

/// A fair lock's line, first first, from the script's `{field, ticket, deadline, …}` (not an
/// array: no line). `None` if an entry has no field.
fn read_line(line: Value) -> Option<Vec<Waiter>> {
    let Value::Array(line) = line else {
        return Some(Vec::new());
    };
    line.chunks(3)
        .enumerate()
        .map(|(position, w)| {
            Some(Waiter {
                field: w.first().and_then(|v| v.as_string())?,
                position,
                ticket: w.get(1).and_then(num::<f64>).unwrap_or(0.0) as u64,
                deadline_ms: w.get(2).and_then(num::<f64>).map(|d| d as i64),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_layouts() {
        assert_eq!(
            layout("0b4c59d3-b59f-4456-be8d-1bdbb4722725:3600827011076526686"),
            OwnerLayout::Relock
        );
        assert_eq!(
            layout("0b4c59d3-b59f-4456-be8d-1bdbb4722725:57"),
            OwnerLayout::Redisson
        );
        assert_eq!(
            layout("42fcba8c-7d8f-4a6e-9d5c-2b0e8f7a1c33:1364bb0b-5f2e-4c1a-8b7d-9e6f0a3d2c11"),
            OwnerLayout::NodeRedisson
        );
        assert_eq!(layout("whatever"), OwnerLayout::Unknown);
    }
}

/// Any reply of the status script, however malformed (random arrays, wrong types, huge or
/// negative numbers, bytes that are not UTF-8), decodes to a status or a typed error.
#[cfg(test)]
mod decode_prop {
    use super::*;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = Value> {
        let words = prop_oneof![
            Just("mode"),
            Just("read"),
            Just("write"),
            Just("notalock"),
            Just("wrongtype"),
            Just("1"),
            Just("-1"),
            Just("99999999999999999999999"),
            Just("1e308"),
            Just("NaN"),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::Integer),
            any::<f64>().prop_map(Value::Double),
            any::<bool>().prop_map(Value::Boolean),
            ".{0,12}".prop_map(|s: String| Value::String(s.into())),
            prop::collection::vec(any::<u8>(), 0..8).prop_map(|b| Value::Bytes(b.into())),
            words.prop_map(|s| Value::String(s.into())),
        ];
        leaf.prop_recursive(3, 48, 7, |inner| {
            prop::collection::vec(inner, 0..8).prop_map(Value::Array)
        })
    }

    fn typed(r: Result<LockStatus>) -> std::result::Result<(), String> {
        match r {
            Ok(_) | Err(crate::Error::WrongType { .. } | crate::Error::NotALock { .. }) => Ok(()),
            Err(e) => Err(format!("{e:?}")),
        }
    }

    proptest! {
        #[test]
        fn any_reply_is_a_status_or_a_typed_error(v in value()) {
            prop_assert_eq!(typed(decode(v, "p")), Ok(()));
        }

        #[test]
        fn any_five_parts_are_a_status_or_a_typed_error(parts in prop::collection::vec(value(), 5)) {
            prop_assert_eq!(typed(decode(Value::Array(parts), "p")), Ok(()));
        }

        #[test]
        fn any_holders_and_line_are_a_status_or_a_typed_error(
            raw in prop::collection::vec(value(), 0..10),
            line in prop::collection::vec(value(), 0..10),
            numbers in prop::collection::vec(value(), 3),
        ) {
            let parts = vec![
                Value::Array(raw),
                numbers[0].clone(),
                numbers[1].clone(),
                numbers[2].clone(),
                Value::Array(line),
            ];
            prop_assert_eq!(typed(decode(Value::Array(parts), "p")), Ok(()));
        }
    }
}
