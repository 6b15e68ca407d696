//! The quorum lock's holds ([`HoldKind`]): on each node a field of Redisson's `RLock` hash,
//! released and renewed by the quorum's own scripts, woken by any node's release message.

use crate::hold::kind::{CallContext, HoldKind, LockKeys, ScriptCall};
use crate::hold::wake::Format;
use crate::quorum::channel::QUORUM_CHANNEL;
use crate::quorum::scripts;

/// A quorum lock's holds: on each node a field of Redisson's `RLock` hash, with the node's
/// fencing counter raised to the hold's token on release. The quorum's own backend
/// (`quorum::inner_backend`) releases and renews them on every node with the hold's token; the
/// calls below are the same scripts for one node without a token (no raise), for a caller
/// that has only the keys and the field.
#[derive(Debug)]
pub(crate) struct Quorum;

/// The quorum lock's [`HoldKind`].
pub(crate) static QUORUM: Quorum = Quorum;

impl HoldKind for Quorum {
    fn label(&self) -> &'static str {
        "quorum"
    }

    fn release(&self, keys: &LockKeys, field: &str, all: bool, ctx: &CallContext) -> ScriptCall {
        ScriptCall {
            script: &scripts::QUORUM_RELEASE,
            keys: vec![keys.lock.clone(), keys.token.clone()],
            args: vec![
                field.to_string(),
                if all { "all" } else { "1" }.into(),
                ctx.publish.into(),
                keys.channel.clone(),
                "0".into(),
                ctx.grace_ms.to_string(),
            ],
            coalesce: None,
        }
    }

    fn renewal_group(&self) -> &'static str {
        "quorum holds"
    }

    fn renew(&self, batch: &[(&LockKeys, &str)], lease_ms: u64, ctx: &CallContext) -> ScriptCall {
        ScriptCall {
            script: &scripts::QUORUM_RENEW,
            keys: batch
                .iter()
                .flat_map(|(k, _)| [k.lock.clone(), k.token.clone()])
                .collect(),
            args: [lease_ms.to_string(), ctx.grace_ms.to_string()]
                .into_iter()
                .chain(batch.iter().flat_map(|(_, f)| [f.to_string(), "0".into()]))
                .collect(),
            coalesce: None,
        }
    }

    fn wake(&self) -> Format {
        QUORUM_CHANNEL
    }
}
