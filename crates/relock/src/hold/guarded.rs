//! Guarded writes: a batch of Redis commands on data keys that the lock's server runs only
//! while this very hold is the lock's holder, in one step (etcd's `IsOwner()` transaction, on
//! Redis). [`Commands`] is the batch; [`LockGuard::write`] and [`LockGuard::read`] send it.
//! The backend runs it (one script on the lock's server); a backend with no single server for
//! the lock refuses it.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::hold::guard::LockGuard;

/// A batch of Redis commands for a guarded write ([`LockGuard::write`]) or read
/// ([`LockGuard::read`]). Each command is its name, then its words in order; a word that is a
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
/// the lock `orders:{42}`). A key in another slot is refused before anything is sent, on one
/// server too, so that code moves to a Cluster unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Commands {
    /// Each command's words, name first.
    commands: Vec<Vec<String>>,
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
        self.commands.push(vec![name.into()]);
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
        self.current().push(key);
        self
    }

    /// Adds an argument that is not a key to the current command.
    ///
    /// # Panics
    /// Before any [`cmd`](Commands::cmd), as [`key`](Commands::key).
    pub fn arg(mut self, arg: impl ToString) -> Self {
        self.current().push(arg.to_string());
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

    fn current(&mut self) -> &mut Vec<String> {
        self.commands
            .last_mut()
            .expect("Commands: call cmd(name) before key() or arg()")
    }

    /// The script's arguments after the hold's: the count, then each command's word count
    /// and words.
    pub(crate) fn words(&self) -> Vec<String> {
        let mut out =
            Vec::with_capacity(1 + self.commands.iter().map(|c| c.len() + 1).sum::<usize>());
        out.push(self.commands.len().to_string());
        for c in &self.commands {
            out.push(c.len().to_string());
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

    /// Refuses an empty batch, and a key outside `lock`'s slot, naming the key and the form
    /// that would share the slot.
    pub(crate) fn check(&self, lock: &str) -> Result<()> {
        if self.is_empty() {
            return Err(Error::invalid(
                "commands",
                "the batch has no command: add one with Commands::cmd",
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

/// `key` under `lock`'s hash tag, by Redisson's `suffixName` rule: `{orders:42}:key` for the
/// lock `orders:42`, `orders:{42}:key` for the lock `orders:{42}`.
fn tagged_like(lock: &str, key: &str) -> String {
    crate::hold::keys::suffixed(lock, &key.replace(['{', '}'], ""))
}

impl LockGuard {
    /// Runs `commands` on the lock's server, atomically, only if this hold is the lock's
    /// holder when the server runs them: one round trip, one script that first checks that
    /// the hold's own field is still on the lock, then runs every command in order. Fields are
    /// never reused, so a later holder (even this client's next hold) fails the check, and a
    /// holder paused past its lease writes nothing. Returns each command's reply, in order.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// use relock::fred::types::Value;
    /// let guard = client.lock("orders:42").lock().await?;
    /// let replies = guard
    ///     .write(
    ///         relock::Commands::new()
    ///             .cmd("HSET").key("{orders:42}:row").arg("status").arg("paid")
    ///             .cmd("INCR").key("{orders:42}:version"),
    ///     )
    ///     .await?;
    /// # assert_eq!(replies.len(), 2);
    /// # let version = replies[1].clone();
    /// # assert!(matches!(version, Value::Integer(n) if n >= 1));
    /// guard.unlock().await?;
    /// # client.shutdown().await; Ok(()) }
    /// ```
    ///
    /// Works for every hold kept in a lock hash: the plain and fair locks, a read-write
    /// lock's write side, a job's run ([`JobGuard`](crate::JobGuard) derefs to this guard) and
    /// a leadership ([`Leadership::lock_guard`](crate::Leadership::lock_guard)). A read hold
    /// may only [`read`](LockGuard::read). A quorum lock has no single server to check its
    /// hold on: its guards refuse guarded writes; protect its data with a
    /// [`FencedKey`](crate::FencedKey) and the fencing token.
    ///
    /// What it does not cover: data outside the lock's Redis (use the fencing token there:
    /// [`FencedKey`](crate::FencedKey), or a `fence` column in SQL), and commands a resending
    /// pool of your own sends twice after a reconnect (relock's own pools never resend).
    ///
    /// # Errors
    /// - [`Error::LockLost`]: the hold was gone when the batch arrived (its lease ran out, the
    ///   lock was deleted or force-unlocked), or is already known lost here: nothing ran.
    /// - [`Error::InvalidArgument`]: an empty batch, a key outside the lock's slot (nothing
    ///   was sent), a read hold's guard, or a quorum lock's.
    /// - [`Error::OutcomeUnknown`]: no reply came (a timeout, a lost connection). The batch
    ///   ran whole or not at all (a script is never split), at most once: relock's pools
    ///   never resend a command. Read the data to learn which.
    /// - [`Error::Redis`]: a command failed (a wrong type, a bad argument). The batch stopped
    ///   there; the commands before it stay applied, as in `MULTI`/`EXEC`.
    ///
    /// # Cancel safety
    /// Not cancel safe in effect: once sent, a dropped future does not stop the batch, which
    /// runs (or not) as above.
    pub async fn write(&self, commands: Commands) -> Result<Vec<fred::types::Value>> {
        if self.hold().keys.kind.shared() {
            return Err(Error::invalid(
                "write",
                format!(
                    "`{}` is held for reading: a read hold's guard may only read (LockGuard::read); take the write lock to write",
                    self.name()
                ),
            ));
        }
        self.guarded(commands, false).await
    }

    /// [`write`](LockGuard::write) for commands that only read: the script runs flagged
    /// `no-writes` (a command that writes is refused by the server), so that a read hold (a
    /// read-write lock's read side) reads only while it is held. Any guard may read.
    ///
    /// # Errors
    /// As [`write`](LockGuard::write); a command that writes fails with [`Error::Redis`].
    ///
    /// # Cancel safety
    /// Cancel safe: it changes nothing.
    pub async fn read(&self, commands: Commands) -> Result<Vec<fred::types::Value>> {
        self.guarded(commands, true).await
    }

    async fn guarded(&self, commands: Commands, read: bool) -> Result<Vec<fred::types::Value>> {
        let hold = self.hold().clone();
        commands.check(&hold.keys.lock)?;
        if hold.is_lost() {
            return Err(Error::LockLost {
                name: hold.keys.lock.clone(),
            });
        }
        self.backend()
            .clone()
            .guarded(hold, Arc::new(commands), read)
            .await
    }
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
            .key("orders:42");
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
    fn words_carry_each_commands_count() {
        let c = Commands::new()
            .cmd("SET")
            .key("k")
            .arg("v")
            .cmd("DEL")
            .key("k");
        assert_eq!(c.words(), ["2", "3", "SET", "k", "v", "2", "DEL", "k"]);
        assert_eq!(c.distinct_keys(), ["k"]);
    }
}
