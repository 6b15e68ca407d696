//! How scripts are declared (`scripts!`, in the module that owns them) and called: EVALSHA,
//! and EVAL once on NOSCRIPT (which also puts the script back into the server's cache). The
//! scripts of the lock layout that the shared code sends are declared in `lock_scripts`; a
//! kind declares its own.

use std::future::Future;

use fred::bytes::Bytes;
use fred::clients::Client as FredClient;
use fred::interfaces::ClientLike;
use fred::types::{ClusterHash, CustomCommand};
use fred::types::{FromValue, Value};

pub(crate) use crate::script::Script;

/// A batch script's reply, one answer per item it was sent (renewals, heartbeats), or what
/// is wrong with a reply of another length.
pub(crate) fn one_each(reply: Vec<i64>, items: usize) -> Result<Vec<i64>, String> {
    if reply.len() == items {
        Ok(reply)
    } else {
        Err(format!("unexpected reply of {} items", reply.len()))
    }
}

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

    /// [`run`](Self::run), telling `tracker` when each command is with fred, and sending the
    /// EVAL after NOSCRIPT only if the tracker allows it (otherwise it answers the NOSCRIPT
    /// error: the script did not run).
    pub(crate) async fn run_tracked<R: FromValue>(
        &self,
        client: &FredClient,
        keys: Vec<String>,
        args: Vec<String>,
        tracker: &dyn Tracker,
    ) -> Result<R, fred::error::Error> {
        self.send_as(client, keys, args, &[], ["EVALSHA", "EVAL"], Some(tracker))
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

    /// [`run`](Self::run) (or, `read_only`, [`run_read_only`](Self::run_read_only)) with
    /// `words` after `args`: a caller's own words, binary or not (a guarded batch's
    /// commands), sent as they are.
    pub(crate) async fn run_with_words<R: FromValue>(
        &self,
        client: &FredClient,
        keys: Vec<String>,
        args: Vec<String>,
        words: &[Bytes],
        read_only: bool,
    ) -> Result<R, fred::error::Error> {
        let commands = if read_only {
            ["EVALSHA_RO", "EVAL_RO"]
        } else {
            ["EVALSHA", "EVAL"]
        };
        self.send_as(client, keys, args, words, commands, None)
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
        self.send_as(client, keys, args, &[], commands, None).await
    }

    /// [`send`](Self::send) with `words` after `args`, telling `tracked` (if any) when each
    /// command is with fred.
    async fn send_as<R: FromValue>(
        &self,
        client: &FredClient,
        keys: Vec<String>,
        args: Vec<String>,
        words: &[Bytes],
        [by_sha, by_body]: [&'static str; 2],
        tracked: Option<&dyn Tracker>,
    ) -> Result<R, fred::error::Error> {
        let args = crate::seam::args(self.name, args);
        let hash = keys.first().map_or(ClusterHash::Random, |k| {
            ClusterHash::Custom(fred::util::redis_keyslot(k.as_bytes()))
        });
        // The keys and arguments are copied into one buffer and sent as slices of it, so
        // that cloning the call for the NOSCRIPT fallback only counts references: a value made
        // from a string of its own allocates a shared header when it is first cloned (one
        // allocation per key and argument on every call), where one buffer is shared once.
        let parts = || {
            keys.iter()
                .chain(&args)
                .map(String::as_bytes)
                .chain(words.iter().map(|w| &w[..]))
        };
        let mut joined = Vec::with_capacity(parts().map(<[u8]>::len).sum());
        for part in parts() {
            joined.extend_from_slice(part);
        }
        let joined = Bytes::from(joined);
        let mut call: Vec<Value> = Vec::with_capacity(2 + keys.len() + args.len() + words.len());
        call.push(Value::from(self.sha1.clone()));
        call.push((keys.len() as i64).into());
        let mut at = 0;
        for part in parts() {
            call.push(Value::Bytes(joined.slice(at..at + part.len())));
            at += part.len();
        }
        // Copied: the strings go now, so that a large call (a guarded write's values) is held
        // once while it is sent, not twice.
        drop(keys);
        drop(args);
        let sha = CustomCommand::new_static(by_sha, hash.clone(), false);
        // fred's command future is several KB: boxed, so that every future that awaits a
        // script (and every task or slot that carries one) stays small and cheap to move.
        let first = Box::pin(client.custom(sha, call.clone()));
        let first = match tracked {
            Some(t) => handing(t, first).await,
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
                    Some(t) => handing(t, body).await,
                    None => body.await,
                }
            }
            other => other,
        }
    }
}

/// What a script call sent with [`Script::run_tracked`] tells, and asks, whoever orders other
/// calls after it: that each command it sends is with fred (queued on its connection ahead of
/// whatever is sent there later), and whether it may send the script's body after NOSCRIPT.
pub(crate) trait Tracker: Sync {
    /// Everything the call sent so far is with fred.
    fn handed(&self);
    /// Whether the call may send another command (the body after NOSCRIPT: its first command
    /// did not run).
    fn may_send_more(&self) -> bool;
}

/// Runs `f`, telling `tracker` after its first poll that its command was handed over (fred
/// queues a command on the first poll of its future).
async fn handing<F: Future>(tracker: &dyn Tracker, f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut first = true;
    std::future::poll_fn(|cx| {
        let r = f.as_mut().poll(cx);
        if std::mem::take(&mut first) {
            tracker.handed();
        }
        r
    })
    .await
}

fn is_noscript(e: &fred::error::Error) -> bool {
    e.details().starts_with("NOSCRIPT")
}

/// Declares scripts once, in the module that owns them (a kind declares its own, in its
/// room): for each, its constant in that module's `lua` (the source: the `lua/lib` functions
/// it names, then its own file), its [`Script`] static (named after its file), and a unit
/// test of the module that checks every script it declares. `relock::lua` re-exports every
/// module's `lua`. A new script is one line in its owner's list.
macro_rules! scripts {
    ($( $(#[doc = $doc:literal])* $name:ident = $mode:ident $file:literal [$($lib:literal),*]; )*) => {
        /// The Lua sources of this module's scripts, for inspection, tooling and benchmarks
        /// ([`guide::data_layout`](crate::guide::data_layout) describes their keys,
        /// arguments and replies). Each is the
        /// shared functions it uses (`lua/lib/*.lua`) followed by the script's own file:
        /// Redis scripts cannot include one another, and every function a script defines
        /// costs the server time on each call, so a script carries only what it calls.
        pub(crate) mod lua {
            $( $(#[doc = $doc])* pub const $name: &str = $crate::client::scripts::source!($mode $file $(, $lib)*); )*
        }
        $(
            pub(crate) static $name: std::sync::LazyLock<$crate::script::Script> =
                std::sync::LazyLock::new(|| {
                    $crate::script::Script::new($file.trim_end_matches(".lua"), lua::$name)
                });
        )*
        /// Every script declared here documents its keys, arguments and replies.
        #[cfg(test)]
        #[test]
        fn every_script_documents_its_keys_argv_and_returns() {
            for s in [$(&*$name),*] {
                $crate::script::assert_documented(s);
            }
        }
    };
}
pub(crate) use scripts;

/// A script's source: the shared functions, then its file; a read-only one starts with the
/// `no-writes` flag, which must be its first line.
macro_rules! source {
    (writes $file:literal $(, $lib:literal)*) => {
        concat!(
            $(include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/lua/lib/", $lib, ".lua")),)*
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/lua/", $file))
        )
    };
    (read_only $file:literal $(, $lib:literal)*) => {
        concat!("#!lua flags=no-writes\n", $crate::client::scripts::source!(writes $file $(, $lib)*))
    };
}
pub(crate) use source;
