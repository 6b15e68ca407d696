//! One Redlock attempt of a [`QuorumLock`](crate::QuorumLock): votes from every node at once
//! with an early return, the validity, the release everywhere on failure, and the token
//! write-back (a round, or late counters raised in the background).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::client::scripts;
use crate::error::{NodeVote, Result, Vote};
use crate::hold::guard::LockGuard;
use crate::hold::holds::Hold;
use crate::hold::kind::LockKeys;
use crate::hold::owner::Owner;
use crate::quorum::lock::{Failure, Outcome, QuorumLock, TimedReply};
use crate::quorum::node::pinned;
use crate::quorum::race::{drift, race, race_keeping_late};

impl QuorumLock {
    /// One Redlock attempt for a fresh hold under `field`: votes from every node at once,
    /// returning as soon as a quorum is reached or has become impossible.
    pub(crate) async fn attempt(
        &self,
        keys: &Arc<LockKeys>,
        field: String,
        (owner, task): (Option<Owner>, crate::hold::reentry::Caller),
        lease: Duration,
    ) -> Result<Outcome> {
        let q = &self.q;
        let field = field.as_str();
        // A release of this lock by this client is in flight: the lock is about to be free,
        // so let it land first (an optimisation only: it cannot touch this attempt's field).
        if let Some(h) = q.shared.holds.find(&keys.lock, |h| h.is_releasing()) {
            let mut gone = std::pin::pin!(h.gone.notified());
            gone.as_mut().enable();
            if q.shared.holds.contains(&h) {
                let _ = tokio::time::timeout(q.node_timeout * 4, gone).await;
            }
        }
        let start = Instant::now();
        let n = q.nodes.len();
        let mut votes: Vec<Vote> = vec![Vote::NotAwaited; n];
        let mut eligible = q.eligible(&mut votes);
        // Nodes left out before anything is sent still count as votes against the quorum.
        for v in &votes {
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
        let mut calls = Vec::with_capacity(eligible.len());
        let mut conns = vec![None; n];
        for (i, conn) in eligible {
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
                // Handed over behind them, not after their answers: a slow node is not asked
                // one round trip later. Bounded apart from the vote (normally immediate).
                let _ = tokio::time::timeout(limit, releases.handed()).await;
                let vote = |args: Vec<String>| {
                    let call = scripts::ACQUIRE.run_tracked::<Vec<i64>>(
                        pinned(&conn, &keys.lock),
                        vec![keys.lock.clone(), keys.token.clone()],
                        args,
                        &in_flight,
                    );
                    tokio::time::timeout(limit, call)
                };
                // Whether the vote can overtake one of them at all: judged before it is sent
                // (one may answer between the vote's answer and a look afterwards).
                if releases.ended() {
                    return (i, vote(args).await);
                }
                let r = vote(args.clone()).await;
                // "Held" while one of those releases had not answered: the vote overtook it
                // after all if its EVALSHA met NOSCRIPT and its body went out behind the vote.
                // Only then (otherwise "held" is the answer): once they have answered, ask
                // again, once. The first vote took nothing, and a release of this attempt's
                // field stops the second.
                if matches!(&r, Ok(Ok(v)) if v.first() == Some(&0))
                    && tokio::time::timeout(limit, releases.resent())
                        .await
                        .unwrap_or(false)
                {
                    let _ = tokio::time::timeout(limit, releases.answered()).await;
                    if in_flight.may_send_more() {
                        return (i, vote(args).await);
                    }
                }
                (i, r)
            }));
        }
        let pending = calls.len();
        let (mut granted, mut held, mut no) = (0usize, 0usize, n - pending);
        let mut tokens = Vec::new();
        let mut min_pttl: Option<Duration> = None;
        let mut clean_up = false;
        let mut late = None;
        if no + q.quorum <= n {
            late = Some(
                race_keeping_late(&q.shared.tracker, calls, |(i, r)| {
                    votes[i] = match r {
                        Ok(Ok(reply)) => match read_vote(&reply) {
                            Ballot::Granted(token) => {
                                granted += 1;
                                tokens.push(token);
                                Vote::Granted
                            }
                            Ballot::Held(ttl) => {
                                held += 1;
                                no += 1;
                                if let Some(t) = ttl {
                                    min_pttl = Some(min_pttl.map_or(t, |m| m.min(t)));
                                }
                                Vote::HeldByAnother(ttl)
                            }
                            Ballot::Unexpected => {
                                no += 1;
                                Vote::Error(format!("unexpected reply {reply:?}"))
                            }
                        },
                        Ok(Err(e)) => {
                            no += 1;
                            clean_up = true;
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
                            no += 1;
                            clean_up = true;
                            Vote::Timeout(q.node_timeout)
                        }
                    };
                    count_vote(match &votes[i] {
                        Vote::Granted => "granted",
                        Vote::HeldByAnother(_) => "held",
                        Vote::Timeout(_) => "timeout",
                        Vote::Quarantined { .. } => "quarantined",
                        _ => "error",
                    });
                    // Stop as soon as a quorum is reached or has become impossible; the calls
                    // not awaited still run on their nodes.
                    granted >= q.quorum || n - no < q.quorum
                })
                .await,
            );
        } else {
            // Never sent: their registrations must not hold up this attempt's release.
            drop(calls);
        }
        let votes: Vec<NodeVote> = votes
            .into_iter()
            .zip(&q.nodes)
            .map(|(vote, node)| NodeVote {
                node: node.name.clone(),
                vote,
            })
            .collect();
        let validity = |now: Instant| {
            lease
                .saturating_sub(now - start)
                .saturating_sub(drift(lease))
        };
        let mut ok = granted >= q.quorum && !validity(Instant::now()).is_zero();
        let token = tokens.iter().copied().max().unwrap_or(0);
        // Any later quorum must meet a node whose counter has seen the token, so that it mints
        // above it. When every granting node (a majority) minted this very token, their
        // counters already hold it: no write-back round. That is the common case, since the
        // last write-back left the counters equal and each grant adds one to each. Otherwise
        // the token is written back to a majority first.
        if ok && tokens.iter().any(|t| *t != token) {
            ok = self.write_back(keys, token).await && !validity(Instant::now()).is_zero();
        } else if let (true, Some(late)) = (ok, late) {
            self.raise_late_counters(late, conns, keys, token);
        }
        let watchdog = self.lease.is_none();
        if ok {
            let valid_until = start + lease.saturating_sub(drift(lease));
            let hold = Arc::new(Hold::new(
                keys.clone(),
                field.to_string(),
                token,
                owner,
                task,
                valid_until,
            ));
            // False if the validity ran out between the check above and now.
            if hold.add_guard(watchdog, valid_until) {
                q.shared.holds.insert(hold.clone());
                crate::quorum::watch::watch(q, &hold);
                return Ok(Outcome::Acquired(LockGuard::new(q.clone(), hold, watchdog)));
            }
        }
        // Not acquired: take back whatever this attempt may have been granted, under its own
        // field (nothing to take back if every node answered, and none granted).
        if ok || granted > 0 || clean_up || pending > granted + held {
            q.release_everywhere(keys, field, true, 0).await;
        }
        Ok(Outcome::Failed(Failure {
            votes,
            granted,
            held,
            min_pttl,
        }))
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
                let call = crate::quorum::scripts::QUORUM_FENCE.run::<i64>(
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
        mut late: tokio::sync::mpsc::UnboundedReceiver<(usize, TimedReply<Vec<i64>>)>,
        conns: Vec<Option<Arc<crate::client::handle::Inner>>>,
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
                let call = crate::quorum::scripts::QUORUM_FENCE.run::<i64>(
                    pinned(conn, &keys.lock),
                    vec![keys.token.clone()],
                    vec![token.to_string(), ttl.clone()],
                );
                let _ = tokio::time::timeout(limit, call).await;
            }
        });
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
