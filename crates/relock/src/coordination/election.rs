//! [`Election`]: leader election on the fair lock (etcd's `Election`, Curator's
//! `LeaderLatch`, on Redis).
//!
//! The leadership is a hold of the fair lock named after the election: candidates wait in its
//! line (first come, first served), a resignation hands it straight to the first of them (the
//! fair lock's direct handoff), the watchdog renews it, and its fencing token is the **term**.
//! Beside the lock, a record (`relock_election:{name}`, a hash) says which hold is the leader
//! and its value; it lives as long as the lock (renewed in the watchdog's round through this
//! kind's client state) and is only ever written by the hold that holds the lock. Changes are
//! published on `relock_election_channel:{name}`; observers re-read the record on each message,
//! after a reconnect, and when the leader's lease would end, so they never miss the last state.

use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::client::handle::{Client, Inner, KindState, Round};
use crate::error::{Error, Result};
use crate::exclusive::channel::LOCK_CHANNEL;
use crate::exclusive::lock::Lock;
use crate::hold::backend::BoxFuture;
use crate::hold::guard::LockGuard;
use crate::hold::wake::{Format, Waiters, Waking};

crate::client::scripts::scripts! {
    /// A leader states its value (at the start of its term, or a proclaim).
    ELECTION_BEGIN = writes "election_begin.lua" [];
    /// A leader's record renewed with its lock.
    ELECTION_RENEW = writes "election_renew.lua" [];
    /// A leader gives up its term.
    ELECTION_RESIGN = writes "election_resign.lua" [];
    /// The current leader.
    ELECTION_LEADER = read_only "election_leader.lua" [];
}

/// The election's channel format: every message (a leader elected or resigned, a value
/// proclaimed) wakes every observer, which reads the record again.
static ELECTION_CHANNEL: Format = Format::new("election", || Arc::new(ElectionChannel));

/// An election's channel: no state.
#[derive(Debug)]
struct ElectionChannel;

impl Waking for ElectionChannel {
    fn deliver(&self, _: &str, waiters: &dyn Waiters) {
        waiters.all(false);
    }
}

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
///   resignation (or a dropped [`Leadership`]) hands leadership to the first of them within one
///   message; a crashed leader is replaced when its lease ends (the watchdog lease, 30 s by
///   default) plus the standby's wake-up.
/// - **Loss.** [`Leadership::lost`] fires when the lease could not be renewed in time, the
///   lock was deleted or force-unlocked, or the server lost its data; from then on this client
///   must stop acting as leader. A resource that checks the term rejects a deposed leader.
/// - Works on one server, a Cluster and Sentinel. Not on a [`QuorumClient`](crate::QuorumClient):
///   the quorum has no fair lock (its line would need a majority of its own).
#[derive(Debug, Clone)]
pub struct Election {
    inner: Arc<Inner>,
    lock: Lock,
    record: Arc<str>,
    channel: Arc<str>,
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

/// A change of an election's leader, as [`Election::observe`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaderEvent {
    /// A leader (a new term). The first event of an observation is the current leader, if any.
    Elected(Leader),
    /// The leader of the same term stated a new value ([`Leadership::proclaim`]).
    ValueChanged(Leader),
    /// The leader of `term` resigned (or was dropped, or its client shut down; in that last
    /// case it is reported as `Expired` if the next leader's record got there first).
    Resigned {
        /// The term that ended.
        term: u64,
    },
    /// The leader of `term` is gone without resigning: its lease ran out (a crash, a
    /// partition), or its lock was deleted or force-unlocked.
    Expired {
        /// The term that ended.
        term: u64,
    },
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

/// The record's key and the channel of the election whose lock is `lock`, in the lock's slot
/// (Redisson's naming: a hash tag of the name unless it has one).
fn names(lock: &str) -> (String, String) {
    let tagged = |prefix: &str| {
        if lock.contains('{') {
            format!("{prefix}:{lock}")
        } else {
            format!("{prefix}:{{{lock}}}")
        }
    };
    (tagged("relock_election"), tagged("relock_election_channel"))
}

impl Election {
    /// The election's name (its lock's key).
    pub fn name(&self) -> &str {
        self.lock.name()
    }

    /// Waits until this client leads, then states `value` as the leader's: the leadership,
    /// with its term. Candidates are served first come, first served.
    ///
    /// # Errors
    /// [`Error::LockLost`] if the leadership was lost before its value was recorded;
    /// [`Error::InvalidArgument`] if this caller already leads the election (in the
    /// leadership's scope, or as its owner: a campaign never re-enters a leadership); a bad
    /// name; connection errors.
    ///
    /// # Cancel safety
    /// As the fair lock's [`lock`](Lock::lock): a campaign dropped while waiting leaves the
    /// line; one dropped after it was granted resigns in the background.
    pub async fn campaign(&self, value: impl Into<String>) -> Result<Leadership> {
        self.not_leading()?;
        let guard = self.lock.lock().await?;
        self.begin(guard, value.into()).await
    }

    /// Leads now if nobody does and nobody waits before this client; `None` otherwise, without
    /// waiting.
    ///
    /// # Errors
    /// As [`campaign`](Election::campaign).
    ///
    /// # Cancel safety
    /// As [`campaign`](Election::campaign).
    pub async fn try_campaign(&self, value: impl Into<String>) -> Result<Option<Leadership>> {
        self.not_leading()?;
        match self.lock.try_lock().await? {
            Some(guard) => Ok(Some(self.begin(guard, value.into()).await?)),
            None => Ok(None),
        }
    }

    /// As [`campaign`](Election::campaign), waiting at most `wait`; `None` if this client does
    /// not lead by then.
    ///
    /// # Errors
    /// As [`campaign`](Election::campaign).
    ///
    /// # Cancel safety
    /// As [`campaign`](Election::campaign).
    pub async fn campaign_for(
        &self,
        wait: Duration,
        value: impl Into<String>,
    ) -> Result<Option<Leadership>> {
        self.not_leading()?;
        match self.lock.try_lock_for(wait).await? {
            Some(guard) => Ok(Some(self.begin(guard, value.into()).await?)),
            None => Ok(None),
        }
    }

    /// Refuses a campaign whose `lock()` would re-enter a leadership this caller already has (in
    /// its scope, or as its owner): a second leadership of the same term, whose resignation
    /// would end the first's record while it still leads.
    fn not_leading(&self) -> Result<()> {
        let name = self.lock.name();
        let target = crate::hold::reentry::resolve(
            self.inner.shared.id,
            self.inner.settings.reentrancy,
            &self.inner.shared.holds,
            name,
        );
        match target {
            Ok(crate::hold::reentry::Target::Reenter(hold)) => Err(Error::invalid(
                "campaign",
                format!(
                    "this caller already leads `{name}` (term {}): a campaign never re-enters a leadership; resign it first, or campaign from another task or owner",
                    hold.token
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Records `value` for the hold `guard`, then hands out the leadership.
    async fn begin(&self, guard: LockGuard, value: String) -> Result<Leadership> {
        let leadership = Leadership {
            election: self.clone(),
            value: Mutex::new(value.clone()),
            state: Arc::new(Led {
                lock: self.lock.name().to_string(),
                record: self.record.to_string(),
                channel: self.channel.to_string(),
                field: guard.owner().to_string(),
                term: guard.fencing_token(),
            }),
            runtime: tokio::runtime::Handle::try_current().ok(),
            guard: Some(guard),
        };
        // From here a dropped future resigns (the leadership's drop).
        let guard = leadership.guard();
        if !self.state(guard, &value, "elected").await? {
            return Err(Error::LockLost {
                name: self.lock.name().to_string(),
            });
        }
        self.inner
            .state::<Leaderships>()
            .add(Arc::downgrade(&leadership.state));
        Ok(leadership)
    }

    /// Runs `election_begin.lua` for `guard`'s hold: true if recorded.
    async fn state(&self, guard: &LockGuard, value: &str, kind: &str) -> Result<bool> {
        let kept = ELECTION_BEGIN
            .run::<i64>(
                self.inner.pool.next(),
                vec![self.lock.name().to_string(), self.record.to_string()],
                vec![
                    guard.owner().to_string(),
                    guard.fencing_token().to_string(),
                    value.to_string(),
                    self.inner.publish_cmd().to_string(),
                    self.channel.to_string(),
                    kind.to_string(),
                    self.inner.settings.watchdog_lease.as_millis().to_string(),
                ],
            )
            .await
            .map_err(|e| self.inner.error("election", self.lock.name(), e))?;
        Ok(kept == 1)
    }

    /// The current leader (one that has stated its value), or `None`.
    ///
    /// # Errors
    /// Connection errors; [`Error::WrongType`] if the election's keys hold data of another
    /// type.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn leader(&self) -> Result<Option<Leader>> {
        Ok(self.read().await?.leader)
    }

    async fn read(&self) -> Result<Snapshot> {
        self.inner.check_running()?;
        let r: Vec<String> = ELECTION_LEADER
            .run_read_only(
                self.inner.pool.next(),
                vec![self.lock.name().to_string(), self.record.to_string()],
                vec![],
            )
            .await
            .map_err(|e| self.inner.error("election", self.lock.name(), e))?;
        Ok(read_snapshot(&r))
    }

    /// The election's changes, in order, as a stream: the current leader first (if any), then
    /// each change. Driven by the election's messages and its lock's (a force-unlock deposes
    /// a leader at once); the record is re-read after each one,
    /// after the subscriber reconnects and when the leader's lease would end (so a crashed
    /// leader's expiry is seen within its lease), so the last state is never missed. A term
    /// that begins and ends between two reads (within a round trip) is not reported.
    ///
    /// The stream ends when the client's shutdown begins (events already queued are still
    /// yielded, then `None`), also if it was never read: an idle observation does not hold up
    /// shutdown. Dropping it stops the observation (its task
    /// and subscription end). An error (the subscription failed) is its last item.
    pub fn observe(&self) -> Observation {
        let (tx, rx) = mpsc::channel(64);
        let this = self.clone();
        self.inner
            .shared
            .tracker
            .spawn(async move { this.observe_into(tx).await });
        Observation { rx }
    }

    async fn observe_into(self, tx: mpsc::Sender<Result<LeaderEvent>>) {
        // The election's channel (elected, value, resigned) and the lock's (a release, a
        // handoff, a force-unlock: a leader deposed without a word on the election's channel).
        let subscribe = async {
            let lock_channel = self.lock.key_names()?.channel;
            let pubsub = &self.inner.pubsub;
            let err = |e| self.inner.error("observe", self.lock.name(), e);
            let own = pubsub
                .subscribe(&self.channel, ELECTION_CHANNEL)
                .await
                .map_err(err)?;
            let lock = pubsub
                .subscribe(&lock_channel, LOCK_CHANNEL)
                .await
                .map_err(err)?;
            Ok::<_, Error>((own, lock))
        };
        let (sub, lock_sub) = match subscribe.await {
            Ok(subs) => subs,
            Err(e) => {
                let _ = tx.send(Err(e)).await;
                return;
            }
        };
        // `stopping` is set when shutdown begins (shutdown waits for this task).
        let mut shutdown = self.inner.stopping.subscribe();
        let mut last: Option<Leader> = None;
        // After a failed read: when to read again (a failed command connection brings no
        // message or reconnect of the subscriber).
        let mut retry = Duration::ZERO;
        loop {
            // Registered before the read: a message that lands during it still wakes us.
            let notified = sub.holder_notified();
            let lock_notified = lock_sub.holder_notified();
            tokio::pin!(notified, lock_notified);
            notified.as_mut().enable();
            lock_notified.as_mut().enable();
            let now = match self.read().await {
                Ok(s) => {
                    retry = Duration::ZERO;
                    s
                }
                Err(Error::Shutdown) => return,
                Err(e) => {
                    tracing::debug!(error = %e, "election observer: read failed; reading again");
                    retry = (retry * 2).clamp(Duration::from_millis(50), Duration::from_secs(1));
                    Snapshot {
                        leader: last.clone(),
                        resigned: None,
                    }
                }
            };
            for event in changes(&last, &now) {
                // An observation kept alive but not read fills its channel: the wait for room
                // ends with shutdown too, which must not wait for a reader.
                tokio::select! {
                    sent = tx.send(Ok(event)) => if sent.is_err() { return },
                    _ = shutdown.wait_for(|s| *s) => return,
                }
            }
            last = now.leader;
            // When the leader's lease would end: a crash publishes nothing.
            let recheck = if retry.is_zero() {
                last.as_ref()
                    .and_then(|l| l.lease_left)
                    .map(|l| Instant::now() + l + Duration::from_millis(5))
            } else {
                Some(Instant::now() + retry)
            };
            tokio::select! {
                _ = &mut notified => {}
                _ = &mut lock_notified => {}
                _ = sleep_until(recheck) => {}
                _ = tx.closed() => return,
                _ = shutdown.wait_for(|s| *s) => return,
            }
        }
    }
}

async fn sleep_until(t: Option<Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// What one read of the record says.
#[derive(Debug)]
pub(super) struct Snapshot {
    pub(super) leader: Option<Leader>,
    /// The last term that ended by a resignation.
    pub(super) resigned: Option<u64>,
}

/// Reads `election_leader.lua`'s reply, `[1 or 0 (a leader or none), term, owner, value, pttl,
/// ended term, how it ended]`, of any length: a part that is missing or not a number reads as
/// no leader, term 0, no lease or no resignation.
pub(super) fn read_snapshot(r: &[String]) -> Snapshot {
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

/// The events that lead from `last` to `now`.
fn changes(last: &Option<Leader>, now: &Snapshot) -> Vec<LeaderEvent> {
    let ended = |term: u64| {
        if now.resigned == Some(term) {
            LeaderEvent::Resigned { term }
        } else {
            LeaderEvent::Expired { term }
        }
    };
    match (last, &now.leader) {
        (None, None) => vec![],
        (None, Some(n)) => vec![LeaderEvent::Elected(n.clone())],
        (Some(l), None) => vec![ended(l.term)],
        (Some(l), Some(n)) if l.term == n.term && l.owner == n.owner => {
            if l.value == n.value {
                vec![]
            } else {
                vec![LeaderEvent::ValueChanged(n.clone())]
            }
        }
        (Some(l), Some(n)) => vec![ended(l.term), LeaderEvent::Elected(n.clone())],
    }
}

/// The stream [`Election::observe`] returns.
#[derive(Debug)]
#[must_use = "a stream does nothing unless polled"]
pub struct Observation {
    rx: mpsc::Receiver<Result<LeaderEvent>>,
}

impl Observation {
    /// The next change, or `None` once the observation ended (the client shut down).
    ///
    /// # Cancel safety
    /// Cancel safe: an event not yet returned stays for the next call.
    pub async fn next(&mut self) -> Option<Result<LeaderEvent>> {
        self.rx.recv().await
    }
}

impl futures_util::Stream for Observation {
    type Item = Result<LeaderEvent>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

/// Leading an election: proof of a term, until [`resign`](Leadership::resign), a drop (which
/// resigns in the background) or a loss ([`lost`](Leadership::lost)).
#[must_use = "if unused the leadership is resigned at once"]
#[derive(Debug)]
pub struct Leadership {
    election: Election,
    guard: Option<LockGuard>,
    value: Mutex<String>,
    state: Arc<Led>,
    runtime: Option<tokio::runtime::Handle>,
}

/// What this client's watchdog round and shutdown need of a leadership. The registry tracks
/// the leadership's `Arc` weakly, so that a leadership that was let go leaves it at once: a
/// resignation works on a copy (holding the `Arc` would keep it renewed, and resign it again
/// at shutdown while its own resignation runs).
#[derive(Debug, Clone)]
struct Led {
    lock: String,
    record: String,
    channel: String,
    field: String,
    term: u64,
}

impl Leadership {
    fn guard(&self) -> &LockGuard {
        self.guard
            .as_ref()
            .expect("a leadership has its guard until it resigns")
    }

    /// Its term: the fencing token of the hold, strictly increasing across leaders. Send it
    /// with every write that only the leader may make, and have the resource refuse lower ones.
    pub fn term(&self) -> u64 {
        self.guard().fencing_token()
    }

    /// The value it last stated.
    pub fn value(&self) -> String {
        self.value.lock().unwrap().clone()
    }

    /// The hold behind it (its lease, `valid_until`, scope for re-entry).
    pub fn lock_guard(&self) -> &LockGuard {
        self.guard()
    }

    /// Whether the leadership is known lost, or its lease ran out on the local clock.
    pub fn is_lost(&self) -> bool {
        self.guard().is_lost()
    }

    /// Resolves once the leadership is lost (see [`LockGuard::lost`]): stop leading.
    ///
    /// # Cancel safety
    /// Cancel safe: it only observes.
    pub async fn lost(&self) {
        self.guard().lost().await
    }

    /// States a new value for the same term (observers see
    /// [`LeaderEvent::ValueChanged`]).
    ///
    /// # Errors
    /// [`Error::LockLost`] if this client no longer leads; connection errors (the value may
    /// or may not have been recorded).
    ///
    /// # Cancel safety
    /// A dropped call may still record the value.
    pub async fn proclaim(&self, value: impl Into<String>) -> Result<()> {
        let value = value.into();
        if self.is_lost() {
            return Err(self.lost_error());
        }
        if !self.election.state(self.guard(), &value, "value").await? {
            return Err(self.lost_error());
        }
        *self.value.lock().unwrap() = value;
        Ok(())
    }

    fn lost_error(&self) -> Error {
        Error::LockLost {
            name: self.election.lock.name().to_string(),
        }
    }

    /// Gives up the leadership: observers are told ([`LeaderEvent::Resigned`]), then the lock
    /// is released, which hands it to the first standby in line at once.
    ///
    /// # Errors
    /// [`Error::LockLost`] if the leadership had already been lost; connection errors, after
    /// which the release is retried in the background as any release.
    ///
    /// # Cancel safety
    /// The resignation runs in its own task: dropping this future does not stop it.
    pub async fn resign(mut self) -> Result<()> {
        let guard = self.guard.take().expect("resigned once");
        let work = resign(self.election.inner.clone(), (*self.state).clone(), guard);
        match self.election.inner.shared.tracker.spawn(work).await {
            Ok(r) => r,
            Err(_) => Err(Error::Shutdown),
        }
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        if let Some(guard) = self.guard.take() {
            let work = resign(self.election.inner.clone(), (*self.state).clone(), guard);
            let work = async move {
                if let Err(e) = work.await {
                    if !matches!(e, Error::LockLost { .. } | Error::Shutdown) {
                        tracing::warn!(error = %e, "a leadership's background resignation failed");
                    }
                }
            };
            crate::hold::detach::spawn(
                &self.election.inner.shared.tracker,
                self.runtime.as_ref(),
                work,
            );
        }
    }
}

/// Ends `guard`'s term on the record (if it is still the record's), then releases the lock.
async fn resign(inner: Arc<Inner>, led: Led, guard: LockGuard) -> Result<()> {
    if !guard.is_lost() {
        // Best effort: an observer that misses it reports the end as an expiry.
        if let Err(e) = resign_record(&inner, &led).await {
            tracing::debug!(error = %e, "resigning an election's record failed; releasing its lock");
        }
    }
    guard.unlock().await
}

/// `election_resign.lua` for `led`: its term marked resigned, if the record is still its own.
async fn resign_record(inner: &Inner, led: &Led) -> Result<()> {
    ELECTION_RESIGN
        .run::<i64>(
            inner.pool.next(),
            vec![led.record.clone()],
            vec![
                led.field.clone(),
                led.term.to_string(),
                inner.publish_cmd().to_string(),
                led.channel.clone(),
                // The resignation's mark, for observers that read after it: as long as a
                // leader's lease (nothing of an election outlives that).
                inner.settings.watchdog_lease.as_millis().to_string(),
            ],
        )
        .await
        .map(|_| ())
        .map_err(|e| inner.error("election", &led.lock, e))
}

/// This client's leaderships: their records are renewed in the watchdog's round.
#[derive(Debug, Default)]
struct Leaderships(Mutex<Vec<Weak<Led>>>);

impl Leaderships {
    fn add(&self, led: Weak<Led>) {
        let mut all = self.0.lock().unwrap();
        all.retain(|l| l.strong_count() > 0);
        all.push(led);
    }

    fn live(&self) -> Vec<Arc<Led>> {
        let mut all = self.0.lock().unwrap();
        all.retain(|l| l.strong_count() > 0);
        all.iter().filter_map(Weak::upgrade).collect()
    }
}

impl KindState for Leaderships {
    /// Each live leadership resigns its record (observers see `Resigned`), beside the release
    /// of its hold with the client's others: if the first standby's begin gets there first,
    /// the record is already its own and is left alone (observers then see `Expired`).
    fn at_shutdown(&self, inner: &Arc<Inner>, work: &mut tokio::task::JoinSet<()>, round: Round) {
        if round != Round::First {
            return;
        }
        for led in self.live() {
            let inner = inner.clone();
            work.spawn(async move {
                if let Err(e) = resign_record(&inner, &led).await {
                    tracing::debug!(error = %e, "resigning an election's record at shutdown failed");
                }
            });
        }
    }

    /// Each live leadership's record, lengthened to the watchdog lease if its lock is still
    /// its own: one call each (a client leads few elections).
    fn renewals(&self, inner: &Arc<Inner>) -> Vec<BoxFuture<bool>> {
        let lease = inner.settings.watchdog_lease.as_millis().to_string();
        self.live()
            .into_iter()
            .map(|led| {
                let (inner, lease) = (inner.clone(), lease.clone());
                Box::pin(async move {
                    let r = ELECTION_RENEW
                        .run::<i64>(
                            inner.pool.next(),
                            vec![led.lock.clone(), led.record.clone()],
                            vec![lease, led.field.clone()],
                        )
                        .await;
                    r.is_ok()
                }) as BoxFuture<bool>
            })
            .collect()
    }
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

    fn leader(term: u64, value: &str) -> Leader {
        Leader {
            term,
            value: value.into(),
            owner: format!("c:{term}"),
            lease_left: None,
        }
    }

    #[test]
    fn changes_follow_terms_and_values() {
        let snap = |l: Option<Leader>, resigned: Option<u64>| Snapshot {
            leader: l,
            resigned,
        };
        assert_eq!(changes(&None, &snap(None, None)), vec![]);
        assert_eq!(
            changes(&None, &snap(Some(leader(1, "a")), None)),
            vec![LeaderEvent::Elected(leader(1, "a"))]
        );
        assert_eq!(
            changes(&Some(leader(1, "a")), &snap(Some(leader(1, "b")), None)),
            vec![LeaderEvent::ValueChanged(leader(1, "b"))]
        );
        assert_eq!(
            changes(&Some(leader(1, "a")), &snap(Some(leader(2, "c")), Some(1))),
            vec![
                LeaderEvent::Resigned { term: 1 },
                LeaderEvent::Elected(leader(2, "c"))
            ]
        );
        assert_eq!(
            changes(&Some(leader(1, "a")), &snap(None, None)),
            vec![LeaderEvent::Expired { term: 1 }]
        );
    }
}
