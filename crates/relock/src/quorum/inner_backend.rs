//! The quorum's [`Backend`](crate::hold::backend::Backend): a guard's release and the
//! watchdog's renewal rounds, on every node (the watchdog itself is the shared one).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::client::inner::Inner;
use crate::client::scripts;
use crate::error::{Error, Result, Vote};
use crate::hold::backend;
use crate::hold::holds::Hold;
use crate::hold::meter;
use crate::quorum::inner::QuorumInner;
use crate::quorum::node::{pin_index, pinned, Eligibility};
use crate::quorum::race::{drift, race};
use crate::quorum::scripts::{QUORUM_PUTBACK, QUORUM_RENEW};

/// Locks per renewal script call, per node.
pub(crate) const RENEW_BATCH: usize = 100;

/// A quorum's holds are released and renewed on every node (see [`release`] and the renewal
/// rounds below); the watchdog itself is the shared one.
impl backend::Backend for QuorumInner {
    fn shared(&self) -> &backend::Shared {
        &self.shared
    }

    fn release(
        self: Arc<Self>,
        hold: Arc<Hold>,
        remaining: u32,
        lost: bool,
    ) -> backend::BoxFuture<Result<()>> {
        Box::pin(release(self, hold, remaining, lost))
    }

    fn renew_period(&self) -> Duration {
        self.watchdog_lease / 3
    }

    fn renewal_batches(&self, holds: Vec<Arc<Hold>>) -> Vec<Vec<Arc<Hold>>> {
        renewal_batches(self, holds)
    }

    fn renew_batch(self: Arc<Self>, batch: Vec<Arc<Hold>>) -> backend::BoxFuture<bool> {
        Box::pin(async move { renew_batch(&self, batch).await })
    }

    fn extend(self: Arc<Self>, hold: Arc<Hold>, lease: Duration) -> backend::BoxFuture<Result<()>> {
        Box::pin(extend(self, hold, lease))
    }
}

/// Lengthens one quorum hold's lease: the renewal round's call with `lease`, on every node,
/// needing a majority as a renewal does (the local lease then counts from the send time, less
/// the clock drift allowance). A restarted node's default quarantine covers the longer lease.
async fn extend(q: Arc<QuorumInner>, hold: Arc<Hold>, lease: Duration) -> Result<()> {
    let lost = || Error::LockLost {
        name: hold.keys.lock.clone(),
    };
    // After any renewal round or release in flight, as a renewal.
    let _gate = hold.gate.lock().await;
    if hold.is_lost() || hold.is_releasing() {
        return Err(lost());
    }
    q.note_lease(lease);
    let round = renew_holds(&q, std::slice::from_ref(&hold), lease, false).await;
    let Some(r) = round.into_iter().next() else {
        return Err(lost());
    };
    if hold.is_lost() {
        return Err(lost());
    }
    if r.renewed {
        return Ok(());
    }
    Err(Error::QuorumNotReached {
        name: hold.keys.lock.clone(),
        needed: q.quorum,
        granted: r.votes.iter().filter(|v| **v == Vote::Granted).count(),
        votes: q.name_votes(r.votes),
        hint: Some("the lease was not lengthened on the local clock; the hold stands until its current lease ends".into()),
    })
}

/// Releases one guard's worth of a quorum hold, `remaining` guards being left: one count on
/// every node, or the whole hold (its own field only) with the last guard.
pub(crate) async fn release(
    q: Arc<QuorumInner>,
    hold: Arc<Hold>,
    remaining: u32,
    lost: bool,
) -> Result<()> {
    // After any renewal round in flight (see `Hold::gate`).
    let _gate = hold.gate.lock().await;
    let lost_error = || Error::LockLost {
        name: hold.keys.lock.clone(),
    };
    if remaining > 0 && lost {
        return Err(lost_error());
    }
    // With the last guard, the whole hold goes, also when it was lost (clean-up of whatever
    // is left on the nodes): it names only this hold's field.
    let replies = q
        .release_everywhere(&hold.keys, &hold.field, remaining == 0, hold.token)
        .await;
    if remaining == 0 {
        q.shared.holds.remove(&hold);
        meter::released(hold.keys.kind.label(), hold.granted_at.elapsed());
    }
    let held = replies.iter().filter(|r| matches!(r, Ok(Some(_)))).count();
    if lost {
        Err(lost_error())
    } else if held > 0 {
        Ok(())
    } else if replies.iter().all(|r| matches!(r, Ok(None))) {
        if remaining == 0 || !hold.is_releasing() {
            hold.mark_lost("the release found the hold on no node");
            return Err(lost_error());
        }
        Ok(())
    } else {
        Err(Error::Connection {
            url: q
                .nodes
                .iter()
                .map(|n| n.name.as_str())
                .collect::<Vec<_>>()
                .join(","),
            cause: format!(
                "release of `{}` reached no node: {}",
                hold.keys.lock,
                replies
                    .iter()
                    .zip(&q.nodes)
                    .filter_map(|(r, n)| r.as_ref().err().map(|e| format!("{}: {e}", n.name)))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        })
    }
}

/// Groups holds by the connection their lock is pinned to (the same index on every node), in
/// batches of up to 100: one script call per batch per node, on the connection that also
/// carries the lock's acquire and release, so their order on each node is kept.
fn renewal_batches(q: &QuorumInner, holds: Vec<Arc<Hold>>) -> Vec<Vec<Arc<Hold>>> {
    let mut by_conn: std::collections::BTreeMap<usize, Vec<Arc<Hold>>> = Default::default();
    for h in holds {
        by_conn
            .entry(pin_index(&h.keys.lock, q.connections))
            .or_default()
            .push(h);
    }
    by_conn
        .into_values()
        .flat_map(|v| v.chunks(RENEW_BATCH).map(<[_]>::to_vec).collect::<Vec<_>>())
        .collect()
}

async fn renew_batch(q: &QuorumInner, batch: Vec<Arc<Hold>>) -> bool {
    // Hold every gate: a release waits for this round, and a hold released meanwhile is left
    // out (putting it back now would resurrect it).
    let mut gates = Vec::with_capacity(batch.len());
    let mut holds = Vec::with_capacity(batch.len());
    for h in &batch {
        let g = h.gate.lock().await;
        if h.wants_renewal() {
            gates.push(g);
            holds.push(h.clone());
        }
    }
    if holds.is_empty() {
        return true;
    }
    let round = renew_holds(q, &holds, q.watchdog_lease, true).await;
    drop(gates);
    round.iter().all(|r| r.renewed)
}

/// What one round did to one hold: renewed by a majority, and each node's answer.
struct Renewed {
    renewed: bool,
    votes: Vec<Vote>,
}

/// Renews `holds` (their gates held by the caller) for `lease` on every eligible node; a hold
/// that a majority renewed gets its local lease lengthened and is put back where the lock is
/// free, one that a majority lost (or whose lease ran out) is marked lost. `watchdog`: the
/// watchdog's round (counted and logged as renewals), else an extension (its caller reports).
async fn renew_holds(
    q: &QuorumInner,
    holds: &[Arc<Hold>],
    lease: Duration,
    watchdog: bool,
) -> Vec<Renewed> {
    let sent = Instant::now();
    let mut round = Round::new(q, holds.len());
    let calls = ask_every_node(q, holds, lease, &mut round.votes);
    // Every node's answer (bounded by the node timeout): each hold needs its own majority of
    // real renewals.
    race(&q.shared.tracker, calls, |(i, conn, reply)| {
        round.count(q, i, conn, reply);
        false
    })
    .await;
    let put_back = settle(q, holds, &mut round, (sent, lease), watchdog);
    put_back_where_free(q, put_back, lease).await;
    holds
        .iter()
        .zip(round.renewed.iter())
        .zip(round.votes)
        .map(|((h, n), votes)| Renewed {
            renewed: *n >= q.quorum && !h.is_lost(),
            votes,
        })
        .collect()
}

/// The keys and arguments of one call of `quorum_renew.lua` or `quorum_putback.lua` for
/// `holds` (the same layout): each hold's lock and counter, its field and token.
fn batch_call(q: &QuorumInner, holds: &[Arc<Hold>], lease: Duration) -> (Vec<String>, Vec<String>) {
    let mut keys = Vec::with_capacity(holds.len() * 2);
    let mut args = vec![lease.as_millis().to_string(), q.grace_ms().to_string()];
    for h in holds {
        keys.extend([h.keys.lock.clone(), h.keys.token.clone()]);
        args.extend([h.field.clone(), h.token.to_string()]);
    }
    (keys, args)
}

/// One renewal call per eligible node, each bounded by the node timeout: the node, its
/// connection and its reply (`None`: none in time, or an error). The others' votes are
/// recorded in `votes` (by hold, then node) as they stand.
#[allow(clippy::type_complexity)]
fn ask_every_node(
    q: &QuorumInner,
    holds: &[Arc<Hold>],
    lease: Duration,
    votes: &mut [Vec<Vote>],
) -> Vec<
    std::pin::Pin<
        Box<impl std::future::Future<Output = (usize, Arc<Inner>, Option<Vec<i64>>)> + use<>>,
    >,
> {
    let (keys, args) = batch_call(q, holds, lease);
    let mut calls = Vec::new();
    for (i, node) in q.nodes.iter().enumerate() {
        let conn = match node.eligibility() {
            Eligibility::Yes(conn) => conn,
            Eligibility::Quarantined(remaining) => {
                votes
                    .iter_mut()
                    .for_each(|v| v[i] = Vote::Quarantined { remaining });
                continue;
            }
            Eligibility::Unavailable(why) => {
                votes
                    .iter_mut()
                    .for_each(|v| v[i] = Vote::Error(why.clone()));
                continue;
            }
        };
        let (keys, args, limit) = (keys.clone(), args.clone(), q.node_timeout);
        let name = holds[0].keys.lock.clone();
        calls.push(Box::pin(async move {
            let call = QUORUM_RENEW.run::<Vec<i64>>(pinned(&conn, &name), keys, args);
            let reply = tokio::time::timeout(limit, call)
                .await
                .ok()
                .and_then(|r| r.ok());
            (i, conn, reply)
        }));
    }
    calls
}

/// One renewal round's answers, by hold.
struct Round {
    /// Nodes that renewed it.
    renewed: Vec<usize>,
    /// Nodes that do not have it: "free here" (2) and "someone else here" (0) alike.
    not_here: Vec<usize>,
    /// Nodes where the lock is free, to put it back on if a majority renewed it.
    free_on: Vec<Vec<(usize, Arc<Inner>)>>,
    /// Each node's answer, by hold then node.
    votes: Vec<Vec<Vote>>,
}

impl Round {
    fn new(q: &QuorumInner, holds: usize) -> Self {
        Round {
            renewed: vec![0; holds],
            not_here: vec![0; holds],
            free_on: vec![Vec::new(); holds],
            votes: vec![vec![Vote::NotAwaited; q.nodes.len()]; holds],
        }
    }

    /// Counts node `i`'s reply (one answer per hold, or none).
    fn count(&mut self, q: &QuorumInner, i: usize, conn: Arc<Inner>, reply: Option<Vec<i64>>) {
        let items = self.renewed.len();
        match reply.and_then(|r| scripts::one_each(r, items).ok()) {
            Some(r) => {
                for (h, v) in r.into_iter().enumerate() {
                    self.votes[h][i] = match v {
                        1 => {
                            self.renewed[h] += 1;
                            Vote::Granted
                        }
                        2 => {
                            self.not_here[h] += 1;
                            self.free_on[h].push((i, conn.clone()));
                            Vote::Error(
                                "the hold is not on this node (the lock is free here)".into(),
                            )
                        }
                        _ => {
                            self.not_here[h] += 1;
                            Vote::HeldByAnother(None)
                        }
                    };
                }
            }
            None => self
                .votes
                .iter_mut()
                .for_each(|v| v[i] = Vote::Timeout(q.node_timeout)),
        }
    }
}

/// Acts on a round sent at `sent` for `lease`: a hold that a majority renewed gets its local
/// lease lengthened, one that a majority lost (or whose lease ran out) is marked lost. Returns
/// where to put back which holds: only holds that a majority just renewed, and only where the
/// lock is free, repairing a minority that lost it (an empty restart). A hold that a majority
/// lost stays lost, whatever a minority says.
fn settle(
    q: &QuorumInner,
    holds: &[Arc<Hold>],
    round: &mut Round,
    (sent, lease): (Instant, Duration),
    watchdog: bool,
) -> BTreeMap<usize, (Arc<Inner>, Vec<Arc<Hold>>)> {
    let now = Instant::now();
    let mut put_back: BTreeMap<usize, (Arc<Inner>, Vec<Arc<Hold>>)> = Default::default();
    for (idx, h) in holds.iter().enumerate() {
        let n = round.renewed[idx];
        if n >= q.quorum && now < h.valid_until() {
            if watchdog {
                meter::renewed(h.keys.kind.label(), 1);
            }
            h.renewed(sent, lease.saturating_sub(drift(lease)));
            for (node, conn) in round.free_on[idx].drain(..) {
                put_back
                    .entry(node)
                    .or_insert_with(|| (conn, Vec::new()))
                    .1
                    .push(h.clone());
            }
        } else {
            if watchdog {
                meter::renewal_failed(h.keys.kind.label(), 1);
                tracing::warn!(lock = %h.keys.lock, renewed = n, needed = q.quorum, "quorum renewal failed");
            }
            if round.not_here[idx] > q.nodes.len() - q.quorum || now >= h.valid_until() {
                // A majority no longer has it (deleted, force-unlocked, expired), or the
                // lease ran out locally while renewals failed.
                h.mark_lost("a majority of nodes no longer have it, or its validity ran out while renewals failed");
            }
        }
    }
    put_back
}

/// Puts the holds back on each node where the lock was free (`quorum_putback.lua`, one call
/// per node, each bounded by the node timeout), waiting for every answer.
async fn put_back_where_free(
    q: &QuorumInner,
    put_back: BTreeMap<usize, (Arc<Inner>, Vec<Arc<Hold>>)>,
    lease: Duration,
) {
    let mut repairs = Vec::new();
    for (_, (conn, hs)) in put_back {
        let (keys, args) = batch_call(q, &hs, lease);
        let (name, limit) = (hs[0].keys.lock.clone(), q.node_timeout);
        repairs.push(Box::pin(async move {
            let call = QUORUM_PUTBACK.run::<Vec<i64>>(pinned(&conn, &name), keys, args);
            let _ = tokio::time::timeout(limit, call).await;
        }));
    }
    race(&q.shared.tracker, repairs, |()| false).await;
}
