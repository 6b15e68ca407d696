//! [`Commands`]: a batch of Redis commands for a guarded write or read, and the checks made
//! before it is sent (its keys in the lock's slot, its size).

use fred::bytes::Bytes;

use crate::error::{Error, Result};
use crate::hold::keys;

/// The most words one command of a batch may have: the script passes a command's words to
/// `redis.call` at once, and Lua takes at most about 8,000 values that way.
pub const MAX_COMMAND_WORDS: usize = 7_000;

/// A batch of Redis commands for a guarded write ([`LockGuard::write`](crate::LockGuard::write)) or read
/// ([`LockGuard::read`](crate::LockGuard::read)). Each command is its name, then its words in order; a word that is a
/// key is added with [`key`](Commands::key) (so that it is declared to the server and checked
/// against the lock's slot), any other with [`arg`](Commands::arg).
///
/// ```
/// let batch = relock::Commands::new()
///     .cmd("HSET").key("{orders:42}:row").arg("status").arg("paid")
///     .cmd("INCR").key("{orders:42}:version");
/// assert_eq!(batch.len(), 2);
/// assert_eq!(batch.keys().collect::<Vec<_>>(), ["{orders:42}:row", "{orders:42}:version"]);
/// ```
///
/// **Keys share the lock's slot.** Every key must hash to the lock's Cluster slot: give it
/// the lock's hash tag (`{orders:42}:row` for the lock `orders:42`; `orders:{42}:row` for
/// the lock `orders:{42}`; with a client's key prefix `locks:`, the lock's key is
/// `locks:orders:42` and its tag `{locks:orders:42}`). A key in another slot is refused
/// before anything is sent, on one server too, so that code moves to a Cluster unchanged.
/// Only the words added with [`key`](Commands::key) are checked: add every key of a command
/// with `key`.
///
/// **Binary values.** [`arg`](Commands::arg) takes what is `ToString`;
/// [`arg_bytes`](Commands::arg_bytes) takes any bytes (a serialized struct, an image), sent as
/// they are. Replies come back as the server sends them, binary ones as
/// [`Value::Bytes`](fred::types::Value::Bytes).
///
/// ```
/// let frame: Vec<u8> = vec![0, 159, 146, 150, 255];
/// let batch = relock::Commands::new().cmd("SET").key("{orders:42}:frame").arg_bytes(&frame);
/// assert_eq!(batch.len(), 1);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Commands {
    /// Each command's words, name first.
    commands: Vec<Vec<Bytes>>,
    /// The keys, in the order they were added (one entry per `key` call).
    keys: Vec<String>,
}

impl Commands {
    /// An empty batch.
    pub fn new() -> Self {
        Commands::default()
    }

    /// Starts the next command, named `name` (`"SET"`, `"HSET"`, `"XADD"`…).
    pub fn cmd(mut self, name: impl Into<String>) -> Self {
        self.commands.push(vec![Bytes::from(name.into())]);
        self
    }

    /// Adds a key to the current command.
    ///
    /// # Panics
    /// Before any [`cmd`](Commands::cmd): a word needs its command (a mistake in the code
    /// that builds the batch, as indexing past a `Vec`'s end).
    pub fn key(mut self, key: impl Into<String>) -> Self {
        let key = key.into();
        self.keys.push(key.clone());
        self.current().push(Bytes::from(key));
        self
    }

    /// Adds an argument that is not a key to the current command.
    ///
    /// # Panics
    /// Before any [`cmd`](Commands::cmd), as [`key`](Commands::key).
    pub fn arg(mut self, arg: impl ToString) -> Self {
        self.current().push(Bytes::from(arg.to_string()));
        self
    }

    /// Adds an argument that is not a key, as bytes: sent as they are, whether or not they
    /// are UTF-8.
    ///
    /// # Panics
    /// Before any [`cmd`](Commands::cmd), as [`key`](Commands::key).
    pub fn arg_bytes(mut self, arg: impl AsRef<[u8]>) -> Self {
        self.current().push(Bytes::copy_from_slice(arg.as_ref()));
        self
    }

    /// How many commands the batch has.
    pub fn len(&self) -> usize {
        self.commands.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// The keys its commands name, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(String::as_str)
    }

    fn current(&mut self) -> &mut Vec<Bytes> {
        self.commands
            .last_mut()
            .expect("Commands: call cmd(name) before key() or arg()")
    }

    /// The script's arguments after the hold's: the count, then each command's word count
    /// and words (shared with the batch, not copied).
    pub(crate) fn words(&self) -> Vec<Bytes> {
        let count = |n: usize| Bytes::from(n.to_string());
        let mut out =
            Vec::with_capacity(1 + self.commands.iter().map(|c| c.len() + 1).sum::<usize>());
        out.push(count(self.commands.len()));
        for c in &self.commands {
            out.push(count(c.len()));
            out.extend(c.iter().cloned());
        }
        out
    }

    /// The distinct keys, for the script's KEYS.
    pub(crate) fn distinct_keys(&self) -> Vec<String> {
        let mut seen = std::collections::BTreeSet::new();
        self.keys
            .iter()
            .filter(|k| seen.insert(k.as_str()))
            .cloned()
            .collect()
    }

    /// Refuses an empty batch, a command of more than [`MAX_COMMAND_WORDS`] words, and a key
    /// outside `lock`'s slot, naming the key and the form that would share the slot.
    pub(crate) fn check(&self, lock: &str) -> Result<()> {
        if self.is_empty() {
            return Err(Error::invalid(
                "commands",
                "the batch has no command: add one with Commands::cmd",
            ));
        }
        if let Some(c) = self.commands.iter().find(|c| c.len() > MAX_COMMAND_WORDS) {
            return Err(Error::invalid(
                "commands",
                format!(
                    "`{}` has {} words, more than the {MAX_COMMAND_WORDS} one command of a guarded batch may have: split it into several commands",
                    String::from_utf8_lossy(&c[0]),
                    c.len()
                ),
            ));
        }
        if let Some(key) = self.keys.iter().find(|k| lock_owned(lock, k)) {
            return Err(Error::invalid(
                "commands",
                format!(
                    "`{}` is one of the lock `{}`'s own keys (its hash, fencing counter, line or timeouts): a guarded batch works on data keys only, as `{}`",
                    crate::error::short(key),
                    crate::error::short(lock),
                    tagged_like(lock, "data")
                ),
            ));
        }
        let slot = |k: &str| fred::util::redis_keyslot(k.as_bytes());
        let want = slot(lock);
        if let Some(key) = self.keys.iter().find(|k| slot(k) != want) {
            return Err(Error::invalid(
                "commands",
                format!(
                    "the key `{}` is in Cluster slot {}, the lock `{}` in slot {want}: every key of a guarded write must share the lock's slot; give it the lock's hash tag, as `{}`",
                    crate::error::short(key),
                    slot(key),
                    crate::error::short(lock),
                    tagged_like(lock, key)
                ),
            ));
        }
        Ok(())
    }
}

/// Whether `key` is one of `lock`'s own keys: the lock hash, a key that relock or Redisson
/// derives from its name (`redisson_lock_token:{orders:42}`, `relock_fair_line:{orders:42}`,
/// …), or a read hold's timeout key (`{orders:42}:<field>:rwlock_timeout:<n>`). A batch that
/// wrote one could free the lock or break its fencing tokens.
fn lock_owned(lock: &str, key: &str) -> bool {
    let derived = keys::prefixed("", lock);
    key == lock
        || ((key.starts_with("redisson_") || key.starts_with("relock_"))
            && key.ends_with(derived.as_str()))
        || (key.starts_with(keys::suffixed(lock, "").as_str()) && key.contains(":rwlock_timeout:"))
}

/// `key` under `lock`'s hash tag, by Redisson's `suffixName` rule: `{orders:42}:key` for the
/// lock `orders:42`, `orders:{42}:key` for the lock `orders:{42}`.
fn tagged_like(lock: &str, key: &str) -> String {
    keys::suffixed(lock, &key.replace(['{', '}'], ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_outside_the_locks_slot_are_named_with_the_tagged_form() {
        let ok = Commands::new()
            .cmd("SET")
            .key("{orders:42}:row")
            .arg(1)
            .cmd("GET")
            .key("{orders:42}:other");
        assert!(ok.check("orders:42").is_ok());
        let bad = Commands::new().cmd("SET").key("orders:42:row").arg(1);
        let e = bad.check("orders:42").unwrap_err().to_string();
        assert!(
            e.contains("`orders:42:row`") && e.contains("`{orders:42}:orders:42:row`"),
            "{e}"
        );
        let e = bad.check("orders:{42}").unwrap_err().to_string();
        assert!(e.contains("`orders:{42}:orders:42:row`"), "{e}");
        assert!(Commands::new().check("x").is_err());
    }

    #[test]
    fn the_locks_own_keys_are_refused_and_data_keys_beside_them_are_not() {
        for (lock, key) in [
            ("orders:42", "orders:42"),
            ("orders:42", "redisson_lock_token:{orders:42}"),
            ("orders:42", "redisson_lock_queue:{orders:42}"),
            ("orders:42", "relock_fair_line:{orders:42}"),
            ("orders:42", "{orders:42}:c1:7:rwlock_timeout:1"),
            ("orders:{42}", "redisson_lock_token:orders:{42}"),
        ] {
            let e = Commands::new().cmd("DEL").key(key).check(lock).unwrap_err();
            assert!(e.to_string().contains("own keys"), "{lock} {key}: {e}");
        }
        for (lock, key) in [
            ("orders:42", "{orders:42}:row"),
            ("orders:42", "{orders:42}:redisson_like"),
            ("orders:{42}", "orders:{42}:row"),
        ] {
            assert!(
                Commands::new().cmd("DEL").key(key).check(lock).is_ok(),
                "{lock} {key}"
            );
        }
    }

    #[test]
    fn words_carry_each_commands_count() {
        let c = Commands::new()
            .cmd("SET")
            .key("k")
            .arg("v")
            .cmd("DEL")
            .key("k");
        assert_eq!(c.words(), ["2", "3", "SET", "k", "v", "2", "DEL", "k"]);
        let b = Commands::new().cmd("SET").key("k").arg_bytes([0u8, 255]);
        assert_eq!(b.words(), [&b"1"[..], b"3", b"SET", b"k", &[0, 255]]);
        assert_eq!(c.distinct_keys(), ["k"]);
    }
}
