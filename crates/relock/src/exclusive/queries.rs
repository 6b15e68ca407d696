//! What every exclusive kind answers the same way, so that a kind's file only calls it: its
//! keys (or its name's error), whether the lock is held, its force-unlock, and where its data
//! lives (`DistributedLock::resource`).

use std::sync::Arc;

use crate::client::inner::Inner;
use crate::client::lock_scripts;
use crate::client::redact;
use crate::error::Result;
use crate::hold::kind::{CallContext, LockKeys, ScriptCall};

/// A handle's keys, built when the handle was made (`None` for a bad name): the error of a bad
/// name is made again by `build`, so that every operation reports it.
pub(crate) fn keys(
    built: &Option<Arc<LockKeys>>,
    build: impl FnOnce() -> Result<LockKeys>,
) -> Result<Arc<LockKeys>> {
    match built {
        Some(k) => Ok(k.clone()),
        None => build().map(Arc::new),
    }
}

/// Whether anyone holds the lock (its hash exists, after checking that it is a lock).
pub(crate) async fn is_locked(inner: &Inner, keys: &LockKeys) -> Result<bool> {
    Ok(inner.check(&keys.lock, String::new()).await?.0)
}

/// Runs the kind's force-unlock `call` (which deletes the lock whoever holds it, never a key
/// that is not a lock, and wakes its waiters) and marks this client's holds of the lock lost
/// at once. Whether there was a lock. `keys` is the handle's keys or its name's error,
/// reported after the running check (as `lock()` reports them).
pub(crate) async fn force_unlock(
    inner: &Inner,
    keys: Result<Arc<LockKeys>>,
    call: impl FnOnce(&LockKeys, &CallContext) -> ScriptCall,
) -> Result<bool> {
    inner.check_running()?;
    let keys = keys?;
    let call = call(&keys, &inner.call_context());
    let r: i64 = call
        .script
        .run(inner.conn(), call.keys, call.args)
        .await
        .map_err(|e| inner.error("force_unlock", &keys.lock, e))?;
    for h in inner.shared().holds.of_lock(&keys.lock) {
        h.mark_lost("force-unlocked by this client");
    }
    Ok(r == 1)
}

/// `force_unlock.lua`'s call: it publishes `0` on the release channel (wakes one waiter per
/// client), or `1` when `wake_all` (a read-write lock: every waiter).
pub(crate) fn delete_and_publish(keys: &LockKeys, ctx: &CallContext, wake_all: bool) -> ScriptCall {
    ScriptCall {
        script: &lock_scripts::FORCE_UNLOCK,
        keys: vec![keys.lock.clone()],
        args: vec![
            ctx.publish.into(),
            if wake_all { "1" } else { "0" }.into(),
            keys.channel.clone(),
        ],
        coalesce: None,
    }
}

/// Where the lock `name`'s data lives: the server (credentials never shown) and the name.
pub(crate) fn resource(inner: &Inner, name: &str) -> String {
    format!("{} {name}", redact::identity(&inner.settings().url))
}
