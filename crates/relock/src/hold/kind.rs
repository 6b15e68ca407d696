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
use crate::hold::wake;
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
    fn wake(&self) -> wake::Format;

    /// Whether its holds share the lock with others (a read-write lock's readers): such a
    /// hold's guard may read under the hold's check, not write (`LockGuard::write`).
    fn shared(&self) -> bool {
        false
    }

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
    /// Set when the client's batcher may coalesce this call with others of the same
    /// [`Coalescing`] into one call.
    pub(crate) coalesce: Option<Coalescible>,
}

/// A script that runs many calls of a kind in one call, as the kind declares it for the
/// client's batcher: the batcher only concatenates the calls and splits the reply.
///
/// The script takes every call's keys in turn as its KEYS, and for each call its tag and then
/// its arguments in turn as its ARGV (so the tag says how many keys and arguments a call has);
/// it answers one part per call, which `part` reads into what the call's own script would
/// have answered (or the call's own error).
#[derive(Debug)]
pub(crate) struct Coalescing {
    pub(crate) script: &'static std::sync::LazyLock<Script>,
    pub(crate) part:
        fn(fred::types::Value) -> std::result::Result<fred::types::Value, fred::error::Error>,
}

/// A call that may go in a [`Coalescing`] call, under its tag there.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Coalescible {
    pub(crate) via: &'static Coalescing,
    pub(crate) tag: &'static str,
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
    /// The channel its waiters listen on: the release channel, or one of the kind's own
    /// (a fair lock's, whose messages name one waiter).
    pub(crate) wake: String,
}

impl LockKeys {
    /// The keys of the lock `name` (Redisson's `RLock` layout: releases published on
    /// `redisson_lock__channel:{name}`), whose holds are `kind`'s.
    pub(crate) fn new(name: &str, kind: &'static dyn HoldKind) -> Result<Self> {
        Self::publishing_on(name, kind, "redisson_lock__channel")
    }

    /// The keys of the lock `name` whose releases are published on `<prefix>:{name}` (a
    /// read-write lock's `redisson_rwlock`), whose holds are `kind`'s.
    pub(crate) fn publishing_on(
        name: &str,
        kind: &'static dyn HoldKind,
        prefix: &str,
    ) -> Result<Self> {
        validate_name(name)?;
        let channel = prefixed(prefix, name);
        Ok(LockKeys {
            kind,
            lock: name.to_string(),
            wake: channel.clone(),
            channel,
            token: prefixed("redisson_lock_token", name),
        })
    }

    /// The same keys, with waiters listening on `channel` instead of the release channel.
    pub(crate) fn waking_on(mut self, channel: String) -> Self {
        self.wake = channel;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kind for the key tests: they never call it.
    #[derive(Debug)]
    struct Any;
    /// Its channel's format: every message wakes every waiter.
    #[derive(Debug)]
    struct Everyone;
    impl crate::hold::wake::Waking for Everyone {
        fn deliver(&self, _: &str, waiters: &dyn crate::hold::wake::Waiters) {
            waiters.all(false);
        }
    }
    static ANY_CHANNEL: crate::hold::wake::Format =
        crate::hold::wake::Format::new("any", || std::sync::Arc::new(Everyone));
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
        fn wake(&self) -> crate::hold::wake::Format {
            ANY_CHANNEL
        }
    }

    #[test]
    fn a_locks_keys_share_its_slot_and_follow_redisson() {
        let k = LockKeys::new("orders:42", &Any).unwrap();
        assert_eq!(k.lock, "orders:42");
        assert_eq!(k.channel, "redisson_lock__channel:{orders:42}");
        assert_eq!(k.wake, k.channel);
        assert_eq!(k.token, "redisson_lock_token:{orders:42}");
        let t = LockKeys::publishing_on("orders:{42}:a", &Any, "redisson_rwlock").unwrap();
        assert_eq!(t.channel, "redisson_rwlock:orders:{42}:a");
        assert_eq!(t.token, "redisson_lock_token:orders:{42}:a");
        let w = t.waking_on("mine:{42}".into());
        assert_eq!(
            (w.wake.as_str(), w.channel.as_str()),
            ("mine:{42}", "redisson_rwlock:orders:{42}:a")
        );
    }

    #[test]
    fn keys_of_a_bad_name_are_refused() {
        for bad in ["", "a{b", "a{}b"] {
            assert!(LockKeys::new(bad, &Any).is_err(), "{bad:?}");
        }
    }
}
