//! [`QuorumLock`]: the handle, the acquire (re-entry, the wait loop over every node's release
//! channel) and the queries; one Redlock attempt is in `vote`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use fred::interfaces::{HashesInterface, KeysInterface};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::client::lock_scripts;
use crate::client::pubsub::Subscription;
use crate::client::redact;
use crate::error::{Error, NodeVote, Result, Vote};
use crate::hold::acquire::{self, Plan};
use crate::hold::distributed_lock;
use crate::hold::guard::LockGuard;
use crate::hold::holds::Hold;
use crate::hold::kind::{HoldKind, LockKeys};
use crate::hold::meter;
use crate::hold::owner;
use crate::hold::reentry::{self, Target};
use crate::quorum::channel::QUORUM_CHANNEL;
use crate::quorum::inner::QuorumInner;
use crate::quorum::kind::QUORUM;
use crate::quorum::node::{self, pinned};
use crate::quorum::race::{drift, race};

/// A node's reply to a call bounded by the node timeout.
pub(crate) type TimedReply<T> =
    std::result::Result<fred::prelude::FredResult<T>, tokio::time::error::Elapsed>;

/// A quorum (Redlock) lock: held when a majority of independent masters granted it.
///
/// Made by [`QuorumClient::lock`](crate::QuorumClient::lock). The same methods and guard as
/// the single-server [`Lock`](crate::Lock): reentrant per owner, renewed by the watchdog unless
/// a fixed lease is given, waiters woken by any node's release message, fencing tokens that
/// strictly increase (under the assumptions in
/// [`guide::safety`](crate::guide::safety#fencing-tokens-across-a-quorum)). The guard's
/// [`valid_until`](LockGuard::valid_until) is the Redlock validity: start + lease − time taken
/// − drift.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
/// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
/// # let client = relock::QuorumClient::builder().urls([url]).restart_quarantine(std::time::Duration::ZERO).build().await?;
/// use std::time::Duration;
/// let lock = client.lock("jobs:weekly").with_lease(Duration::from_secs(10));
/// match lock.try_lock().await {
///     Ok(Some(guard)) => guard.unlock().await?,
///     Ok(None) => println!("someone else runs it"),
///     Err(relock::Error::QuorumNotReached { votes, .. }) => eprintln!("nodes down: {votes:?}"),
///     Err(e) => return Err(e),
/// }
/// # assert!(!lock.is_locked().await?);
/// # client.shutdown().await; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct QuorumLock {
    pub(crate) q: Arc<QuorumInner>,
    name: Arc<str>,
    pub(crate) lease: Option<Duration>,
}

/// How one attempt ended.
pub(crate) enum Outcome {
    Acquired(LockGuard),
    Failed(Failure),
}

pub(crate) struct Failure {
    pub(crate) votes: Vec<NodeVote>,
    pub(crate) granted: usize,
    /// Nodes that answered "held by another".
    pub(crate) held: usize,
    /// The smallest remaining lease a holding node reported.
    pub(crate) min_pttl: Option<Duration>,
    /// Set when a quorum of votes was granted but came back too late: how long the votes
    /// took, and the lease whose validity (less the clock-drift allowance) they outlasted.
    pub(crate) too_late: Option<(Duration, Duration)>,
}

impl Failure {
    /// Nodes that could not vote: errors, timeouts, quarantine.
    fn unavailable(&self) -> usize {
        self.votes
            .iter()
            .filter(|v| {
                matches!(
                    v.vote,
                    Vote::Error(_) | Vote::Timeout(_) | Vote::Quarantined { .. }
                )
            })
            .count()
    }
}

/// The lock kind of this module, made by the quorum client.
impl crate::QuorumClient {
    /// A handle to the quorum lock called `name`. Cheap; nothing is sent until it is used.
    pub fn lock(&self, name: impl Into<String>) -> QuorumLock {
        QuorumLock::new(self.inner.clone(), name.into())
    }
}

impl QuorumLock {
    pub(crate) fn new(q: Arc<QuorumInner>, name: String) -> Self {
        QuorumLock {
            q,
            name: name.into(),
            lease: None,
        }
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Every master and the name (see [`DistributedLock::resource`](crate::DistributedLock::resource)).
    fn resource(&self) -> String {
        format!("quorum({})", self.resources().join(", "))
    }

    /// One place per master: the same data as a lock of this name on that master.
    fn resources(&self) -> Vec<String> {
        let mut places: Vec<String> = self
            .q
            .nodes
            .iter()
            .map(|n| format!("{} {}", redact::identity(n.url()), self.name))
            .collect();
        places.sort();
        places
    }

    /// The same lock with a fixed lease (no watchdog). At least 1 ms; keep it far above the
    /// node timeout, since validity = lease − time taken − drift.
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }

    fn keys(&self) -> Result<Arc<LockKeys>> {
        LockKeys::new(&self.name, &QUORUM).map(Arc::new)
    }

    /// The shared acquire (`hold::acquire`: running check, keys, lease check, re-entry or
    /// fresh, the spans) over the quorum's re-entry and its wait loop.
    async fn acquire(&self, wait: Option<Duration>) -> Result<Option<LockGuard>> {
        let q = &self.q;
        let name = &*self.name;
        let lock = acquire::SharedAcquire {
            running: q.check_running(),
            keys: self.keys(),
            lease: self.lease,
            spans: acquire::acquire_spans!(name),
        };
        let plan = |keys: &Arc<LockKeys>| {
            let target = reentry::resolve(q.shared.id, q.reentrancy, &q.shared.holds, &keys.lock)?;
            Ok(match target {
                Target::Reenter(hold) => Plan::Reenter(hold),
                Target::Fresh { owner } => Plan::Fresh { owner, with: () },
            })
        };
        let lease = self.lease.unwrap_or(q.watchdog_lease);
        let reenter = |keys, hold, _| {
            q.note_lease(lease);
            self.reenter(keys, hold, lease)
        };
        let fresh = |keys, owner, (), wait| async move {
            q.note_lease(lease);
            let mut attempts = 0;
            let r = self.fresh(keys, owner, lease, wait, &mut attempts).await;
            (r, attempts)
        };
        acquire::acquire_shared(lock, wait, plan, reenter, fresh).await
    }

    /// A fresh acquisition's wait: attempts (each a Redlock round under a field of its own,
    /// counted in `attempts`), the subscriptions on every node, and sleeps until a release or
    /// the shortest lease reported, bounded by `wait` (`None`: until granted).
    async fn fresh(
        &self,
        keys: Arc<LockKeys>,
        owner: Option<owner::Owner>,
        lease: Duration,
        wait: Option<Duration>,
        attempts: &mut u32,
    ) -> Result<Option<LockGuard>> {
        let started = Instant::now();
        let deadline = wait.and_then(|w| Instant::now().checked_add(w));
        let mut subs: Option<Vec<Subscription>> = None;
        let mut warned = false;
        // Wake-ups that led nowhere in a row (see `wait_after_failure`).
        let mut idle_wake = Duration::ZERO;
        // Rounds waited for nodes coming back (bounded: 5 s at 50 ms a round).
        let mut waited_for_nodes = 0u32;
        loop {
            self.q.check_running()?;
            *attempts += 1;
            let attempt = self.spawn_attempt(&keys, &owner, lease);
            let failure = match attempt.await.map_err(|_| Error::Shutdown)?? {
                Outcome::Acquired(g) => {
                    meter::acquired(QUORUM.label(), started.elapsed());
                    return Ok(Some(g));
                }
                Outcome::Failed(f) => f,
            };
            meter::failed_attempt(
                QUORUM.label(),
                if failure.held > 0 {
                    "held"
                } else {
                    "no_quorum"
                },
            );
            let available = self.q.nodes.len() - failure.unavailable();
            if available < self.q.quorum {
                if self.wait_for_nodes(deadline, &mut waited_for_nodes).await {
                    continue;
                }
                // Too many nodes down or in quarantine: waiting for a release cannot help.
                return Err(self.not_reached(failure));
            }
            // Someone else holds it on a node, and enough nodes are up for them to hold it.
            let held_elsewhere = failure.held > 0;
            let now = Instant::now();
            let out_of_time = deadline.is_some_and(|d| now >= d);
            if out_of_time {
                return if held_elsewhere {
                    Ok(None)
                } else {
                    Err(self.not_reached(failure))
                };
            }
            if subs.is_none() {
                // Subscribe, then try again at once: a release between the attempt above and
                // the subscription would otherwise leave us asleep for the holder's lease.
                subs = Some(self.subscribe_all(&keys).await);
                continue;
            }
            if held_elsewhere {
                reentry::warn_if_waiting_on_own_task(&self.q.shared.holds, &keys.lock, &mut warned);
            }
            let subs_ref = subs.as_deref().unwrap_or_default();
            idle_wake = self
                .wait_after_failure(&keys, &failure, subs_ref, (deadline, now), idle_wake)
                .await;
            self.q.check_running()?;
        }
    }

    /// Starts one attempt. Every attempt asks under a field of its own: a failed attempt is
    /// released everywhere under its field, and that release, however late it lands, cannot
    /// touch a later attempt's grant. In its own task: if the caller's future is dropped
    /// mid-attempt, the attempt still ends by releasing everywhere or by becoming a guard,
    /// which is dropped and released.
    fn spawn_attempt(
        &self,
        keys: &Arc<LockKeys>,
        owner: &Option<owner::Owner>,
        lease: Duration,
    ) -> tokio::task::JoinHandle<Result<Outcome>> {
        let field = self.q.fields.next();
        let (this, keys, owner) = (self.clone(), keys.clone(), owner.clone());
        let task = reentry::Caller::current();
        self.q
            .shared
            .tracker
            .spawn(async move { this.attempt(&keys, field, (owner, task), lease).await })
    }

    /// Too few nodes could vote. A node whose connections are being made again after a blip
    /// is back within a connect: a waiter waits for it, within its deadline, in 50 ms rounds
    /// (at most 100, counted in `rounds`); and so it does when enough are back already, since
    /// the attempt. True if it waited (try again), false if waiting cannot help.
    async fn wait_for_nodes(&self, deadline: Option<Instant>, rounds: &mut u32) -> bool {
        let reconnecting = self.q.nodes.iter().any(|n| n.is_reconnecting())
            || self
                .q
                .nodes
                .iter()
                .filter(|n| matches!(n.eligibility(), node::Eligibility::Yes(_)))
                .count()
                >= self.q.quorum;
        let now = Instant::now();
        if reconnecting && *rounds < 100 && deadline.is_none_or(|d| now < d) {
            *rounds += 1;
            let mut pause = Duration::from_millis(50);
            if let Some(d) = deadline {
                pause = pause.min(d - now);
            }
            tokio::time::sleep(pause).await;
            return true;
        }
        false
    }

    /// Waits after a failed attempt (`now`: when it was judged), before the next: after a
    /// split vote a random while, so that contenders fall out of step; when someone holds it,
    /// until a release message from any node or the shortest lease reported; never past
    /// `deadline`. Returns the pause before the next wait's (`idle_wake`): wake-ups that led
    /// nowhere in a row (a failed attempt's own clean-up publishes a release on a node, which
    /// wakes this very waiter, and a holder missing from one node makes every attempt fail
    /// there) each wait a little longer first.
    async fn wait_after_failure(
        &self,
        keys: &LockKeys,
        failure: &Failure,
        subs: &[Subscription],
        (deadline, now): (Option<Instant>, Instant),
        idle_wake: Duration,
    ) -> Duration {
        let held_elsewhere = failure.held > 0;
        let mut sleep = if held_elsewhere {
            failure
                .min_pttl
                .map_or(Duration::from_secs(1), |p| p + Duration::from_millis(1))
        } else {
            jitter(self.q.node_timeout * 4)
        };
        if let Some(d) = deadline {
            sleep = sleep.min(d - now);
        }
        tracing::debug!(
            lock = %keys.lock,
            held_elsewhere,
            ?sleep,
            votes = ?failure.votes.iter().map(|v| format!("{:?}", v.vote)).collect::<Vec<_>>(),
            "quorum attempt failed; waiting"
        );
        if !subs.iter().any(Subscription::is_connected) {
            // No node's release message can reach us: look again soon.
            sleep = sleep.min(Duration::from_millis(100));
        }
        if !idle_wake.is_zero() {
            tokio::time::sleep(idle_wake.min(sleep)).await;
        }
        let woken = tokio::time::timeout(sleep, any_notified(subs))
            .await
            .is_ok();
        if woken && held_elsewhere {
            (idle_wake * 2).clamp(Duration::from_millis(1), Duration::from_millis(50))
        } else {
            Duration::ZERO
        }
    }

    /// One more guard on `hold`: `reenter.lua` on every eligible node at once; a majority must
    /// still have the hold. Runs in its own task.
    async fn reenter(
        &self,
        keys: Arc<LockKeys>,
        hold: Arc<Hold>,
        lease: Duration,
    ) -> Result<LockGuard> {
        let q = self.q.clone();
        let (name, watchdog) = (self.name.clone(), self.lease.is_none());
        let task = self.q.shared.tracker.spawn(async move {
            let start = Instant::now();
            let n = q.nodes.len();
            let (votes, yes, gone) = reentry_votes(&q, &keys, &hold, lease).await;
            let lost = || Error::LockLost {
                name: name.to_string(),
            };
            if yes >= q.quorum {
                let valid_until = start + lease.saturating_sub(drift(lease));
                return if hold.add_guard(watchdog, valid_until) {
                    Ok(LockGuard::new(q.clone(), hold, watchdog))
                } else {
                    Err(lost())
                };
            }
            if gone > n - q.quorum {
                // A majority no longer has it: the hold is lost.
                hold.mark_lost("a re-entry found the hold gone on a majority of nodes");
                return Err(lost());
            }
            Err(Error::QuorumNotReached {
                name: name.to_string(),
                needed: q.quorum,
                granted: yes,
                votes: q.name_votes(votes),
                hint: None,
            })
        });
        task.await.map_err(|_| Error::Shutdown)?
    }

    fn not_reached(&self, f: Failure) -> Error {
        let quarantined = f
            .votes
            .iter()
            .filter(|v| matches!(v.vote, Vote::Quarantined { .. }))
            .count();
        let available = self.q.nodes.len() - f.unavailable();
        let hint = (quarantined > 0 && available + quarantined >= self.q.quorum).then(|| {
            format!(
                "{quarantined} node(s) restarted less than the restart quarantine ({}{}) ago and may not vote yet: wait for it to end, or lower it with QuorumClientBuilder::restart_quarantine (Duration::ZERO turns it off, at the risk described in relock::guide::safety, Restarted nodes)",
                crate::error::Human(self.q.quarantine()),
                if self.q.quarantine_is_default() { ", the longest lease in use" } else { "" }
            )
        });
        let hint = hint.or_else(|| {
            f.too_late.map(|(took, lease)| {
                format!(
                    "the votes were granted but took {}, which left nothing of the lease's {} once the clock-drift allowance is taken off, so the lock was released again: use a longer lease (with_lease, or the client's watchdog lease), or look at the nodes' latency",
                    crate::error::Human(took),
                    crate::error::Human(lease)
                )
            })
        });
        Error::QuorumNotReached {
            name: self.name.to_string(),
            needed: self.q.quorum,
            granted: f.granted,
            votes: f.votes,
            hint,
        }
    }

    /// Subscribes to the release channel on every node that answers in time.
    async fn subscribe_all(&self, keys: &LockKeys) -> Vec<Subscription> {
        let mut set = JoinSet::new();
        for node in &self.q.nodes {
            let Some(conn) = node.conn() else { continue };
            let (channel, limit) = (keys.channel.clone(), self.q.node_timeout);
            set.spawn(async move {
                tokio::time::timeout(limit * 4, conn.pubsub().subscribe(&channel, QUORUM_CHANNEL))
                    .await
                    .ok()
                    .and_then(|r| r.ok())
            });
        }
        let mut subs = Vec::new();
        while let Some(r) = set.join_next().await {
            if let Ok(Some(s)) = r {
                subs.push(s);
            }
        }
        subs
    }

    /// Whether a majority of the nodes have the lock (held by anyone).
    ///
    /// # Errors
    /// None today beyond a bad name; unreachable nodes count as "not locked".
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    pub async fn is_locked(&self) -> Result<bool> {
        let keys = self.keys()?;
        let replies = self
            .on_every_node(
                move |c, k| {
                    let k = k.lock.clone();
                    async move { c.exists::<i64, _>(k).await.map(|n| n.max(0) as u64) }
                },
                &keys,
            )
            .await;
        Ok(replies.iter().filter(|n| **n == Some(1)).count() >= self.q.quorum)
    }

    /// The hold count of the hold the calling code holds (its scope's, its owner's, or one its
    /// task took), as a majority of the nodes agree (0 if none).
    ///
    /// # Errors
    /// As [`is_locked`](QuorumLock::is_locked).
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    pub async fn hold_count(&self) -> Result<u32> {
        let keys = self.keys()?;
        let Some(hold) = self.current_hold(&keys) else {
            return Ok(0);
        };
        let field = hold.field.clone();
        let mut counts: Vec<u64> = self
            .on_every_node(
                move |c, k| {
                    let (k, f) = (k.lock.clone(), field.clone());
                    async move {
                        c.hget::<Option<u64>, _, _>(k, f)
                            .await
                            .map(|n| n.unwrap_or(0))
                    }
                },
                &keys,
            )
            .await
            .into_iter()
            .map(|n| n.unwrap_or(0))
            .collect();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        Ok(counts.get(self.q.quorum - 1).copied().unwrap_or(0) as u32)
    }

    /// Deletes the lock on every node whoever holds it; true if any node had it.
    ///
    /// # Errors
    /// A bad name.
    ///
    /// # Cancel safety
    /// If dropped mid-way, some nodes may keep the lock until its lease ends.
    pub async fn force_unlock(&self) -> Result<bool> {
        self.q.check_running()?;
        let keys = self.keys()?;
        let replies = self
            .on_every_node(
                move |c, k| {
                    let keys = vec![k.lock.clone()];
                    let args = vec!["publish".into(), "0".into(), k.channel.clone()];
                    async move {
                        lock_scripts::FORCE_UNLOCK
                            .run::<i64>(&c, keys, args)
                            .await
                            .map(|n| n as u64)
                    }
                },
                &keys,
            )
            .await;
        for h in self.q.shared.holds.of_lock(&keys.lock) {
            h.mark_lost("force-unlocked by this client");
        }
        Ok(replies.contains(&Some(1)))
    }

    /// As `Lock::current_hold`.
    fn current_hold(&self, keys: &LockKeys) -> Option<Arc<Hold>> {
        let q = &self.q;
        if let Some(h) = reentry::scoped_hold(q.shared.id, &keys.lock) {
            return Some(h);
        }
        if let Ok(Target::Reenter(h)) =
            reentry::resolve(q.shared.id, q.reentrancy, &q.shared.holds, &keys.lock)
        {
            return Some(h);
        }
        let caller = reentry::Caller::current();
        q.shared
            .holds
            .find(&keys.lock, |h| h.task == caller && h.is_live())
    }

    /// Runs `f` on every connected node at once, each bounded by the node timeout.
    async fn on_every_node<F, Fut>(&self, f: F, keys: &Arc<LockKeys>) -> Vec<Option<u64>>
    where
        F: Fn(fred::clients::Client, &LockKeys) -> Fut,
        Fut: Future<Output = std::result::Result<u64, fred::error::Error>> + Send + 'static,
    {
        let mut set = JoinSet::new();
        for (i, node) in self.q.nodes.iter().enumerate() {
            let Some(conn) = node.conn() else { continue };
            let fut = f(pinned(&conn, &keys.lock).clone(), keys);
            let limit = self.q.node_timeout;
            set.spawn(async move { (i, tokio::time::timeout(limit, fut).await) });
        }
        let mut out = vec![None; self.q.nodes.len()];
        while let Some(Ok((i, r))) = set.join_next().await {
            out[i] = r.ok().and_then(|r| r.ok());
        }
        out
    }
}

/// Asks every eligible node at once to add one count to `hold` (`reenter.lua`), waiting until
/// a majority has or can no longer: each node's vote, the nodes that added it, and the nodes
/// that no longer have the hold.
async fn reentry_votes(
    q: &QuorumInner,
    keys: &Arc<LockKeys>,
    hold: &Hold,
    lease: Duration,
) -> (Vec<Vote>, usize, usize) {
    let n = q.nodes.len();
    let mut votes: Vec<Vote> = vec![Vote::NotAwaited; n];
    let mut calls = Vec::new();
    for (i, conn) in q.eligible(&mut votes) {
        let (keys, field, limit) = (keys.clone(), hold.field.clone(), q.node_timeout);
        let in_flight = q.in_flight.start(&field, i);
        let args = vec![lease.as_millis().to_string(), field];
        calls.push(Box::pin(async move {
            let call = lock_scripts::REENTER.run_tracked::<Option<i64>>(
                pinned(&conn, &keys.lock),
                vec![keys.lock.clone()],
                args,
                &in_flight,
            );
            (i, tokio::time::timeout(limit, call).await)
        }));
    }
    let (mut yes, mut gone, mut no) = (0usize, 0usize, n - calls.len());
    race(&q.shared.tracker, calls, |(i, r)| {
        votes[i] = match r {
            Ok(Ok(Some(_))) => {
                yes += 1;
                Vote::Granted
            }
            Ok(Ok(None)) => {
                gone += 1;
                no += 1;
                Vote::Error("the hold is not on this node".into())
            }
            Ok(Err(e)) => {
                no += 1;
                Vote::Error(e.to_string())
            }
            Err(_) => {
                no += 1;
                Vote::Timeout(q.node_timeout)
            }
        };
        yes >= q.quorum || n - no < q.quorum
    })
    .await;
    (votes, yes, gone)
}

/// A random duration in [d/2, d], from the OS-seeded UUID generator already in the tree.
fn jitter(d: Duration) -> Duration {
    let r = (uuid::Uuid::new_v4().as_u128() % 1000) as u32;
    d / 2 + d / 2 * r / 1000
}

/// Completes when any of `subs` is woken (immediately pending forever if there are none).
async fn any_notified(subs: &[Subscription]) {
    let mut futs: Vec<Pin<Box<tokio::sync::futures::Notified<'_>>>> =
        subs.iter().map(|s| Box::pin(s.notified())).collect();
    for f in &mut futs {
        f.as_mut().enable();
    }
    std::future::poll_fn(|cx| {
        for f in &mut futs {
            if f.as_mut().poll(cx).is_ready() {
                return Poll::Ready(());
            }
        }
        Poll::Pending
    })
    .await
}

distributed_lock::lock_methods!(
    QuorumLock,
    errors: "[`Error::QuorumNotReached`](crate::Error::QuorumNotReached) (naming every node and its answer) when too many nodes are down or in restart quarantine for a majority to be possible, or (from `try_lock` and `try_lock_for`) when the votes split or the budget ran out without any owner holding a majority; [`Error::InvalidArgument`](crate::Error::InvalidArgument); [`Error::Shutdown`](crate::Error::Shutdown).",
    cancel: "Cancel safe: every vote runs in its own task, and an attempt that is abandoned releases on every node (or, if it had succeeded, becomes a guard that is dropped and released).",
    doc_make: "let client = relock::QuorumClient::builder().urls([url]).restart_quarantine(std::time::Duration::ZERO).build().await?; let make = |name: &str| client.lock(name);"
);
