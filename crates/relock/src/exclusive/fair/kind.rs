//! The fair lock's holds ([`HoldKind`]): fields of the lock's hash like a plain lock's,
//! released by `fair_release.lua`, which hands the lock to the first in line.

use crate::exclusive::channel::LOCK_CHANNEL;
use crate::exclusive::fair::line;
use crate::exclusive::fair::line::QueueKeys;
use crate::exclusive::hash_field_holds;
use crate::hold::kind::{CallContext, HoldKind, LockKeys, ScriptCall};
use crate::hold::wake::Format;

/// The fair lock's holds: fields of the lock's hash like a plain lock's (renewed with them),
/// released by `fair_release.lua`, which hands the lock to the first in line.
#[derive(Debug)]
pub(crate) struct Fair;

/// The fair lock's [`HoldKind`].
pub(crate) static FAIR: Fair = Fair;

impl HoldKind for Fair {
    fn label(&self) -> &'static str {
        "fair"
    }

    fn release(&self, keys: &LockKeys, field: &str, all: bool, ctx: &CallContext) -> ScriptCall {
        // It may hand the lock on, minting the next holder's token: the whole queue group.
        ScriptCall {
            script: &line::FAIR_RELEASE,
            keys: QueueKeys::of(&keys.lock).group(keys).to_vec(),
            args: vec![
                field.to_string(),
                hash_field_holds::release_mode(all).into(),
                ctx.publish.into(),
                ctx.grace_ms.to_string(),
                keys.channel.clone(),
                keys.wake.clone(),
            ],
            coalesce: None,
        }
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
}
