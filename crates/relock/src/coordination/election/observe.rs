//! [`Election::observe`] and its stream, [`Observation`]: the election's changes as
//! [`LeaderEvent`]s, from its record read again on each message, after a reconnect and when
//! the leader's lease would end.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::coordination::election::handle::Election;
use crate::coordination::election::record::{Leader, Snapshot};
use crate::error::{Error, Result};
use crate::exclusive::channel::LOCK_CHANNEL;
use crate::hold::wake::{Format, Waiters, Waking};

/// A change of an election's leader, as [`Election::observe`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaderEvent {
    /// A leader (a new term). The first event of an observation is the current leader, if any.
    Elected(Leader),
    /// The leader of the same term stated a new value
    /// ([`Leadership::proclaim`](crate::Leadership::proclaim)).
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

impl Election {
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
    /// and subscription end). A connection error or a timeout is retried (the subscription
    /// made, or the record read, again, backing off to a second); an error retrying cannot
    /// mend (a key of another type under the election's names, a command the ACL user may not
    /// run) is its last item.
    pub fn observe(&self) -> Observation {
        self.observe_since(None)
    }

    /// [`observe`](Self::observe), from a state the caller already has (what
    /// [`leader`](Self::leader) returned): the first event is what changed since `known`
    /// (nothing, if nothing did), so that a change between that read and the observation's
    /// first is never lost. `observe()` is `observe_since(None)`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// let election = client.election("doctest:observe_since");
    /// let now = election.leader().await?;
    /// println!("leader now: {:?}", now.as_ref().map(|l| &l.value));
    /// let mut changes = election.observe_since(now);
    /// let leading = election.campaign("a").await?;
    /// assert!(matches!(changes.next().await, Some(Ok(relock::LeaderEvent::Elected(_)))));
    /// leading.resign().await?;
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub fn observe_since(&self, known: Option<Leader>) -> Observation {
        let (tx, rx) = mpsc::channel(64);
        let this = self.clone();
        self.inner
            .shared()
            .tracker
            .spawn(async move { this.observe_into(tx, known).await });
        Observation { rx }
    }

    async fn observe_into(self, tx: mpsc::Sender<Result<LeaderEvent>>, known: Option<Leader>) {
        // The election's channel (elected, value, resigned) and the lock's (a release, a
        // handoff, a force-unlock: a leader deposed without a word on the election's channel).
        let subscribe = || async {
            let lock_channel = self.lock.key_names()?.channel;
            let pubsub = &self.inner.pubsub();
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
        // `stopping` is set when shutdown begins (shutdown waits for this task).
        let mut shutdown = self.inner.stopping();
        // A subscription that fails for a while (a stall, a reconnect, a failover) is tried
        // again, backing off to a second; one that retrying cannot mend ends the observation.
        let mut pause = Duration::from_millis(50);
        let (sub, lock_sub) = loop {
            match subscribe().await {
                Ok(subs) => break subs,
                Err(Error::Shutdown) => return,
                Err(e) if !e.is_transient() => {
                    let _ = tx.send(Err(e)).await;
                    return;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "election observer: subscribing failed; trying again");
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => {}
                        _ = tx.closed() => return,
                        _ = shutdown.wait_for(|s| *s) => return,
                    }
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
            }
        };
        let mut last: Option<Leader> = known;
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
                Err(e) if !e.is_transient() => {
                    let _ = tx.send(Err(e)).await;
                    return;
                }
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

#[cfg(test)]
mod tests {
    use super::*;

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
