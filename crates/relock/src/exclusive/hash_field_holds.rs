//! What the exclusive kinds whose holds are one field of a lock's hash (Redisson's layout:
//! plain, fair and write holds) share: their renewal group and call, and the release
//! scripts' mode argument.

use crate::client::lock_scripts;
use crate::hold::kind::{LockKeys, ScriptCall};

/// The renewal group of every hold that is one field of a lock's hash and nothing else (a
/// plain, fair or write hold): `renew.lua` renews any mix of them.
pub(crate) const LOCK_HOLDS: &str = "lock hash";

/// `renew.lua` for holds that are one field of a lock's hash.
pub(crate) fn renew(batch: &[(&LockKeys, &str)], lease_ms: u64) -> ScriptCall {
    ScriptCall {
        script: &lock_scripts::RENEW,
        keys: batch.iter().map(|(k, _)| k.lock.clone()).collect(),
        args: std::iter::once(lease_ms.to_string())
            .chain(batch.iter().map(|(_, f)| f.to_string()))
            .collect(),
        coalesce: None,
    }
}

/// The release scripts' mode argument: the whole hold (`all`) or one count.
pub(crate) fn release_mode(all: bool) -> &'static str {
    if all {
        "all"
    } else {
        "1"
    }
}
