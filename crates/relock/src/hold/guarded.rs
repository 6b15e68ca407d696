//! Guarded writes: a batch of Redis commands on data keys that the lock's server runs only
//! while this very hold is the lock's holder, in one step (etcd's `IsOwner()` transaction, on
//! Redis). [`Commands`] (in `commands`) is the batch; [`LockGuard::write`] and
//! [`LockGuard::read`] send it.
//! The backend runs it (one script on the lock's server); a backend with no single server for
//! the lock refuses it.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::hold::commands::Commands;
use crate::hold::guard::LockGuard;

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
    /// Replies come back as the script returns them: an integer reply passes through a Lua
    /// number, so one above 2^53 (9 007 199 254 740 992) may come back rounded (the data on
    /// the server is exact). Read such a counter with a plain `GET` after the write.
    ///
    /// What it does not cover: data outside the lock's Redis (use the fencing token there:
    /// [`FencedKey`](crate::FencedKey), or a `fence` column in SQL), and commands a resending
    /// pool of your own sends twice after a reconnect (relock's own pools never resend).
    ///
    /// # Errors
    /// - [`Error::LockLost`]: the hold was gone when the batch arrived (its lease ran out, the
    ///   lock was deleted or force-unlocked), or is already known lost here: nothing ran.
    /// - [`Error::InvalidArgument`]: an empty batch, a command of more than
    ///   [`MAX_COMMAND_WORDS`](crate::MAX_COMMAND_WORDS) words, a key outside the lock's slot
    ///   (nothing was sent), a read hold's guard, or a quorum lock's. Only the words added
    ///   with [`Commands::key`] are checked against the slot: add every key of a command
    ///   (`MSET`'s, `RENAME`'s) with `key`.
    /// - [`Error::OutcomeUnknown`]: no reply came (a timeout, a lost connection, a shutdown).
    ///   The batch may have run, at most once (relock's pools never resend a command), as
    ///   one script (see [`Error::Redis`] below for a command that fails), and a copy delayed
    ///   in the network may still run later while the hold lives. To learn whether it ran,
    ///   end the hold first (`unlock`: a later copy is then refused), then read the data.
    /// - [`Error::Redis`]: a command failed (a wrong type, a bad argument, a refused
    ///   permission), with the server's words. The batch stopped there: the commands before
    ///   it stay applied (nothing is rolled back, as in `MULTI`/`EXEC`), and the commands
    ///   after it do not run (unlike `EXEC`, which runs them).
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
    /// read-write lock's read side) reads only while it is held. Any guard whose lock lives on
    /// one server may read; a quorum lock's guard is refused, as for `write`.
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
        if hold.is_lost() && !crate::seam::guarded_writes_ignore_a_lost_hold() {
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
