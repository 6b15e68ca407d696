//! The quorum's [`Backend`](crate::hold::backend::Backend): a guard's release and the
//! watchdog's renewal rounds, on every node (the watchdog itself is the shared one).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::client::handle::Inner;
use crate::error::{Error, Result};
use crate::hold::holds::Hold;
use crate::quorum::backend::QuorumInner;
use crate::quorum::node::{pin_index, pinned, Eligibility};
use crate::quorum::race::{drift, race};

/// Locks per renewal script call, per node.
pub(crate) const RENEW_BATCH: usize = 100;

/// A quorum's holds are released and renewed on every node (see [`release`] and the renewal
/// rounds below); the watchdog itself is the shared one.
impl crate::hold::backend::Backend for QuorumInner {
    fn shared(&self) -> &crate::hold::backend::Shared {
        &self.shared
    }

    fn release(
        self: Arc<Self>,
        hold: Arc<Hold>,
        remaining: u32,
        lost: bool,
    ) -> crate::hold::backend::BoxFuture<Result<()>> {
        Box::pin(release(self, hold, remaining, lost))
    }

    fn renew_period(&self) -> Duration {
        self.watchdog_lease / 3
    }

    fn renewal_batches(&self, holds: Vec<Arc<Hold>>) -> Vec<Vec<Arc<Hold>>> {
        renewal_batches(self, holds)
    }

    fn renew_batch(
        self: Arc<Self>,
        batch: Vec<Arc<Hold>>,
    ) -> crate::hold::backend::BoxFuture<bool> {
        Box::pin(async move { renew_batch(&self, batch).await })
    }
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
        crate::hold::meter::released(hold.keys.kind.label(), hold.granted_at.elapsed());
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
    let lease = q.watchdog_lease;
    let sent = Instant::now();
    let mut keys = Vec::with_capacity(holds.len() * 2);
    let mut args = vec![lease.as_millis().to_string(), q.grace_ms().to_string()];
    for h in &holds {
        keys.extend([h.keys.lock.clone(), h.keys.token.clone()]);
        args.extend([h.field.clone(), h.token.to_string()]);
    }
    let mut calls = Vec::new();
    for (i, node) in q.nodes.iter().enumerate() {
        let Eligibility::Yes(conn) = node.eligibility() else {
            continue;
        };
        let (keys, args, limit) = (keys.clone(), args.clone(), q.node_timeout);
        let name = holds[0].keys.lock.clone();
        calls.push(Box::pin(async move {
            let call = crate::quorum::scripts::QUORUM_RENEW.run::<Vec<i64>>(
                pinned(&conn, &name),
                keys,
                args,
            );
            let reply = tokio::time::timeout(limit, call)
                .await
                .ok()
                .and_then(|r| r.ok());
            (i, conn, reply)
        }));
    }
    // Every node's answer (bounded by the node timeout): each hold needs its own majority of
    // real renewals. "Free here" (2) and "someone else here" (0) are both "not here".
    let mut renewed = vec![0usize; holds.len()];
    let mut not_here = vec![0usize; holds.len()];
    let mut free_on: Vec<Vec<(usize, Arc<Inner>)>> = vec![Vec::new(); holds.len()];
    race(&q.shared.tracker, calls, |(i, conn, reply)| {
        if let Some(r) = reply.filter(|r| r.len() == renewed.len()) {
            for (h, v) in r.into_iter().enumerate() {
                match v {
                    1 => renewed[h] += 1,
                    2 => {
                        not_here[h] += 1;
                        free_on[h].push((i, conn.clone()));
                    }
                    _ => not_here[h] += 1,
                }
            }
        }
        false
    })
    .await;
    let now = Instant::now();
    let mut ok = true;
    // Put back only holds that a majority just renewed, and only where the lock is free:
    // repairing a minority that lost it (an empty restart). A hold that a majority lost stays
    // lost, whatever a minority says.
    let mut put_back: std::collections::BTreeMap<usize, (Arc<Inner>, Vec<Arc<Hold>>)> =
        Default::default();
    for (idx, h) in holds.iter().enumerate() {
        let n = renewed[idx];
        if n >= q.quorum && now < h.valid_until() {
            crate::hold::meter::renewed(h.keys.kind.label(), 1);
            h.renewed(sent, lease.saturating_sub(drift(lease)));
            for (node, conn) in free_on[idx].drain(..) {
                put_back
                    .entry(node)
                    .or_insert_with(|| (conn, Vec::new()))
                    .1
                    .push(h.clone());
            }
        } else {
            ok = false;
            crate::hold::meter::renewal_failed(h.keys.kind.label(), 1);
            tracing::warn!(lock = %h.keys.lock, renewed = n, needed = q.quorum, "quorum renewal failed");
            if not_here[idx] > q.nodes.len() - q.quorum || now >= h.valid_until() {
                // A majority no longer has it (deleted, force-unlocked, expired), or the
                // lease ran out locally while renewals failed.
                h.mark_lost("a majority of nodes no longer have it, or its validity ran out while renewals failed");
            }
        }
    }
    let mut repairs = Vec::new();
    for (_, (conn, hs)) in put_back {
        let mut keys = Vec::with_capacity(hs.len() * 2);
        let mut args = vec![lease.as_millis().to_string(), q.grace_ms().to_string()];
        for h in &hs {
            keys.extend([h.keys.lock.clone(), h.keys.token.clone()]);
            args.extend([h.field.clone(), h.token.to_string()]);
        }
        let (name, limit) = (hs[0].keys.lock.clone(), q.node_timeout);
        repairs.push(Box::pin(async move {
            let call = crate::quorum::scripts::QUORUM_PUTBACK.run::<Vec<i64>>(
                pinned(&conn, &name),
                keys,
                args,
            );
            let _ = tokio::time::timeout(limit, call).await;
        }));
    }
    race(&q.shared.tracker, repairs, |()| false).await;
    drop(gates);
    ok
}
