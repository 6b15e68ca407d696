//! The quorum lock's scripts: its vote's fence, its release and renewal on one node, and the
//! put-back of a hold on a node of a minority that lost it.

use crate::client::scripts;

scripts::scripts! {
    /// Quorum lock: raise a node's fencing counter to the acquisition's token.
    QUORUM_FENCE = writes "quorum_fence.lua" ["fence"];
    /// Quorum lock: release on one node, raising its fencing counter to the hold's token.
    QUORUM_RELEASE = writes "quorum_release.lua" ["release", "fence"];
    /// Quorum lock: renew on one node; reports where the lock is free.
    QUORUM_RENEW = writes "quorum_renew.lua" ["each", "extend", "fence"];
    /// Quorum lock: put a hold back on a node of a minority that lost it.
    QUORUM_PUTBACK = writes "quorum_putback.lua" ["each", "fence"];
}
