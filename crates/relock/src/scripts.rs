//! The embedded Lua scripts and how they are called: EVALSHA, and EVAL once on NOSCRIPT
//! (which also puts the script back into the server's cache).

use std::sync::LazyLock;

use fred::clients::Client as FredClient;
use fred::interfaces::ClientLike;
use fred::types::{ClusterHash, CustomCommand};
use fred::types::{FromValue, Value};

/// One embedded script.
#[derive(Debug)]
pub(crate) struct Script {
    pub(crate) name: &'static str,
    lua: std::borrow::Cow<'static, str>,
    sha1: String,
}

impl Script {
    fn new(name: &'static str, lua: &'static str) -> Self {
        #[cfg(feature = "chaos-mutants")]
        let lua = crate::mutant::lua(name, lua);
        #[cfg(not(feature = "chaos-mutants"))]
        let lua = std::borrow::Cow::Borrowed(lua);
        let sha1 = fred::util::sha1_hash(&lua);
        Script { name, lua, sha1 }
    }

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
        call: &crate::in_flight::Call,
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
        tracked: Option<&crate::in_flight::Call>,
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

    #[cfg(test)]
    pub(crate) fn sha1(&self) -> &str {
        &self.sha1
    }
}

fn is_noscript(e: &fred::error::Error) -> bool {
    e.details().starts_with("NOSCRIPT")
}

pub(crate) static ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::new("acquire", crate::lua::ACQUIRE));
pub(crate) static REENTER: LazyLock<Script> =
    LazyLock::new(|| Script::new("reenter", crate::lua::REENTER));
pub(crate) static RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new("release", crate::lua::RELEASE));
pub(crate) static FAIR_RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new("fair_release", crate::lua::FAIR_RELEASE));
pub(crate) static BATCH: LazyLock<Script> =
    LazyLock::new(|| Script::new("batch", crate::lua::BATCH));
pub(crate) static RENEW: LazyLock<Script> =
    LazyLock::new(|| Script::new("renew", crate::lua::RENEW));
pub(crate) static CHECK: LazyLock<Script> =
    LazyLock::new(|| Script::new("check", crate::lua::CHECK));
pub(crate) static FORCE_UNLOCK: LazyLock<Script> =
    LazyLock::new(|| Script::new("force_unlock", crate::lua::FORCE_UNLOCK));
pub(crate) static STATUS: LazyLock<Script> =
    LazyLock::new(|| Script::new("status", crate::lua::STATUS));
pub(crate) static FAIR_ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::new("fair_acquire", crate::lua::FAIR_ACQUIRE));
pub(crate) static FAIR_HEARTBEAT: LazyLock<Script> =
    LazyLock::new(|| Script::new("fair_heartbeat", crate::lua::FAIR_HEARTBEAT));
pub(crate) static FAIR_LEAVE: LazyLock<Script> =
    LazyLock::new(|| Script::new("fair_leave", crate::lua::FAIR_LEAVE));
pub(crate) static QUORUM_FENCE: LazyLock<Script> =
    LazyLock::new(|| Script::new("quorum_fence", crate::lua::QUORUM_FENCE));
pub(crate) static QUORUM_RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new("quorum_release", crate::lua::QUORUM_RELEASE));
pub(crate) static QUORUM_RENEW: LazyLock<Script> =
    LazyLock::new(|| Script::new("quorum_renew", crate::lua::QUORUM_RENEW));
pub(crate) static QUORUM_PUTBACK: LazyLock<Script> =
    LazyLock::new(|| Script::new("quorum_putback", crate::lua::QUORUM_PUTBACK));
pub(crate) static RW_READ_ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::new("rw_read_acquire", crate::lua::RW_READ_ACQUIRE));
pub(crate) static RW_WRITE_ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::new("rw_write_acquire", crate::lua::RW_WRITE_ACQUIRE));
pub(crate) static RW_READ_RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new("rw_read_release", crate::lua::RW_READ_RELEASE));
pub(crate) static RW_WRITE_RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new("rw_write_release", crate::lua::RW_WRITE_RELEASE));
pub(crate) static RW_READ_RENEW: LazyLock<Script> =
    LazyLock::new(|| Script::new("rw_read_renew", crate::lua::RW_READ_RENEW));
pub(crate) static SEMAPHORE_ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::new("semaphore_acquire", crate::lua::SEMAPHORE_ACQUIRE));
pub(crate) static SEMAPHORE_ADD: LazyLock<Script> =
    LazyLock::new(|| Script::new("semaphore_add", crate::lua::SEMAPHORE_ADD));
pub(crate) static SEMAPHORE_SET: LazyLock<Script> =
    LazyLock::new(|| Script::new("semaphore_set", crate::lua::SEMAPHORE_SET));
pub(crate) static SEMAPHORE_DRAIN: LazyLock<Script> =
    LazyLock::new(|| Script::new("semaphore_drain", crate::lua::SEMAPHORE_DRAIN));
pub(crate) static PERMITS_ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::new("permits_acquire", crate::lua::PERMITS_ACQUIRE));
pub(crate) static PERMITS_RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new("permits_release", crate::lua::PERMITS_RELEASE));
pub(crate) static PERMITS_RENEW: LazyLock<Script> =
    LazyLock::new(|| Script::new("permits_renew", crate::lua::PERMITS_RENEW));
pub(crate) static PERMITS_COUNT: LazyLock<Script> =
    LazyLock::new(|| Script::new("permits_count", crate::lua::PERMITS_COUNT));
pub(crate) static LATCH_SET: LazyLock<Script> =
    LazyLock::new(|| Script::new("latch_set", crate::lua::LATCH_SET));
pub(crate) static LATCH_COUNT_DOWN: LazyLock<Script> =
    LazyLock::new(|| Script::new("latch_count_down", crate::lua::LATCH_COUNT_DOWN));
pub(crate) static LATCH_DELETE: LazyLock<Script> =
    LazyLock::new(|| Script::new("latch_delete", crate::lua::LATCH_DELETE));

#[cfg(test)]
mod tests {
    #[test]
    fn every_script_documents_its_keys_argv_and_returns() {
        for s in [
            &*super::ACQUIRE,
            &*super::REENTER,
            &*super::RELEASE,
            &*super::FAIR_RELEASE,
            &*super::BATCH,
            &*super::RENEW,
            &*super::FORCE_UNLOCK,
            &*super::STATUS,
            &*super::CHECK,
            &*super::FAIR_ACQUIRE,
            &*super::FAIR_HEARTBEAT,
            &*super::FAIR_LEAVE,
            &*super::QUORUM_FENCE,
            &*super::QUORUM_RELEASE,
            &*super::QUORUM_RENEW,
            &*super::QUORUM_PUTBACK,
            &*super::SEMAPHORE_ACQUIRE,
            &*super::SEMAPHORE_ADD,
            &*super::SEMAPHORE_SET,
            &*super::SEMAPHORE_DRAIN,
            &*super::PERMITS_ACQUIRE,
            &*super::PERMITS_RELEASE,
            &*super::PERMITS_RENEW,
            &*super::PERMITS_COUNT,
            &*super::LATCH_SET,
            &*super::LATCH_COUNT_DOWN,
            &*super::LATCH_DELETE,
            &*super::RW_READ_ACQUIRE,
            &*super::RW_WRITE_ACQUIRE,
            &*super::RW_READ_RELEASE,
            &*super::RW_WRITE_RELEASE,
            &*super::RW_READ_RENEW,
        ] {
            assert!(
                s.lua.contains("KEYS[1]") || s.lua.contains("KEYS     "),
                "{}",
                s.name
            );
            assert!(s.lua.contains("ARGV[1]"), "{}", s.name);
            assert!(s.lua.contains("Returns"), "{}", s.name);
            assert_eq!(s.sha1().len(), 40);
        }
    }
}
