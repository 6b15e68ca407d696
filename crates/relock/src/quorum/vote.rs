//! One Redlock attempt of a [`QuorumLock`](crate::QuorumLock): votes from every node at once
//! with an early return, the validity, the release everywhere on failure, and the token
//! write-back (a round, or late counters raised in the background).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::client::inner::Inner;
use crate::client::lock_scripts;
use crate::error::{Result, Vote};
use crate::hold::guard::LockGuard;
use crate::hold::holds::Hold;
use crate::hold::kind::LockKeys;
use crate::hold::owner::Owner;
use crate::hold::reentry;
use crate::quorum::in_flight::{Call, Pending};
use crate::quorum::inner::QuorumInner;
use crate::quorum::lock::{Failure, Outcome, QuorumLock, TimedReply};
use crate::quorum::node::pinned;
use crate::quorum::race::{drift, race, race_keeping_late};
use crate::quorum::scripts;
use crate::quorum::watch;

impl QuorumLock {
    /// One Redlock attempt for a fresh hold under `field`: votes from every node at once,
    /// returning as soon as a quorum is reached or has become impossible.
    pub(crate) async fn attempt(
        &self,
        keys: &Arc<LockKeys>,
        field: String,
        (owner, task): (Option<Owner>, reentry::Caller),
        lease: Duration,
    ) -> Result<Outcome> {
        let q = &self.q;
        let field = field.as_str();
        self.await_own_release(keys).await;
        let start = Instant::now();
        let n = q.nodes.len();
        let mut tally = Tally::new(n);
        let voters = self.voters(&mut tally.votes);
        let (calls, conns) = self.ask_for_votes(keys, field, lease, voters);
        let pending = calls.len();
        tally.no = n - pending;
        let mut late = None;
        if tally.no + q.quorum <= n {
            late = Some(
                race_keeping_late(&q.shared.tracker, calls, |(i, r)| tally.count(q, i, r)).await,
            );
        } else {
            // Never sent: their registrations must not hold up this attempt's release.
            drop(calls);
        }
        let validity = |now: Instant| {
            lease
                .saturating_sub(now - start)
                .saturating_sub(drift(lease))
        };
        let mut ok = tally.granted >= q.quorum && !validity(Instant::now()).is_zero();
        let token = tally.tokens.iter().copied().max().unwrap_or(0);
        if ok {
            let still_valid = || !validity(Instant::now()).is_zero();
            ok = self
                .spread_token(keys, &tally.tokens, token, late, conns, still_valid)
                .await;
        }
        if ok {
            let granted = (field, token, owner, task);
            if let Some(guard) = self.grant(keys, granted, start, lease) {
                return Ok(Outcome::Acquired(guard));
            }
        }
        // Not acquired: take back whatever this attempt may have been granted, under its own
        // field (nothing to take back if every node answered, and none granted).
        if ok || tally.granted > 0 || tally.clean_up || pending > tally.granted + tally.held {
            q.release_everywhere(keys, field, true, 0).await;
        }
        let mut failure = tally.failure(q);
        if failure.granted >= q.quorum && validity(Instant::now()).is_zero() {
            failure.too_late = Some((start.elapsed(), lease));
        }
        Ok(Outcome::Failed(failure))
    }

    /// A release of this lock by this client is in flight: the lock is about to be free, so
    /// let it land first (an optimisation only: it cannot touch this attempt's field).
    async fn await_own_release(&self, keys: &LockKeys) {
        let q = &self.q;
        if let Some(h) = q.shared.holds.find(&keys.lock, |h| h.is_releasing()) {
            let mut gone = std::pin::pin!(h.gone.notified());
            gone.as_mut().enable();
            if q.shared.holds.contains(&h) {
                let _ = tokio::time::timeout(q.node_timeout * 4, gone).await;
            }
        }
    }

    /// The nodes that may vote now, with their connections; the others' votes are recorded
    /// (and counted) as they stand. None when they are too few for a quorum: then nothing is
    /// sent.
    fn voters(&self, votes: &mut [Vote]) -> Vec<(usize, Arc<Inner>)> {
        let q = &self.q;
        let mut eligible = q.eligible(votes);
        // Nodes left out before anything is sent still count as votes against the quorum.
        for v in votes.iter() {
            match v {
                Vote::Quarantined { .. } => count_vote("quarantined"),
                Vote::Error(_) => count_vote("unavailable"),
                _ => {}
            }
        }
        if eligible.len() < q.quorum {
            // A quorum is impossible before anything is sent: send nothing.
            eligible.clear();
        }
        eligible
    }

    /// One vote call per voter (not yet sent: each is registered in `in_flight` at once, and
    /// runs when awaited), and each voter's connection by node index, for the late votes.
    #[allow(clippy::type_complexity)]
    fn ask_for_votes(
        &self,
        keys: &Arc<LockKeys>,
        field: &str,
        lease: Duration,
        voters: Vec<(usize, Arc<Inner>)>,
    ) -> (
        Vec<std::pin::Pin<Box<impl Future<Output = (usize, TimedReply<Vec<i64>>)> + Send + use<>>>>,
        Vec<Option<Arc<Inner>>>,
    ) {
        let q = &self.q;
        let mut calls = Vec::with_capacity(voters.len());
        let mut conns = vec![None; q.nodes.len()];
        for (i, conn) in voters {
            conns[i] = Some(conn.clone());
            let (keys, limit) = (keys.clone(), q.node_timeout);
            let args = vec![
                lease.as_millis().to_string(),
                field.to_string(),
                q.grace_ms().to_string(),
            ];
            // Registered before the attempt can return: its release waits for this vote to be
            // handed to fred.
            let in_flight = q.in_flight.start(field, i);
            // This client's releases of the lock still on their way to this node go first:
            // overtaken, one would leave the node answering "held" by a hold already let go.
            let releases = q.releasing.registered(&keys.lock, i);
            calls.push(Box::pin(async move {
                (
                    i,
                    vote_on(conn, keys, args, limit, in_flight, releases).await,
                )
            }));
        }
        (calls, conns)
    }

    /// Makes any later quorum meet a node whose counter has seen `token`, so that it mints
    /// above it; false if a write-back round was needed and it failed, or the validity
    /// (`still_valid`) ran out meanwhile. When every granting node (a majority) minted this
    /// very token, their counters already hold it: no write-back round, only the late voters'
    /// counters raised in the background. That is the common case, since the last write-back
    /// left the counters equal and each grant adds one to each. Otherwise the token is written
    /// back to a majority first.
    async fn spread_token(
        &self,
        keys: &Arc<LockKeys>,
        tokens: &[u64],
        token: u64,
        late: Option<LateVotes>,
        conns: Vec<Option<Arc<Inner>>>,
        still_valid: impl Fn() -> bool,
    ) -> bool {
        if tokens.iter().any(|t| *t != token) {
            return self.write_back(keys, token).await && still_valid();
        }
        if let Some(late) = late {
            self.raise_late_counters(late, conns, keys, token);
        }
        true
    }

    /// The hold and its first guard for a quorum granted at `start`, registered and watched;
    /// `None` if its validity ran out since it was checked.
    fn grant(
        &self,
        keys: &Arc<LockKeys>,
        (field, token, owner, task): (&str, u64, Option<Owner>, reentry::Caller),
        start: Instant,
        lease: Duration,
    ) -> Option<LockGuard> {
        let q = &self.q;
        let watchdog = self.lease.is_none();
        let valid_until = start + lease.saturating_sub(drift(lease));
        let hold = Arc::new(Hold::new(
            keys.clone(),
            field.to_string(),
            token,
            owner,
            task,
            valid_until,
        ));
        // False if the validity ran out between the check and now.
        if !hold.add_guard(watchdog, valid_until) {
            return None;
        }
        q.shared.holds.insert(hold.clone());
        watch::watch(q, &hold);
        Some(LockGuard::new(q.clone(), hold, watchdog))
    }

    /// Raises the counter to `token` on every reachable node at once; true once a majority
    /// confirmed (any node's confirmation means its counter is now ≥ `token`). Every node, not
    /// only the granting majority: then all counters are equal again, every node mints the
    /// same next token, and the next acquisitions need no write-back, whichever majority
    /// answers first. A raised counter lives one grace period, so this leaves nothing behind.
    async fn write_back(&self, keys: &LockKeys, token: u64) -> bool {
        let q = &self.q;
        let ttl = q.grace_ms().to_string();
        let mut calls = Vec::new();
        for node in q.nodes.iter() {
            let Some(conn) = node.conn() else {
                continue;
            };
            let (name, counter, ttl, limit) = (
                keys.lock.clone(),
                keys.token.clone(),
                ttl.clone(),
                q.node_timeout,
            );
            calls.push(Box::pin(async move {
                let call = scripts::QUORUM_FENCE.run::<i64>(
                    pinned(&conn, &name),
                    vec![counter],
                    vec![token.to_string(), ttl],
                );
                matches!(tokio::time::timeout(limit, call).await, Ok(Ok(1)))
            }));
        }
        let mut acks = 0;
        race(&q.shared.tracker, calls, |ok| {
            acks += usize::from(ok);
            acks >= q.quorum
        })
        .await;
        acks >= q.quorum
    }

    /// Raises, in the background, the counter of every node whose vote comes after the quorum
    /// was reached and minted a token below `token`. No write-back round is sent when the
    /// granting majority minted `token` alike, so without this a node that was restarted empty
    /// (its counter seeded from its clock) and answered late would keep its lower counter; and
    /// if enough such nodes later form a majority of their own, a quorum whose tokens all come
    /// from clocks can mint below `token` (with the restart quarantine off). Keeping
    /// every counter equal after each grant restores what the write-back round gives.
    fn raise_late_counters(
        &self,
        mut late: LateVotes,
        conns: Vec<Option<Arc<Inner>>>,
        keys: &Arc<LockKeys>,
        token: u64,
    ) {
        let q = &self.q;
        let (keys, ttl, limit) = (keys.clone(), q.grace_ms().to_string(), q.node_timeout);
        q.shared.tracker.spawn(async move {
            while let Some((i, reply)) = late.recv().await {
                let Ok(Ok(reply)) = reply else { continue };
                let (Ballot::Granted(minted), Some(conn)) = (read_vote(&reply), &conns[i]) else {
                    continue;
                };
                if minted >= token {
                    continue;
                }
                // On the connection the vote came on: it lands after that vote.
                let call = scripts::QUORUM_FENCE.run::<i64>(
                    pinned(conn, &keys.lock),
                    vec![keys.token.clone()],
                    vec![token.to_string(), ttl.clone()],
                );
                let _ = tokio::time::timeout(limit, call).await;
            }
        });
    }
}

/// Where the votes an attempt stopped waiting for arrive.
type LateVotes = tokio::sync::mpsc::UnboundedReceiver<(usize, TimedReply<Vec<i64>>)>;

/// One node's vote: handed to fred behind this client's releases of the lock still on their
/// way to that node (`releases`), and asked once more if it overtook one of them after all.
async fn vote_on(
    conn: Arc<Inner>,
    keys: Arc<LockKeys>,
    args: Vec<String>,
    limit: Duration,
    in_flight: Call,
    releases: Pending,
) -> TimedReply<Vec<i64>> {
    // Handed over behind them, not after their answers: a slow node is not asked one round
    // trip later. Bounded apart from the vote (normally immediate).
    let _ = tokio::time::timeout(limit, releases.handed()).await;
    let vote = |args: Vec<String>| {
        let call = lock_scripts::ACQUIRE.run_tracked::<Vec<i64>>(
            pinned(&conn, &keys.lock),
            vec![keys.lock.clone(), keys.token.clone()],
            args,
            &in_flight,
        );
        tokio::time::timeout(limit, call)
    };
    // Whether the vote can overtake one of them at all: judged before it is sent (one may
    // answer between the vote's answer and a look afterwards).
    if releases.ended() {
        return vote(args).await;
    }
    let r = vote(args.clone()).await;
    // "Held" while one of those releases had not answered: the vote overtook it after all if
    // its EVALSHA met NOSCRIPT and its body went out behind the vote. Only then (otherwise
    // "held" is the answer): once they have answered, ask again, once. The first vote took
    // nothing, and a release of this attempt's field stops the second.
    if matches!(&r, Ok(Ok(v)) if v.first() == Some(&0))
        && tokio::time::timeout(limit, releases.resent())
            .await
            .unwrap_or(false)
    {
        let _ = tokio::time::timeout(limit, releases.answered()).await;
        if in_flight.may_send_more() {
            return vote(args).await;
        }
    }
    r
}

/// The votes of one attempt, counted as they come.
struct Tally {
    /// Each node's vote, by node index.
    votes: Vec<Vote>,
    granted: usize,
    /// Nodes that answered "held by another".
    held: usize,
    /// Nodes that did not grant (not asked, held, refused, no answer).
    no: usize,
    /// The tokens the granting nodes minted.
    tokens: Vec<u64>,
    /// The smallest remaining lease a holding node reported.
    min_pttl: Option<Duration>,
    /// A node's outcome is unknown (an error or no answer): it may have granted.
    clean_up: bool,
}

impl Tally {
    fn new(nodes: usize) -> Self {
        Tally {
            votes: vec![Vote::NotAwaited; nodes],
            granted: 0,
            held: 0,
            no: 0,
            tokens: Vec::new(),
            min_pttl: None,
            clean_up: false,
        }
    }

    /// Counts node `i`'s answer; true once a quorum is reached or has become impossible (the
    /// calls not awaited still run on their nodes).
    fn count(&mut self, q: &QuorumInner, i: usize, r: TimedReply<Vec<i64>>) -> bool {
        self.votes[i] = match r {
            Ok(Ok(reply)) => match read_vote(&reply) {
                Ballot::Granted(token) => {
                    self.granted += 1;
                    self.tokens.push(token);
                    Vote::Granted
                }
                Ballot::Held(ttl) => {
                    self.held += 1;
                    self.no += 1;
                    if let Some(t) = ttl {
                        self.min_pttl = Some(self.min_pttl.map_or(t, |m| m.min(t)));
                    }
                    Vote::HeldByAnother(ttl)
                }
                Ballot::Unexpected => {
                    self.no += 1;
                    Vote::Error(format!("unexpected reply {reply:?}"))
                }
            },
            Ok(Err(e)) => {
                self.no += 1;
                self.clean_up = true;
                if matches!(
                    e.kind(),
                    fred::error::ErrorKind::IO | fred::error::ErrorKind::Canceled
                ) {
                    q.nodes[i].suspect();
                    // Its set is dead and about to be replaced.
                    q.nodes[i].mark_reconnecting(true);
                }
                Vote::Error(e.to_string())
            }
            Err(_) => {
                self.no += 1;
                self.clean_up = true;
                Vote::Timeout(q.node_timeout)
            }
        };
        count_vote(match &self.votes[i] {
            Vote::Granted => "granted",
            Vote::HeldByAnother(_) => "held",
            Vote::Timeout(_) => "timeout",
            Vote::Quarantined { .. } => "quarantined",
            _ => "error",
        });
        self.granted >= q.quorum || self.votes.len() - self.no < q.quorum
    }

    /// The attempt's failure, each vote named by its node.
    fn failure(self, q: &QuorumInner) -> Failure {
        Failure {
            votes: q.name_votes(self.votes),
            granted: self.granted,
            held: self.held,
            min_pttl: self.min_pttl,
            too_late: None,
        }
    }
}

/// Counts one vote an attempt waited for, or a node it could not ask, by outcome
/// (`relock_quorum_votes_total{vote}`: `granted`, `held`, `timeout`, `error`, `quarantined`,
/// `unavailable`).
fn count_vote(vote: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("relock_quorum_votes_total", "vote" => vote).increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = vote;
}

/// One node's reply to an acquire vote, read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ballot {
    /// Granted, with the token the node minted.
    Granted(u64),
    /// Held by another, for this long (`None`: no expiry).
    Held(Option<Duration>),
    /// A shape the acquire script never sends.
    Unexpected,
}

/// Reads an acquire script's reply (`[1, token]` or `[0, pttl]`), of any length and values.
pub(crate) fn read_vote(reply: &[i64]) -> Ballot {
    match *reply {
        // A token is positive (a count from 1, or the clock in µs): anything else would wrap
        // to a fence above every later holder's.
        [1, token] if token > 0 => Ballot::Granted(token as u64),
        [0, pttl] => Ballot::Held(u64::try_from(pttl).ok().map(Duration::from_millis)),
        _ => Ballot::Unexpected,
    }
}
