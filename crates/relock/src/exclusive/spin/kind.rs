//! The spin lock's holds ([`HoldKind`]): fields of the lock's hash like a plain lock's (renewed
//! with them), released by `spin_release.lua`, which publishes nothing.

use crate::client::scripts;
use crate::exclusive::channel::LOCK_CHANNEL;
use crate::exclusive::hash_field_holds;
use crate::hold::kind::{CallContext, HoldKind, LockKeys, ScriptCall};
use crate::hold::wake::Format;

scripts::scripts! {
    /// Drop one count of a spin lock's hold (or the whole hold); publishes nothing.
    SPIN_RELEASE = writes "spin_release.lua" ["release"];
}

/// The spin lock's holds: fields of the lock's hash like a plain lock's, released without a
/// message.
#[derive(Debug)]
pub(crate) struct Spin;

/// The spin lock's [`HoldKind`].
pub(crate) static SPIN: Spin = Spin;

impl HoldKind for Spin {
    fn label(&self) -> &'static str {
        "spin"
    }

    fn release(&self, keys: &LockKeys, field: &str, all: bool, _: &CallContext) -> ScriptCall {
        ScriptCall {
            script: &SPIN_RELEASE,
            keys: vec![keys.lock.clone()],
            args: vec![
                field.to_string(),
                hash_field_holds::release_mode(all).into(),
            ],
            // The client's batch script publishes each release it runs.
            coalesce: None,
        }
    }

    fn renewal_group(&self) -> &'static str {
        hash_field_holds::LOCK_HOLDS
    }

    fn renew(&self, batch: &[(&LockKeys, &str)], lease_ms: u64, _: &CallContext) -> ScriptCall {
        hash_field_holds::renew(batch, lease_ms)
    }

    /// The lock channel's: nothing of the spin lock listens there, but a force-unlock of the
    /// name announces itself there to plain waiters and holders.
    fn wake(&self) -> Format {
        LOCK_CHANNEL
    }
}
