//! The embedded Lua scripts and how they are called: EVALSHA, and EVAL once on NOSCRIPT
//! (which also puts the script back into the server's cache).

use std::sync::LazyLock;

use fred::clients::Client as FredClient;
use fred::interfaces::ClientLike;
use fred::types::{ClusterHash, CustomCommand};
use fred::types::{FromValue, Value};

pub(crate) use crate::script::Script;

impl Script {
    /// Runs the script on `client`. NOSCRIPT means the script did not run, so falling back to
    /// EVAL is safe; EVAL also caches it for the next EVALSHA.
    pub(crate) async fn run<R: FromValue>(
        &self,
        client: &FredClient,
        keys: Vec<String>,
        args: Vec<String>,
    ) -> Result<R, fred::error::Error> {
        self.send(client, keys, args, ["EVALSHA", "EVAL"]).await
    }

    /// [`run`](Self::run) for a call registered in `in_flight`: it says when its command is
    /// with fred, and sends the EVAL after NOSCRIPT only if no release of its field has begun
    /// on that node (then it answers the NOSCRIPT error: the script did not run).
    pub(crate) async fn run_tracked<R: FromValue>(
        &self,
        client: &FredClient,
        keys: Vec<String>,
        args: Vec<String>,
        call: &crate::client::in_flight::Call,
    ) -> Result<R, fred::error::Error> {
        self.send_as(client, keys, args, ["EVALSHA", "EVAL"], Some(call))
            .await
    }

    /// Runs a read-only script (flagged `no-writes`) with `EVALSHA_RO`, and `EVAL_RO` on
    /// NOSCRIPT. Unlike `EVALSHA`, an `EVALSHA_RO` of a script the server has not cached is
    /// answered (NOSCRIPT) at once during a `CLIENT PAUSE WRITE` (a failover), instead of at
    /// the end of the pause.
    pub(crate) async fn run_read_only<R: FromValue>(
        &self,
        client: &FredClient,
        keys: Vec<String>,
        args: Vec<String>,
    ) -> Result<R, fred::error::Error> {
        self.send(client, keys, args, ["EVALSHA_RO", "EVAL_RO"])
            .await
    }

    /// Sends `by_sha` (the script's SHA1), and `by_body` (the script itself) if the server
    /// answers NOSCRIPT: that one script did not run, whatever else was in flight, so the
    /// fallback is safe.
    ///
    /// fred marks its own EVALSHA as not pipelinable, so concurrent scripts on one connection
    /// would each wait for the one before to be answered. As custom commands (routed by the
    /// first key's slot, like fred's own) they are pipelined: many lock operations share one
    /// connection's round trips.
    async fn send<R: FromValue>(
        &self,
        client: &FredClient,
        keys: Vec<String>,
        args: Vec<String>,
        commands: [&'static str; 2],
    ) -> Result<R, fred::error::Error> {
        self.send_as(client, keys, args, commands, None).await
    }

    /// [`send`](Self::send), telling `tracked` (if any) when each command is with fred.
    async fn send_as<R: FromValue>(
        &self,
        client: &FredClient,
        keys: Vec<String>,
        args: Vec<String>,
        [by_sha, by_body]: [&'static str; 2],
        tracked: Option<&crate::client::in_flight::Call>,
    ) -> Result<R, fred::error::Error> {
        let hash = keys.first().map_or(ClusterHash::Random, |k| {
            ClusterHash::Custom(fred::util::redis_keyslot(k.as_bytes()))
        });
        // The strings move into the values (no copy); cloning a value for the NOSCRIPT
        // fallback only counts a reference.
        let mut call: Vec<Value> = Vec::with_capacity(2 + keys.len() + args.len());
        call.push(self.sha1.as_str().into());
        call.push((keys.len() as i64).into());
        call.extend(keys.into_iter().map(Value::from));
        call.extend(args.into_iter().map(Value::from));
        let sha = CustomCommand::new_static(by_sha, hash.clone(), false);
        // fred's command future is several KB: boxed, so that every future that awaits a
        // script (and every task or slot that carries one) stays small and cheap to move.
        let first = Box::pin(client.custom(sha, call.clone()));
        let first = match tracked {
            Some(t) => t.handing(first).await,
            None => first.await,
        };
        match first {
            Err(e) if is_noscript(&e) => {
                if tracked.is_some_and(|t| !t.may_send_more()) {
                    tracing::debug!(
                        script = self.name,
                        "NOSCRIPT after its release began; not sent again"
                    );
                    return Err(e);
                }
                tracing::debug!(script = self.name, "NOSCRIPT; sending the script body");
                call[0] = self.lua.as_ref().into();
                let body =
                    Box::pin(client.custom(CustomCommand::new_static(by_body, hash, false), call));
                match tracked {
                    Some(t) => t.handing(body).await,
                    None => body.await,
                }
            }
            other => other,
        }
    }
}

fn is_noscript(e: &fred::error::Error) -> bool {
    e.details().starts_with("NOSCRIPT")
}

/// Declares every script once: its constant in [`lua`] (the source: the `lua/lib` functions it
/// names, then its own file), its [`Script`] (named after its file), and its place in
/// `all()`, which the test below checks. A new script is one line here.
macro_rules! scripts {
    ($( $(#[doc = $doc:literal])* $name:ident = $mode:ident $file:literal [$($lib:literal),*]; )*) => {
        /// The Lua sources of the scripts, for inspection, tooling and benchmarks
        /// (`docs/data-layout.md` describes their keys, arguments and replies). Each is the
        /// shared functions it uses (`lua/lib/*.lua`) followed by the script's own file: Redis
        /// scripts cannot include one another, and every function a script defines costs the
        /// server time on each call, so a script carries only what it calls.
        pub mod lua {
            $( $(#[doc = $doc])* pub const $name: &str = source!($mode $file $(, $lib)*); )*
        }
        $(
            pub(crate) static $name: LazyLock<Script> = LazyLock::new(|| {
                Script::new($file.trim_end_matches(".lua"), lua::$name)
            });
        )*
        /// Every script, for the checks below.
        #[cfg(test)]
        fn all() -> Vec<&'static Script> {
            vec![$(&*$name),*]
        }
    };
}

/// A script's source: the shared functions, then its file; a read-only one starts with the
/// `no-writes` flag, which must be its first line.
macro_rules! source {
    (writes $file:literal $(, $lib:literal)*) => {
        concat!(
            $(include_str!(concat!("../../lua/lib/", $lib, ".lua")),)*
            include_str!(concat!("../../lua/", $file))
        )
    };
    (read_only $file:literal $(, $lib:literal)*) => {
        concat!("#!lua flags=no-writes\n", source!(writes $file $(, $lib)*))
    };
}

scripts! {
    /// Take a fresh hold, or report the holder's PTTL.
    ACQUIRE = writes "acquire.lua" ["mint", "shape", "acquire"];
    /// One more count on an existing hold; never creates one.
    REENTER = writes "reenter.lua" ["extend"];
    /// Drop one count of a plain lock's hold (or the whole hold) and publish the release.
    RELEASE = writes "release.lua" ["release"];
    /// Drop one count of a fair lock's hold (or the whole hold) and hand the lock to the next in
    /// line (or tell it).
    FAIR_RELEASE = writes "fair_release.lua" ["release", "mint", "queue", "handoff"];
    /// Several plain acquires and releases in one call (coalesced by the client).
    BATCH = writes "batch.lua" ["mint", "shape", "acquire", "release"];
    /// The watchdog's batch renewal.
    RENEW = writes "renew.lua" ["each", "extend"];
    /// One consistent read of a lock: holders, lease, counter, fair line (reads only).
    STATUS = read_only "status.lua" ["shape"];
    /// Whether a lock is held and one hold's count, after checking that the key is a lock (reads
    /// only).
    CHECK = read_only "check.lua" ["shape"];
    /// Delete whoever holds it and publish.
    FORCE_UNLOCK = writes "force_unlock.lua" ["shape", "queue"];
    /// Fair lock: take it when free and first in line, or join the queue.
    FAIR_ACQUIRE = writes "fair_acquire.lua" ["mint", "shape", "queue", "handoff"];
    /// Fair lock: a client's batch heartbeat for its waiters; evicts dead ones.
    FAIR_HEARTBEAT = writes "fair_heartbeat.lua" ["mint", "queue", "handoff"];
    /// Fair lock: a waiter leaves the queue (and the next one is told if it was first).
    FAIR_LEAVE = writes "fair_leave.lua" ["mint", "queue", "handoff"];
    /// Quorum lock: raise a node's fencing counter to the acquisition's token.
    QUORUM_FENCE = writes "quorum_fence.lua" ["fence"];
    /// Quorum lock: release on one node, raising its fencing counter to the hold's token.
    QUORUM_RELEASE = writes "quorum_release.lua" ["release", "fence"];
    /// Quorum lock: renew on one node; reports where the lock is free.
    QUORUM_RENEW = writes "quorum_renew.lua" ["each", "extend", "fence"];
    /// Quorum lock: put a hold back on a node of a minority that lost it.
    QUORUM_PUTBACK = writes "quorum_putback.lua" ["each", "fence"];
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
    /// Semaphore: take n permits if that many are available.
    SEMAPHORE_ACQUIRE = writes "semaphore_acquire.lua" [];
    /// Semaphore: add n permits (a release) and publish the new count.
    SEMAPHORE_ADD = writes "semaphore_add.lua" [];
    /// Semaphore: create it with n permits if it does not exist.
    SEMAPHORE_SET = writes "semaphore_set.lua" [];
    /// Semaphore: take every available permit.
    SEMAPHORE_DRAIN = writes "semaphore_drain.lua" [];
    /// Permit-expirable semaphore: give back expired permits, then take one under an id.
    PERMITS_ACQUIRE = writes "permits_acquire.lua" ["permits", "reclaim"];
    /// Permit-expirable semaphore: give back one permit by its id, and publish the new count.
    PERMITS_RELEASE = writes "permits_release.lua" ["permits", "reclaim"];
    /// Permit-expirable semaphore: a client's batch renewal of its permits' leases.
    PERMITS_RENEW = writes "permits_renew.lua" ["permits"];
    /// Permit-expirable semaphore: give back expired permits, then count available and held.
    PERMITS_COUNT = writes "permits_count.lua" ["permits", "reclaim"];
    /// Count-down latch: set the count if the latch has none.
    LATCH_SET = writes "latch_set.lua" [];
    /// Count-down latch: one count down; open it (and publish) at 0.
    LATCH_COUNT_DOWN = writes "latch_count_down.lua" [];
    /// Count-down latch: delete it (it is then open) and publish.
    LATCH_DELETE = writes "latch_delete.lua" [];
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_script_documents_its_keys_argv_and_returns() {
        for s in super::all() {
            assert!(
                s.lua.contains("KEYS[1]") || s.lua.contains("KEYS     "),
                "{}",
                s.name
            );
            assert!(s.lua.contains("ARGV[1]"), "{}", s.name);
            assert!(s.lua.contains("Returns"), "{}", s.name);
            assert_eq!(s.sha1.len(), 40);
        }
    }
}
