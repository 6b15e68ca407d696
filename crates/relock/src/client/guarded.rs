//! The one-server backend's guarded batch (`hold::guarded`): one script on the lock's server
//! that checks the hold's own field (and a read hold's timeout key) and runs the batch.

use std::sync::Arc;

use fred::types::Value;

use crate::client::inner::Inner;
use crate::client::scripts;
use crate::error::{Error, Result};
use crate::hold::commands::Commands;
use crate::hold::holds::Hold;

scripts::scripts! {
    /// A batch of commands run only while a hold is on its lock.
    GUARDED = writes "guarded.lua" [];
    /// The same, flagged no-writes: a batch that only reads.
    GUARDED_READ = read_only "guarded.lua" [];
}

/// Runs `commands` under `hold`'s check; their replies in order, or `LockLost` if the hold
/// was not there when the script ran (the hold is then marked lost).
pub(crate) async fn run(
    inner: Arc<Inner>,
    hold: Arc<Hold>,
    commands: Arc<Commands>,
    read: bool,
) -> Result<Vec<Value>> {
    let keys = &hold.keys;
    let lease_keys = keys.kind.lease_keys(keys, &hold.field);
    let r = send(&inner, lease_keys, &hold.field, &commands, read).await;
    if matches!(r, Err(Error::LockLost { .. })) {
        hold.mark_lost(
            "a guarded write or read found the hold gone (expired, deleted or force-unlocked)",
        );
    }
    r
}

/// Runs `commands` only while the owner field `field` is on the lock hash `lease_keys[0]` (and
/// every other lease key exists).
pub(crate) async fn send(
    inner: &Inner,
    mut lease_keys: Vec<String>,
    field: &str,
    commands: &Commands,
    read: bool,
) -> Result<Vec<Value>> {
    // Work in flight, which shutdown waits for (its script, and the body after NOSCRIPT)
    // before it releases the holds and closes the connections; taken before the running
    // check, so that a shutdown that begins after the check waits for it. After shutdown
    // began nothing is sent: `Shutdown`, not the unknown outcome a closed pool's error reads
    // as.
    let _in_flight = inner.shared.tracker.token();
    inner.check_running()?;
    let lock = lease_keys[0].clone();
    let others = lease_keys.len().saturating_sub(1);
    lease_keys.extend(commands.distinct_keys());
    let exclusive = if read { "0" } else { "1" };
    let args = vec![field.to_string(), others.to_string(), exclusive.to_string()];
    let operation = if read {
        "guarded read"
    } else {
        "guarded write"
    };
    let script = if read { &GUARDED_READ } else { &GUARDED };
    let reply: Value = script
        .run_with_words(inner.pool.next(), lease_keys, args, &commands.words(), read)
        .await
        .map_err(|e| {
            use fred::error::ErrorKind;
            match e.kind() {
                // The connection's: the batch may have run (a write's outcome is unknown).
                ErrorKind::Timeout | ErrorKind::IO | ErrorKind::Canceled => {
                    let e = inner.error(operation, &lock, e);
                    if read {
                        e
                    } else {
                        e.unconfirmed(operation, inner.server())
                    }
                }
                // A command of the batch failed (a wrong type, a refused permission): the
                // server's words, not a verdict on the lock's key.
                _ => Error::Redis {
                    operation,
                    server: inner.server(),
                    source: e,
                },
            }
        })?;
    read_reply(reply, lock, |what| unexpected(inner, operation, what))
}

/// Reads `guarded.lua`'s reply for the lock `lock`: `[1, replies…]` ran (the replies, in
/// order), `[0]` the hold is gone (`LockLost`), `[2]` the field holds the lock for reading (a
/// write refused); any other reply is `unexpected`, told what is wrong with it.
pub(super) fn read_reply(
    reply: Value,
    lock: String,
    unexpected: impl FnOnce(&str) -> Error,
) -> Result<Vec<Value>> {
    let Value::Array(mut parts) = reply else {
        return Err(unexpected("not an array"));
    };
    match parts.first().and_then(Value::as_i64) {
        Some(1) => {
            parts.remove(0);
            Ok(parts)
        }
        Some(0) => Err(Error::LockLost { name: lock }),
        Some(2) => Err(Error::invalid(
            "owner",
            format!(
                "`{lock}` is held by this hold for reading (or the field is no holder's): a guarded write needs an exclusive hold"
            ),
        )),
        _ => Err(unexpected("no status first")),
    }
}

fn unexpected(inner: &Inner, operation: &'static str, what: &str) -> Error {
    Error::Redis {
        operation,
        server: inner.server(),
        source: fred::error::Error::new(
            fred::error::ErrorKind::Protocol,
            format!("unexpected reply to a guarded batch: {what}"),
        ),
    }
}
