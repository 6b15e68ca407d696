//! The plain lock's acquires and releases, coalesced: `batch.lua` runs many of them in one
//! call when the client's batcher finds several waiting for a connection
//! ([`Coalescing`] says what the batcher does with it).

use fred::error::{Error as FredError, ErrorKind};
use fred::types::Value;

use crate::client::scripts;
use crate::hold::kind::{Coalescible, Coalescing};

scripts::scripts! {
    /// Several plain acquires and releases in one call (coalesced by the client).
    BATCH = writes "batch.lua" ["mint", "shape", "acquire", "release"];
}

/// `batch.lua`, as the batcher runs it.
pub(crate) static PLAIN_BATCH: Coalescing = Coalescing {
    script: &BATCH,
    part,
};

/// `acquire.lua`'s call in `batch.lua`: its lock and counter, its lease, field and counter TTL.
pub(crate) const ACQUIRE: Coalescible = Coalescible {
    via: &PLAIN_BATCH,
    tag: "a",
};

/// `release.lua`'s call in `batch.lua`: its lock, its field, mode, publish command and channel.
pub(crate) const RELEASE: Coalescible = Coalescible {
    via: &PLAIN_BATCH,
    tag: "r",
};

/// One operation's part of `batch.lua`'s reply, as its own script would have answered.
pub(crate) fn part(result: Value) -> Result<Value, FredError> {
    let Value::Array(mut parts) = result else {
        return Err(FredError::new(
            ErrorKind::Protocol,
            "batch.lua: not an array",
        ));
    };
    let tag = parts
        .first()
        .and_then(|v| v.as_str().map(|s| s.to_string()));
    match (tag.as_deref(), parts.len()) {
        // An acquire: {1, token} or {0, pttl}.
        (Some("ok"), 3) => Ok(Value::Array(parts.split_off(1))),
        // A release: 1, 0, or -1 for release.lua's nil.
        (Some("ok"), 2) => Ok(match parts.pop() {
            Some(Value::Integer(-1)) => Value::Null,
            Some(v) => v,
            None => Value::Null,
        }),
        (Some("err"), 2) => {
            let msg = parts
                .pop()
                .and_then(|v| v.as_str().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(FredError::new(ErrorKind::Unknown, msg))
        }
        _ => Err(FredError::new(
            ErrorKind::Protocol,
            format!("batch.lua: unexpected reply {parts:?}"),
        )),
    }
}
