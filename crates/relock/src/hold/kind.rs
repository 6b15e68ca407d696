//! The lock a hold is of: its keys ([`LockKeys`]) and its kind ([`HoldKind`]). What a lock
//! kind tells the shared machinery about its holds, in the way lock_api's
//! `RawMutex` keeps a mutex's kind out of the guard: the shared code (release, renewal, the
//! hold's watch, re-entry, metrics) asks the hold's [`HoldKind`] and names no kind.
//!
//! A kind implements [`HoldKind`] in its own file, as a unit struct with a `static`, and puts
//! it in the keys of every hold it makes ([`LockKeys::kind`](crate::hold::kind::LockKeys)).
//! Nothing here talks to Redis: a call is described ([`ScriptCall`]); the client room sends it.

use crate::error::Result;
use crate::hold::keys::{prefixed, validate_name};
use crate::script::Script;

/// How a lock kind's holds are released and renewed, how its channel's messages wake waiters,
/// and whether the shared re-entry applies to them.
pub(crate) trait HoldKind: Send + Sync + std::fmt::Debug + 'static {
    /// Its label in metrics (`relock_*{kind=…}`).
    fn label(&self) -> &'static str;

    /// The field of a new hold, from a fresh `<client_id>:<n>`: a kind whose scripts tell its
    /// holds apart by their field (the read-write lock's writer) changes it here.
    fn field(&self, fresh: String) -> String {
        fresh
    }

    /// The keys whose TTL is a hold's lease, the lock's hash first: a re-entry lengthens them.
    /// A kind whose holds have a lease key of their own (a read hold's timeout key) adds it.
    fn lease_keys(&self, keys: &LockKeys, field: &str) -> Vec<String> {
        let _ = field;
        vec![keys.lock.clone()]
    }

    /// The call that drops one count of the hold `field` (`all == false`) or the whole hold.
    /// Its reply: 1 (the hold is gone), 0 (counts are left) or nil (this hold is not there).
    fn release(&self, keys: &LockKeys, field: &str, all: bool, ctx: &CallContext) -> ScriptCall;

    /// Holds renew together (one call per batch) only with holds of the same group.
    fn renewal_group(&self) -> &'static str;

    /// The call that renews `batch` (holds of this kind's group: keys and field), each for
    /// `lease_ms`. Its reply is one integer per hold, 1 when renewed.
    fn renew(&self, batch: &[(&LockKeys, &str)], lease_ms: u64, ctx: &CallContext) -> ScriptCall;

    /// How a message on its channel wakes its waiters and its holders' watch.
    fn wake(&self) -> Wake;

    /// Whether a later `lock()` of the same owner, scope or task re-enters such a hold through
    /// the shared re-entry (`hold::reentry`). A kind with a re-entry of its own (a read-write
    /// lock's sides, which may be held together) says no.
    fn shared_reentry(&self) -> bool {
        true
    }
}

/// What a kind's call may need from the client it is sent by.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallContext {
    /// `PUBLISH`, or `SPUBLISH` on a cluster.
    pub(crate) publish: &'static str,
    /// How long a waiter handed a lock has to take it (ms), for a kind that hands over.
    pub(crate) grace_ms: u64,
}

/// One script call, described: the client room sends it.
#[derive(Debug)]
pub(crate) struct ScriptCall {
    pub(crate) script: &'static Script,
    pub(crate) keys: Vec<String>,
    pub(crate) args: Vec<String>,
    /// A `release.lua` call (its four arguments) that the client's batcher may coalesce with
    /// others into one `batch.lua` call.
    pub(crate) coalesce: bool,
}

/// How a message on a channel wakes the client's local waiters (`client::pubsub` applies it).
/// Each names a message format, not a kind: Redisson's lock, read-write lock, semaphore and
/// latch channels each carry one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// A release: `0` wakes one waiter; a message with `:` names the one waiter it is for
    /// (`<field>`: you are first; `<field>=<token>`: you hold it).
    Release,
    /// As [`Release`](Wake::Release), and `1` (a writer left: readers may share) wakes every
    /// waiter.
    ReleaseOrShared,
    /// The message is how many are free now, `k`: it wakes up to `k` local waiters.
    Count,
    /// `0` (opened) wakes every waiter; `1` (a count was set) none.
    Opened,
}

/// The Redis names that belong to one lock, and the kind whose holds they are.
#[derive(Debug, Clone)]
pub(crate) struct LockKeys {
    /// What the shared code asks about these holds (release, renewal, wake-ups, re-entry).
    pub(crate) kind: &'static dyn HoldKind,
    /// The hash holding `<client_id>:<n>` (one field per hold) → hold count. It is the lock's
    /// name itself.
    pub(crate) lock: String,
    /// Where releases are published.
    pub(crate) channel: String,
    /// The fencing counter.
    pub(crate) token: String,
    /// The waiting line, for a fair lock.
    pub(crate) queue: Option<QueueKeys>,
    /// A read-write lock's side (`None` for a plain or fair lock).
    pub(crate) rw: Option<Side>,
}

/// Which side of a read-write lock a hold is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Read,
    Write,
}

/// The sorted sets (and sequence) of a fair lock's waiting line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueKeys {
    /// owner → ticket: arrival order.
    pub(crate) queue: String,
    /// owner → heartbeat deadline (server ms).
    pub(crate) alive: String,
    /// The ticket sequence (INCR).
    pub(crate) seq: String,
    /// owner → the first lease it asks for if handed the lock while it waits; then, once
    /// handed it, owner → its token (`lua/lib/queue.lua`).
    pub(crate) handoff: String,
    /// The channel of relock's fair-lock messages (`<field>`: you are first and the lock is
    /// free; `<field>=<token>`: you hold it), which the line's waiters listen on. Not Redisson's
    /// `redisson_lock__channel`: a Redisson `RLock` waiter of the same name decodes that
    /// channel's messages as numbers, and logs an error for anything else (issue 22).
    pub(crate) channel: String,
}

impl LockKeys {
    /// The keys of the lock `name` (Redisson's `RLock` layout), whose holds are `kind`'s.
    pub(crate) fn new(name: &str, kind: &'static dyn HoldKind) -> Result<Self> {
        validate_name(name)?;
        Ok(LockKeys {
            kind,
            lock: name.to_string(),
            channel: prefixed("redisson_lock__channel", name),
            token: prefixed("redisson_lock_token", name),
            queue: None,
            rw: None,
        })
    }

    /// The same lock's keys with a waiting line (a fair lock).
    pub(crate) fn with_queue(mut self) -> Self {
        let name = &self.lock;
        self.queue = Some(QueueKeys {
            queue: prefixed("relock_fair_queue", name),
            alive: prefixed("relock_fair_alive", name),
            seq: prefixed("relock_fair_seq", name),
            handoff: prefixed("relock_fair_handoff", name),
            channel: prefixed("relock_fair_channel", name),
        });
        self
    }

    /// The keys of one side of the read-write lock `name` (Redisson's `RReadWriteLock`): the
    /// hash is the name itself, the channel `redisson_rwlock:{name}`.
    pub(crate) fn read_write(name: &str, side: Side, kind: &'static dyn HoldKind) -> Result<Self> {
        validate_name(name)?;
        Ok(LockKeys {
            kind,
            lock: name.to_string(),
            channel: prefixed("redisson_rwlock", name),
            token: prefixed("redisson_lock_token", name),
            queue: None,
            rw: Some(side),
        })
    }

    /// The channel this lock's waiters listen on: a fair lock's own channel (its messages name
    /// one waiter), or the release channel.
    pub(crate) fn wake_channel(&self) -> &str {
        match &self.queue {
            Some(q) => &q.channel,
            None => &self.channel,
        }
    }

    /// The prefix of a read-write lock's per-hold keys (Redisson's `suffixName`): `{name}:`,
    /// or `name:` for a name with its own hash tag, so that they share the lock's slot.
    pub(crate) fn hold_prefix(&self) -> String {
        if self.lock.contains('{') {
            format!("{}:", self.lock)
        } else {
            format!("{{{}}}:", self.lock)
        }
    }

    /// A read hold's timeout key: its own lease, independent of other readers'.
    pub(crate) fn read_timeout(&self, field: &str) -> String {
        format!("{}{field}:rwlock_timeout:1", self.hold_prefix())
    }

    /// KEYS of `release.lua` and `force_unlock.lua`: the lock, and for a fair lock the rest of
    /// [`queue_group`](Self::queue_group), so that the first waiter is the one handed the lock
    /// (or woken). The channel is never a key (it goes with the arguments): an ACL user needs a
    /// channel grant for it, not a key grant (`docs/operations.md`, issue 22).
    pub(crate) fn release_keys(&self) -> Vec<String> {
        match self.queue_group() {
            Some(group) => group.to_vec(),
            None => vec![self.lock.clone()],
        }
    }

    /// KEYS of the fair-queue scripts that take the group (lock, queue, alive, seq, counter,
    /// handoff): the counter and the handoff hash because a release, a leave or a heartbeat
    /// may hand the lock to the first waiter (`lua/lib/handoff.lua`). The channel goes with
    /// the arguments.
    pub(crate) fn queue_group(&self) -> Option<[String; 6]> {
        let q = self.queue.as_ref()?;
        Some([
            self.lock.clone(),
            q.queue.clone(),
            q.alive.clone(),
            q.seq.clone(),
            self.token.clone(),
            q.handoff.clone(),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kind for the key tests: they never call it.
    #[derive(Debug)]
    struct Any;
    impl HoldKind for Any {
        fn label(&self) -> &'static str {
            "any"
        }
        fn release(
            &self,
            _: &LockKeys,
            _: &str,
            _: bool,
            _: &crate::hold::kind::CallContext,
        ) -> crate::hold::kind::ScriptCall {
            unreachable!()
        }
        fn renewal_group(&self) -> &'static str {
            "any"
        }
        fn renew(
            &self,
            _: &[(&LockKeys, &str)],
            _: u64,
            _: &crate::hold::kind::CallContext,
        ) -> crate::hold::kind::ScriptCall {
            unreachable!()
        }
        fn wake(&self) -> crate::hold::kind::Wake {
            crate::hold::kind::Wake::Release
        }
    }

    #[test]
    fn plain_names_get_braces_around_the_whole_name() {
        let k = LockKeys::new("orders:42", &Any).unwrap().with_queue();
        assert_eq!(k.lock, "orders:42");
        assert_eq!(k.channel, "redisson_lock__channel:{orders:42}");
        assert_eq!(k.token, "redisson_lock_token:{orders:42}");
        let q = k.queue.unwrap();
        assert_eq!(q.queue, "relock_fair_queue:{orders:42}");
        assert_eq!(q.alive, "relock_fair_alive:{orders:42}");
        assert_eq!(q.seq, "relock_fair_seq:{orders:42}");
        assert_eq!(q.handoff, "relock_fair_handoff:{orders:42}");
    }

    #[test]
    fn names_with_a_tag_keep_it() {
        let k = LockKeys::new("orders:{42}:a", &Any).unwrap().with_queue();
        assert_eq!(k.channel, "redisson_lock__channel:orders:{42}:a");
        assert_eq!(k.queue.unwrap().alive, "relock_fair_alive:orders:{42}:a");
    }

    #[test]
    fn read_write_keys_follow_redisson() {
        let k = LockKeys::read_write("doc:7", Side::Read, &Any).unwrap();
        assert_eq!(k.channel, "redisson_rwlock:{doc:7}");
        assert_eq!(k.read_timeout("c:1"), "{doc:7}:c:1:rwlock_timeout:1");
        let t = LockKeys::read_write("doc:{7}", Side::Write, &Any).unwrap();
        assert_eq!(t.read_timeout("c:1"), "doc:{7}:c:1:rwlock_timeout:1");
    }

    #[test]
    fn keys_of_a_bad_name_are_refused() {
        for bad in ["", "a{b", "a{}b"] {
            assert!(LockKeys::new(bad, &Any).is_err(), "{bad:?}");
            assert!(LockKeys::read_write(bad, Side::Read, &Any).is_err(), "{bad:?}");
        }
    }
}
