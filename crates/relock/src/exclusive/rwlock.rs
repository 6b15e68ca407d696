//! [`ReadWriteLock`]: many readers or one writer, wire-compatible with Redisson's
//! `RReadWriteLock`; its two sides, [`ReadLock`] and [`WriteLock`], are lock kinds of their
//! own over the shared parts (attempts in their own task, the lease-bounded wait, holds,
//! watchdog, guard).
//!
//! On the server a read-write lock is one hash (Redisson's layout): `mode` (`read` or
//! `write`), a field per read hold (`<client_id>:<n>` → count) and per write hold
//! (`<client_id>:<n>:write` → count). Each read hold also has a timeout key
//! (`{name}:<field>:rwlock_timeout:1`), its own lease: readers' leases are independent, and a
//! release finds readers whose timeout key expired and drops them.

use std::sync::Arc;
use std::time::Duration;

use crate::client::handle::Client;
use crate::client::inner::Inner;
use crate::client::scripts;
use crate::error::{Error, Result};
use crate::exclusive::acquire::{acquire_exclusive, acquire_spans, ExclusiveAcquire, Plan};
use crate::exclusive::attempt::AcquireCall;
use crate::exclusive::channel::LOCK_CHANNEL;
use crate::exclusive::hash_field_holds;
use crate::exclusive::queries;
use crate::exclusive::wait;
use crate::hold::distributed_lock;
use crate::hold::guard::LockGuard;
use crate::hold::holds::Hold;
use crate::hold::kind::LockKeys;
use crate::hold::kind::{CallContext, HoldKind, ScriptCall};
use crate::hold::reentry;
use crate::hold::wake::Format;

scripts::scripts! {
    /// Read-write lock: a fresh read hold (shared; a write holder may take one).
    RW_READ_ACQUIRE = writes "rw_read_acquire.lua" ["mint", "shape"];
    /// Read-write lock: a fresh write hold (exclusive).
    RW_WRITE_ACQUIRE = writes "rw_write_acquire.lua" ["mint", "shape"];
    /// Read-write lock: drop (a count of) a read hold; free the lock when no hold is left.
    RW_READ_RELEASE = writes "rw_read_release.lua" ["release", "readers"];
    /// Read-write lock: drop (a count of) a write hold; wake every waiter.
    RW_WRITE_RELEASE = writes "rw_write_release.lua" ["release", "readers"];
    /// Read-write lock: the watchdog's batch renewal of read holds and their timeout keys.
    RW_READ_RENEW = writes "rw_read_renew.lua" ["each", "extend"];
}

/// A distributed read-write lock: any number of readers, or one writer. Wire-compatible with
/// Redisson's `RReadWriteLock` (same hash, fields, timeout keys and channel).
///
/// Made by [`Client::read_write_lock`]. Its [`read_lock`](ReadWriteLock::read_lock) and
/// [`write_lock`](ReadWriteLock::write_lock) have the same methods and guard as a
/// [`Lock`](crate::Lock): waits woken by pub/sub and bounded by the holder's lease, the
/// watchdog (without a fixed lease), `lost()`, fencing tokens, scopes.
///
/// - **Re-entry.** Inside a read hold's scope a read `lock()` re-enters it; inside a write
///   hold's scope a write `lock()` re-enters it.
/// - **Downgrade.** Inside a write hold's scope (or as its [`Owner`](crate::Owner)) a read `lock()` takes a
///   read hold at once, beside the write hold; releasing the write hold then leaves a read
///   hold.
/// - **No upgrade.** A write `lock()` inside a read hold's scope (or by its owner) fails with
///   [`Error::UpgradeRefused`]: it would wait for its own read hold for ever.
/// - **Waking.** A write release wakes every waiter (readers can share); a release that frees
///   the lock wakes one waiter per client (a writer can take it).
/// - **Fairness.** None, as in Redisson: while readers keep holding it, a writer waits, so a
///   steady stream of overlapping readers can starve writers. Use a [fair
///   lock](crate::Client::fair_lock) if writers must get through. There is no fair variant:
///   the fair machinery is a line for one holder at a time (each release grants or names the
///   next waiter, and a waiter's heartbeat deadline counts from its turn), while a fair
///   read-write lock would grant every reader at the head of the line together and hold
///   readers that arrive behind a waiting writer: another discipline, with its own line
///   scripts, that would share little with it. Redisson has none either.
/// - **Tokens.** Every hold gets a fencing token above every token handed out before it, reads
///   included. A write token is exclusive: no other hold overlaps it. A read token is not:
///   readers holding at once have different tokens. A resource can reject a reader whose token
///   is below the last write token it saw (that reader started before the write).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
/// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
/// let client = relock::Client::connect(&url).await?;
/// let rw = client.read_write_lock("catalog");
/// let reading = rw.read_lock().lock().await?;           // shared with other readers
/// reading.unlock().await?;
/// let writing = rw.write_lock().lock().await?;          // alone
/// let read_too = writing.scope(rw.read_lock().lock()).await?; // downgrade
/// writing.unlock().await?;                              // still reading
/// # assert!(rw.read_lock().is_locked().await? && !rw.write_lock().is_locked().await?);
/// read_too.unlock().await?;
/// # assert!(!rw.read_lock().is_locked().await?);
/// # client.shutdown().await; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ReadWriteLock {
    read: ReadLock,
    write: WriteLock,
}

/// The read side of a [`ReadWriteLock`]: shared holds.
#[derive(Debug, Clone)]
pub struct ReadLock(Half);

/// The write side of a [`ReadWriteLock`]: an exclusive hold.
#[derive(Debug, Clone)]
pub struct WriteLock(Half);

/// One side: what it needs to acquire.
#[derive(Debug, Clone)]
struct Half {
    inner: Arc<Inner>,
    name: Arc<str>,
    side: Side,
    lease: Option<Duration>,
}

/// The lock kind of this module, made by the client.
impl Client {
    /// A handle to the read-write lock called `name`. Cheap; nothing is sent until it is
    /// used. A bad name is reported by the first operation, as [`Error::InvalidArgument`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// let rw = client.read_write_lock("prices");
    /// let n = rw.read_lock().with(async |_guard| 42).await?;
    /// # assert_eq!(n, 42);
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub fn read_write_lock(&self, name: impl Into<String>) -> ReadWriteLock {
        let name: Arc<str> = self.inner.named(name.into()).into();
        let half = |side| Half {
            inner: self.inner.clone(),
            name: name.clone(),
            side,
            lease: None,
        };
        ReadWriteLock {
            read: ReadLock(half(Side::Read)),
            write: WriteLock(half(Side::Write)),
        }
    }
}

impl ReadWriteLock {
    /// The lock's name (the key of its hash).
    pub fn name(&self) -> &str {
        &self.read.0.name
    }

    /// One consistent read of the lock for operators: its mode, every holder (the write
    /// hold's field ends in `:write`), the lease, the fencing counter.
    ///
    /// # Errors
    /// [`Error::WrongType`] if the key is not a lock's hash; connection errors; a bad name.
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    pub async fn status(&self) -> Result<crate::LockStatus> {
        let half = &self.read.0;
        crate::Lock::new(half.inner.clone(), half.name.to_string(), None)
            .status()
            .await
    }

    /// The read side: any number of holders at once, none while a writer holds it.
    pub fn read_lock(&self) -> ReadLock {
        self.read.clone()
    }

    /// The write side: one holder, none while anyone reads.
    pub fn write_lock(&self) -> WriteLock {
        self.write.clone()
    }
}

/// A read-write lock's read holds: fields of its hash (Redisson's `RReadWriteLock` layout),
/// each with a timeout key of its own that is its lease, renewed with it by
/// `rw_read_renew.lua`. They re-enter through the read-write lock's own plan, not the shared
/// re-entry.
#[derive(Debug)]
pub(crate) struct Read;

/// A read-write lock's write holds: fields named `<client_id>:<n>:write` (Redisson tells
/// them from readers by it), renewed like a lock's.
#[derive(Debug)]
pub(crate) struct Write;

static READ: Read = Read;
static WRITE: Write = Write;

/// Which side of a read-write lock a hold is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Read,
    Write,
}

/// The side `hold` is on, if it is a read-write lock's (by its kind's label, which names one
/// kind only).
fn side_of(hold: &Hold) -> Option<Side> {
    match hold.keys.kind.label() {
        l if l == READ.label() => Some(Side::Read),
        l if l == WRITE.label() => Some(Side::Write),
        _ => None,
    }
}

/// The prefix of a read-write lock's per-hold keys (Redisson's `suffixName`): `{name}:`, or
/// `name:` for a name with its own hash tag, so that they share the lock's slot.
fn hold_prefix(lock: &str) -> String {
    if lock.contains('{') {
        format!("{lock}:")
    } else {
        format!("{{{lock}}}:")
    }
}

/// A read hold's timeout key: its own lease, independent of other readers'.
fn read_timeout(keys: &LockKeys, field: &str) -> String {
    format!("{}{field}:rwlock_timeout:1", hold_prefix(&keys.lock))
}

/// `rw_read_release.lua` or `rw_write_release.lua`, with the keys they take.
fn release_side(
    script: &'static crate::script::Script,
    mut script_keys: Vec<String>,
    keys: &LockKeys,
    field: &str,
    all: bool,
    ctx: &CallContext,
) -> ScriptCall {
    script_keys.insert(0, keys.lock.clone());
    ScriptCall {
        script,
        keys: script_keys,
        args: vec![
            field.to_string(),
            hash_field_holds::release_mode(all).into(),
            ctx.publish.into(),
            hold_prefix(&keys.lock),
            keys.channel.clone(),
        ],
        coalesce: None,
    }
}

impl HoldKind for Read {
    fn label(&self) -> &'static str {
        "read"
    }

    fn shared(&self) -> bool {
        true
    }

    fn lease_keys(&self, keys: &LockKeys, field: &str) -> Vec<String> {
        vec![keys.lock.clone(), read_timeout(keys, field)]
    }

    fn release(&self, keys: &LockKeys, field: &str, all: bool, ctx: &CallContext) -> ScriptCall {
        let own = vec![read_timeout(keys, field)];
        release_side(&RW_READ_RELEASE, own, keys, field, all, ctx)
    }

    fn renewal_group(&self) -> &'static str {
        "read holds"
    }

    fn renew(&self, batch: &[(&LockKeys, &str)], lease_ms: u64, _: &CallContext) -> ScriptCall {
        ScriptCall {
            script: &RW_READ_RENEW,
            keys: batch
                .iter()
                .flat_map(|(k, f)| self.lease_keys(k, f))
                .collect(),
            args: std::iter::once(lease_ms.to_string())
                .chain(batch.iter().map(|(_, f)| f.to_string()))
                .collect(),
            coalesce: None,
        }
    }

    fn wake(&self) -> Format {
        LOCK_CHANNEL
    }

    fn shared_reentry(&self) -> bool {
        false
    }
}

impl HoldKind for Write {
    fn label(&self) -> &'static str {
        "write"
    }

    fn field(&self, fresh: String) -> String {
        fresh + ":write"
    }

    fn release(&self, keys: &LockKeys, field: &str, all: bool, ctx: &CallContext) -> ScriptCall {
        release_side(&RW_WRITE_RELEASE, vec![], keys, field, all, ctx)
    }

    fn renewal_group(&self) -> &'static str {
        hash_field_holds::LOCK_HOLDS
    }

    fn renew(&self, batch: &[(&LockKeys, &str)], lease_ms: u64, _: &CallContext) -> ScriptCall {
        hash_field_holds::renew(batch, lease_ms)
    }

    fn wake(&self) -> Format {
        LOCK_CHANNEL
    }

    fn shared_reentry(&self) -> bool {
        false
    }
}

impl Half {
    fn keys(&self) -> Result<Arc<LockKeys>> {
        let kind: &'static dyn HoldKind = match self.side {
            Side::Read => &READ,
            Side::Write => &WRITE,
        };
        // Redisson's `RReadWriteLock`: the hash is the name itself, the channel
        // `redisson_rwlock:{name}`.
        LockKeys::publishing_on(&self.name, kind, "redisson_rwlock").map(Arc::new)
    }

    /// Decides between re-entry, a downgrade and a fresh hold, from the holds of this lock in
    /// the scopes around the caller (innermost first) or, outside them, its owner's.
    fn plan(&self, keys: &LockKeys) -> Result<Plan<SideCall>> {
        let inner = &self.inner;
        let owner = reentry::owner(inner.settings().reentrancy);
        let mut mine = reentry::scoped_holds(inner.shared().id, &keys.lock);
        if mine.is_empty() {
            if let Some(o) = &owner {
                mine = inner.shared().holds.of_lock(&keys.lock);
                mine.retain(|h| h.owner.as_ref() == Some(o) && h.is_live() && side_of(h).is_some());
            }
        }
        let of = |side| mine.iter().find(|h| side_of(h) == Some(side)).cloned();
        let live = |h: Arc<Hold>| {
            if h.is_live() {
                Ok(h)
            } else {
                Err(Error::LockLost {
                    name: keys.lock.clone(),
                })
            }
        };
        match (self.side, of(Side::Read), of(Side::Write)) {
            (Side::Write, _, Some(w)) => Ok(Plan::Reenter(live(w)?)),
            (Side::Write, Some(_), None) => Err(Error::UpgradeRefused {
                name: keys.lock.clone(),
            }),
            (Side::Read, Some(r), _) => Ok(Plan::Reenter(live(r)?)),
            // A read joins the caller's own write hold (a downgrade).
            (Side::Read, None, Some(w)) => Ok(Plan::Fresh {
                owner,
                with: SideCall::Read {
                    writer: live(w)?.field.clone(),
                },
            }),
            (Side::Read, None, None) => Ok(Plan::Fresh {
                owner,
                with: SideCall::Read {
                    writer: String::new(),
                },
            }),
            (Side::Write, None, None) => Ok(Plan::Fresh {
                owner,
                with: SideCall::Write,
            }),
        }
    }

    async fn acquire(&self, wait: Option<Duration>) -> Result<Option<LockGuard>> {
        let inner = &self.inner;
        let side = match self.side {
            Side::Read => "read",
            Side::Write => "write",
        };
        let name = &*self.name;
        let lock = ExclusiveAcquire {
            inner,
            keys: self.keys(),
            lease: self.lease,
            spans: acquire_spans!(name, side),
        };
        let plan = |keys: &Arc<LockKeys>| self.plan(keys);
        acquire_exclusive(lock, wait, plan, |keys, fresh, call, wait| {
            wait::lease_bounded(inner, keys, fresh, wait, call)
        })
        .await
    }

    /// Whether the hash's mode is this side's.
    async fn is_locked(&self) -> Result<bool> {
        let keys = self.keys()?;
        let (_, mode) = self.inner.check(&keys.lock, "mode".into()).await?;
        Ok(mode.as_deref()
            == Some(match self.side {
                Side::Read => "read",
                Side::Write => "write",
            }))
    }

    /// Deletes the whole lock (both sides) and wakes every waiter.
    async fn force_unlock(&self) -> Result<bool> {
        let call =
            |keys: &LockKeys, ctx: &CallContext| queries::delete_and_publish(keys, ctx, true);
        queries::force_unlock(&self.inner, self.keys(), call).await
    }
}

/// The methods both sides share, over their [`Half`].
macro_rules! side_methods {
    ($side:ident, $what:literal) => {
        impl $side {
            /// The lock's name (the key of its hash).
            pub fn name(&self) -> &str {
                &self.0.name
            }

            #[doc = concat!("The same side with a fixed lease: ", $what, " holds taken through it expire")]
            /// after `lease` and the watchdog leaves them alone. Validated when used (at least
            /// 1 ms).
            pub fn with_lease(mut self, lease: Duration) -> Self {
                self.0.lease = Some(lease);
                self
            }

            /// The fixed lease, if any.
            pub fn lease(&self) -> Option<Duration> {
                self.0.lease
            }

            #[doc = concat!("Whether the lock is held for ", $what, " (its hash's `mode`).")]
            ///
            /// # Errors
            /// Connection errors; [`Error::InvalidArgument`] for a bad name;
            /// [`Error::WrongType`] if the key is not a hash, [`Error::NotALock`] if it is a
            /// hash that is not a lock.
            ///
            /// # Cancel safety
            /// Cancel safe (read only).
            pub async fn is_locked(&self) -> Result<bool> {
                self.0.is_locked().await
            }

            /// Deletes the whole read-write lock, whoever holds it (readers and writer), and
            /// wakes every waiter. Returns whether it was held. This client's holds of it
            /// report themselves lost at once.
            ///
            /// # Errors
            /// As [`is_locked`](Self::is_locked).
            ///
            /// # Cancel safety
            /// If dropped after the command was sent, the lock may or may not be deleted.
            pub async fn force_unlock(&self) -> Result<bool> {
                self.0.force_unlock().await
            }

            async fn acquire(&self, wait: Option<Duration>) -> Result<Option<LockGuard>> {
                self.0.acquire(wait).await
            }

            /// Both sides share one hash: one resource.
            fn resource(&self) -> String {
                queries::resource(&self.0.inner, &self.0.name)
            }

            fn resources(&self) -> Vec<String> {
                vec![self.resource()]
            }
        }
    };
}

side_methods!(ReadLock, "reading");
side_methods!(WriteLock, "writing");

distributed_lock::lock_methods!(
    ReadLock,
    errors: "[`Error::InvalidArgument`](crate::Error::InvalidArgument) for a bad name or lease, [`Error::WrongType`](crate::Error::WrongType) or [`Error::NotALock`](crate::Error::NotALock) if the key holds something else (at once: nothing is changed or waited on), connection errors, [`Error::Shutdown`](crate::Error::Shutdown), and [`Error::LockLost`](crate::Error::LockLost) when called inside the scope of a hold of this lock that has ended. While Redis does not answer (an outage, a restart), `lock` keeps trying (about once a second, with one warning) until it answers or the client shuts down; `try_lock_for` until its bound, then returns the transient error; `try_lock` for one command timeout. An attempt whose reply was lost never becomes a hold of the caller: it is released in the background (`Error::Timeout` says the call holds nothing).",
    cancel: "Cancel safe: if the future is dropped, a hold that was already granted is released, and its subscription is dropped.",
    doc_make: "let client = relock::Client::connect(&url).await?; let make = |name: &str| client.read_write_lock(name).read_lock();"
);

distributed_lock::lock_methods!(
    WriteLock,
    errors: "As for [`ReadLock::lock`]; and [`Error::UpgradeRefused`](crate::Error::UpgradeRefused) when the caller holds a read hold of this lock (in its scope, or as its owner).",
    cancel: "Cancel safe: if the future is dropped, a hold that was already granted is released, and its subscription is dropped.",
    doc_make: "let client = relock::Client::connect(&url).await?; let make = |name: &str| client.read_write_lock(name).write_lock();"
);

/// A read-write lock side's attempt. Its holders do not exclude every other (a reader may
/// share), and its channel's `1` (a write hold went) wakes every waiter.
#[derive(Debug, Clone)]
pub(crate) enum SideCall {
    /// `rw_read_acquire.lua`: a read hold; `writer` is the field of the caller's own write
    /// hold of this lock ("" if none), which lets it read while it writes (a downgrade).
    Read { writer: String },
    /// `rw_write_acquire.lua`: a write hold.
    Write,
}

impl AcquireCall for SideCall {
    type Outcome = std::convert::Infallible;

    fn call(
        &self,
        _: &Inner,
        keys: &LockKeys,
        field: &str,
        args: &mut Vec<String>,
    ) -> (&'static scripts::Script, Vec<String>) {
        match self {
            SideCall::Read { writer } => {
                args.push(writer.clone());
                let k = vec![
                    keys.lock.clone(),
                    keys.token.clone(),
                    read_timeout(keys, field),
                ];
                (&RW_READ_ACQUIRE, k)
            }
            SideCall::Write => (
                &RW_WRITE_ACQUIRE,
                vec![keys.lock.clone(), keys.token.clone()],
            ),
        }
    }
    fn exclusive(&self) -> bool {
        false
    }
    fn wake(&self) -> Format {
        LOCK_CHANNEL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_write_keys_follow_redisson() {
        let k = LockKeys::publishing_on("doc:7", &READ, "redisson_rwlock").unwrap();
        assert_eq!(k.channel, "redisson_rwlock:{doc:7}");
        assert_eq!(read_timeout(&k, "c:1"), "{doc:7}:c:1:rwlock_timeout:1");
        let t = LockKeys::publishing_on("doc:{7}", &WRITE, "redisson_rwlock").unwrap();
        assert_eq!(read_timeout(&t, "c:1"), "doc:{7}:c:1:rwlock_timeout:1");
        assert_eq!(WRITE.field("c:1".into()), "c:1:write");
        assert_eq!(READ.field("c:1".into()), "c:1");
    }
}
