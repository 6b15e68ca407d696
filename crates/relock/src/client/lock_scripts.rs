//! The scripts of the lock layout (Redisson's lock hash) that the shared code sends: acquire,
//! re-enter, release, batch, renew, status, check, force-unlock. A kind declares its own
//! scripts in its own file.

use crate::client::scripts::scripts;

scripts! {
    /// Take a fresh hold, or report the holder's PTTL.
    ACQUIRE = writes "acquire.lua" ["mint", "shape", "acquire"];
    /// One more count on an existing hold; never creates one.
    REENTER = writes "reenter.lua" ["extend"];
    /// Drop one count of a plain lock's hold (or the whole hold) and publish the release.
    RELEASE = writes "release.lua" ["release"];
    /// The watchdog's batch renewal.
    RENEW = writes "renew.lua" ["each", "extend"];
    /// One consistent read of a lock: holders, lease, counter, fair line (reads only).
    STATUS = read_only "status.lua" ["shape"];
    /// Whether a lock is held and one hold's count, after checking that the key is a lock (reads
    /// only).
    CHECK = read_only "check.lua" ["shape"];
    /// Delete whoever holds it and publish.
    FORCE_UNLOCK = writes "force_unlock.lua" ["shape"];
}
