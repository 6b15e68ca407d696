//! An election's record on the server (`relock_election:{name}`, a hash beside its lock, and
//! its channel): their names, the election's scripts, what a read of the record says
//! ([`Leader`], `Snapshot`), and what a leadership keeps of its part in it (`Led`), with its
//! resignation there.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::client::inner::Inner;
use crate::client::scripts;
use crate::error::Result;
use crate::hold::holds::Hold;

scripts::scripts! {
    /// A leader states its value (at the start of its term, or a proclaim).
    ELECTION_BEGIN = writes "election_begin.lua" [];
    /// A leader's record renewed with its lock.
    ELECTION_RENEW = writes "election_renew.lua" [];
    /// A leader gives up its term.
    ELECTION_RESIGN = writes "election_resign.lua" [];
    /// The current leader.
    ELECTION_LEADER = read_only "election_leader.lua" [];
}

/// The leader of an election, as read from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Leader {
    /// Its term: the fencing token of its hold, higher than every earlier leader's.
    pub term: u64,
    /// The value it stated (campaign or proclaim).
    pub value: String,
    /// Its hold's owner field (`<client id>:<n>`).
    pub owner: String,
    /// How long its lease has left on the server (renewed while it leads).
    pub lease_left: Option<Duration>,
}

/// The record's key and the channel of the election whose lock is `lock`, in the lock's slot
/// (Redisson's naming: a hash tag of the name unless it has one).
pub(super) fn names(lock: &str) -> (String, String) {
    let tagged = |prefix: &str| {
        if lock.contains('{') {
            format!("{prefix}:{lock}")
        } else {
            format!("{prefix}:{{{lock}}}")
        }
    };
    (tagged("relock_election"), tagged("relock_election_channel"))
}

/// What one read of the record says.
#[derive(Debug)]
pub(crate) struct Snapshot {
    pub(crate) leader: Option<Leader>,
    /// The last term that ended by a resignation.
    pub(crate) resigned: Option<u64>,
}

/// Reads `election_leader.lua`'s reply, `[1 or 0 (a leader or none), term, owner, value, pttl,
/// ended term, how it ended]`, of any length: a part that is missing or not a number reads as
/// no leader, term 0, no lease or no resignation.
pub(crate) fn read_snapshot(r: &[String]) -> Snapshot {
    let field = |i: usize| r.get(i).map(String::as_str).unwrap_or("");
    let pttl = field(4).parse::<i64>().unwrap_or(-2);
    let leader = (field(0) == "1").then(|| Leader {
        term: field(1).parse().unwrap_or(0),
        owner: field(2).to_string(),
        value: field(3).to_string(),
        lease_left: u64::try_from(pttl).ok().map(Duration::from_millis),
    });
    Snapshot {
        leader,
        resigned: (field(6) == "resigned")
            .then(|| field(5).parse().ok())
            .flatten(),
    }
}

/// What this client's watchdog round and shutdown need of a leadership. The registry tracks
/// the leadership's `Arc` weakly, so that a leadership that was let go leaves it at once: a
/// resignation works on a copy (holding the `Arc` would keep it renewed, and resign it again
/// at shutdown while its own resignation runs).
#[derive(Debug, Clone)]
pub(super) struct Led {
    pub(super) lock: String,
    pub(super) record: String,
    pub(super) channel: String,
    pub(super) field: String,
    pub(super) term: u64,
    /// The leadership's hold: lost when its record is found gone while it holds the lock.
    pub(super) hold: Arc<Hold>,
    /// Whether the term's record was written and not yet resigned (before, a renewal finding
    /// none is the write still on its way; after, the resignation; neither is a loss).
    pub(super) recorded: Arc<AtomicBool>,
}

impl Led {
    /// The record (or the lock) is no longer this leader's, though its term was recorded:
    /// observers see nobody leading, so the leadership is lost.
    pub(super) fn not_leading(&self, reason: &'static str) {
        if self.recorded.load(Ordering::SeqCst) {
            self.hold.mark_lost(reason);
        }
    }
}

/// `election_resign.lua` for `led`: its term marked resigned, if the record is still its own.
pub(super) async fn resign_record(inner: &Inner, led: &Led) -> Result<()> {
    // From here the record stops being this leader's on purpose: a watchdog round that finds
    // it so before the lock's release is no loss.
    led.recorded.store(false, Ordering::SeqCst);
    ELECTION_RESIGN
        .run::<i64>(
            inner.conn(),
            vec![led.record.clone()],
            vec![
                led.field.clone(),
                led.term.to_string(),
                inner.publish_cmd().to_string(),
                led.channel.clone(),
                // The resignation's mark, for observers that read after it: as long as a
                // leader's lease (nothing of an election outlives that).
                inner.settings().watchdog_lease.as_millis().to_string(),
            ],
        )
        .await
        .map(|_| ())
        .map_err(|e| inner.error("election", &led.lock, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_share_the_locks_slot() {
        assert_eq!(
            names("jobs"),
            (
                "relock_election:{jobs}".to_string(),
                "relock_election_channel:{jobs}".to_string()
            )
        );
        assert_eq!(names("a{b}").0, "relock_election:a{b}");
    }
}
