//! [`Election`], the handle: its lock, record and channel, the current leader, and a leader's
//! value stated on the record.

use std::sync::Arc;

use crate::client::handle::Client;
use crate::client::inner::Inner;
use crate::coordination::election::record::{
    names, read_snapshot, Leader, Snapshot, ELECTION_BEGIN, ELECTION_LEADER,
};
use crate::error::Result;
use crate::exclusive::lock::Lock;
use crate::hold::guard::LockGuard;

/// An election: clients campaign to lead, one leads at a time, each leadership has a term (a
/// fencing token, strictly increasing across leaders) and a value others can read and observe.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
/// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
/// # let client = relock::Client::connect(&url).await?;
/// let election = client.election("scheduler:doc");
/// let leader = election.campaign("10.0.0.7:8080").await?;   // waits until this client leads
/// println!("leading in term {}", leader.term());           // send it with every write
/// let now = election.leader().await?.expect("a leader");
/// assert_eq!((now.term, now.value.as_str()), (leader.term(), "10.0.0.7:8080"));
/// tokio::select! {
///     _ = leader.lost() => eprintln!("leadership lost: stop leading"),
///     _ = lead() => leader.resign().await?,                // the next standby leads at once
/// }
/// # client.shutdown().await; Ok(()) }
/// # async fn lead() {}
/// ```
///
/// - **Standbys** wait in [`campaign`](Election::campaign), in the fair lock's line: a
///   resignation (or a dropped [`Leadership`](crate::Leadership)) hands leadership to the
///   first of them within one message; a crashed leader is replaced when its lease ends (the
///   watchdog lease, 30 s by default) plus the standby's wake-up.
/// - **Loss.** [`Leadership::lost`](crate::Leadership::lost) fires when the lease could not be
///   renewed in time, the lock was deleted or force-unlocked, or the server lost its data; from
///   then on this client must stop acting as leader. A resource that checks the term rejects a
///   deposed leader.
/// - Works on one server, a Cluster and Sentinel. Not on a [`QuorumClient`](crate::QuorumClient):
///   the quorum has no fair lock (its line would need a majority of its own).
#[derive(Debug, Clone)]
pub struct Election {
    pub(super) inner: Arc<Inner>,
    pub(super) lock: Lock,
    pub(super) record: Arc<str>,
    pub(super) channel: Arc<str>,
}

impl Client {
    /// The election named `name` (see [`Election`]). Its lock is the fair lock `name` (with the
    /// client's key prefix). Cheap: nothing is sent until it is used.
    pub fn election(&self, name: impl Into<String>) -> Election {
        let lock = self.fair_lock(name);
        let (record, channel) = names(lock.name());
        Election {
            inner: self.inner.clone(),
            lock,
            record: record.into(),
            channel: channel.into(),
        }
    }
}

impl Election {
    /// The election's name (its lock's key).
    pub fn name(&self) -> &str {
        self.lock.name()
    }

    /// Runs `election_begin.lua` for `guard`'s hold: true if recorded.
    pub(super) async fn state(&self, guard: &LockGuard, value: &str, kind: &str) -> Result<bool> {
        let kept = ELECTION_BEGIN
            .run::<i64>(
                self.inner.conn(),
                vec![self.lock.name().to_string(), self.record.to_string()],
                vec![
                    guard.owner().to_string(),
                    guard.fencing_token().to_string(),
                    value.to_string(),
                    self.inner.publish_cmd().to_string(),
                    self.channel.to_string(),
                    kind.to_string(),
                    self.inner.settings().watchdog_lease.as_millis().to_string(),
                ],
            )
            .await
            .map_err(|e| self.inner.error("election", self.lock.name(), e))?;
        Ok(kept == 1)
    }

    /// The current leader (one that has stated its value), or `None`.
    ///
    /// # Errors
    /// Connection errors; [`Error::WrongType`](crate::Error::WrongType) if the election's keys
    /// hold data of another type.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn leader(&self) -> Result<Option<Leader>> {
        Ok(self.read().await?.leader)
    }

    pub(super) async fn read(&self) -> Result<Snapshot> {
        self.inner.check_running()?;
        let r: Vec<String> = ELECTION_LEADER
            .run_read_only(
                self.inner.conn(),
                vec![self.lock.name().to_string(), self.record.to_string()],
                vec![],
            )
            .await
            .map_err(|e| self.inner.error("election", self.lock.name(), e))?;
        Ok(read_snapshot(&r))
    }
}
