//! Key and channel names of one lock, following Redisson's `{name}` hash-tag rule so that every
//! key of a lock lands in the same Redis Cluster slot.

use crate::error::{short, Error, Result};

/// The Redis names that belong to one lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LockKeys {
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
    pub(crate) fn new(name: &str, fair: bool) -> Result<Self> {
        validate_name(name)?;
        Ok(LockKeys {
            lock: name.to_string(),
            channel: prefixed("redisson_lock__channel", name),
            token: prefixed("redisson_lock_token", name),
            queue: fair.then(|| QueueKeys {
                queue: prefixed("relock_fair_queue", name),
                alive: prefixed("relock_fair_alive", name),
                seq: prefixed("relock_fair_seq", name),
                handoff: prefixed("relock_fair_handoff", name),
                channel: prefixed("relock_fair_channel", name),
            }),
            rw: None,
        })
    }

    /// The keys of one side of the read-write lock `name` (Redisson's `RReadWriteLock`): the
    /// hash is the name itself, the channel `redisson_rwlock:{name}`.
    pub(crate) fn read_write(name: &str, side: Side) -> Result<Self> {
        validate_name(name)?;
        Ok(LockKeys {
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

/// Redisson's `prefixName`: `prefix:{name}`, or `prefix:name` when the name carries its own tag.
pub(crate) fn prefixed(prefix: &str, name: &str) -> String {
    if name.contains('{') {
        format!("{prefix}:{name}")
    } else {
        format!("{prefix}:{{{name}}}")
    }
}

/// Redisson's `suffixName`: `{name}:suffix`, or `name:suffix` when the name carries its own tag.
pub(crate) fn suffixed(name: &str, suffix: &str) -> String {
    if name.contains('{') {
        format!("{name}:{suffix}")
    } else {
        format!("{{{name}}}:{suffix}")
    }
}

/// The longest name a lock, semaphore or latch may have, in bytes. Redis takes keys of up to
/// 512 MB, but a name is sent with every call and printed in every error and log line: a
/// megabyte-long name is a bug in the caller, refused before anything is sent.
pub const MAX_NAME_LEN: usize = 1024;

/// Rejects names whose derived keys could not share a cluster slot, and names over
/// [`MAX_NAME_LEN`].
pub(crate) fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid("name", "a lock name must not be empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(Error::invalid(
            "name",
            format!(
                "`{}` is longer than the {MAX_NAME_LEN} bytes a name may have; use a shorter name (a hash of a long one, say)",
                short(name)
            ),
        ));
    }
    if let Some(open) = name.find('{') {
        // Redis hashes only the text between the first `{` and the next `}`, and only if it is
        // non-empty. Without such a tag, `name` and `prefix:name` would hash differently.
        let valid = name[open + 1..].find('}').is_some_and(|close| close > 0);
        if !valid {
            return Err(Error::invalid(
                "name",
                format!(
                    "`{}` contains `{{` but no non-empty `{{tag}}`; its keys could land in \
                     different cluster slots. Use a complete hash tag such as `orders:{{42}}`, or no braces",
                    short(name)
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_get_braces_around_the_whole_name() {
        let k = LockKeys::new("orders:42", true).unwrap();
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
        let k = LockKeys::new("orders:{42}:a", true).unwrap();
        assert_eq!(k.channel, "redisson_lock__channel:orders:{42}:a");
        assert_eq!(k.queue.unwrap().alive, "relock_fair_alive:orders:{42}:a");
    }

    #[test]
    fn read_write_keys_follow_redisson() {
        let k = LockKeys::read_write("doc:7", Side::Read).unwrap();
        assert_eq!(k.channel, "redisson_rwlock:{doc:7}");
        assert_eq!(k.read_timeout("c:1"), "{doc:7}:c:1:rwlock_timeout:1");
        let t = LockKeys::read_write("doc:{7}", Side::Write).unwrap();
        assert_eq!(t.read_timeout("c:1"), "doc:{7}:c:1:rwlock_timeout:1");
    }

    #[test]
    fn suffixes_follow_redissons_rule_and_share_the_names_slot() {
        assert_eq!(suffixed("jobs", "timeout"), "{jobs}:timeout");
        assert_eq!(suffixed("a{t}b", "timeout"), "a{t}b:timeout");
        for name in ["jobs", "a{t}b"] {
            let slot = |k: &str| fred::util::redis_keyslot(k.as_bytes());
            assert_eq!(slot(name), slot(&suffixed(name, "timeout")), "{name}");
            assert_eq!(slot(name), slot(&prefixed("redisson_sc", name)), "{name}");
        }
    }

    #[test]
    fn broken_tags_and_empty_names_are_rejected() {
        for bad in ["", "a{b", "a{}b", "{}", "x}{"] {
            assert!(
                matches!(
                    LockKeys::new(bad, false),
                    Err(Error::InvalidArgument { name: "name", .. })
                ),
                "{bad:?}"
            );
        }
    }
}
