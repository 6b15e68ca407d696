//! `QuorumInner`: one connection set per independent master, the restart quarantine, release
//! everywhere, and the reconnect and uptime tasks. The quorum's `Backend` (a guard's release,
//! the renewal) is in `inner_backend`; the acquire algorithm in `lock` and `vote`.
//!
//! Each node is an ordinary single-server client (its pool and subscriber), sharing one
//! client id so that an owner's field is the same on every node. Every command of one lock on
//! one node goes over the same connection (picked by the lock name), so a release sent after an
//! acquire can never overtake it, even when the acquire's reply was not awaited.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use fred::interfaces::ClientLike;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::client::builder::ClientBuilder;
use crate::client::inner::Inner;
use crate::client::retry;
use crate::error::{Error, Result};
use crate::hold::backend;
use crate::hold::every;
use crate::hold::holds::FieldMaker;
use crate::hold::kind::LockKeys;
use crate::hold::reentry::Reentrancy;
use crate::quorum::in_flight;
use crate::quorum::in_flight::Call;
use crate::quorum::node::{pinned, Eligibility, Node};
use crate::quorum::scripts;

/// How often every node's uptime is checked for a restart.
const UPTIME_CHECK: Duration = Duration::from_millis(250);

#[derive(Debug)]
pub(crate) struct QuorumInner {
    /// Its id, its holds and its background work (every node's part of a release too).
    pub(crate) shared: backend::Shared,
    /// Makes every hold's own field.
    pub(crate) fields: FieldMaker,
    pub(crate) reentrancy: Reentrancy,
    pub(crate) nodes: Vec<Node>,
    pub(crate) quorum: usize,
    pub(crate) client_id: String,
    pub(crate) node_timeout: Duration,
    pub(crate) watchdog_lease: Duration,
    pub(crate) quarantine: Option<Duration>,
    /// The longest lease used so far (ms), the default quarantine.
    pub(crate) max_lease_ms: AtomicU64,
    pub(crate) counter_grace: Duration,
    /// Connections per node (every node's pool has as many).
    pub(crate) connections: usize,
    pub(crate) shutting_down: AtomicBool,
    /// When shutdown stops waiting for releases being sent again (`closing`).
    pub(crate) closing_at: Mutex<Option<Instant>>,
    /// Votes and re-entries still running, which a release of their field on their node
    /// waits for (see `in_flight`).
    pub(crate) in_flight: in_flight::InFlight,
    /// Releases on their way, by lock name and node, until each has its first answer (or
    /// none in time). A vote of a later attempt on that node is handed to fred only after
    /// them, so it is queued behind them on the lock's pinned connection: otherwise it could
    /// overtake one (sent from a task that has not run yet) and find the lock still held by
    /// the hold just released. A vote that was still overtaken (the release met NOSCRIPT and
    /// its body followed a round trip later) and was answered "held" is sent once more once
    /// those releases have answered.
    pub(crate) releasing: in_flight::InFlight,
    /// Whether holds are watched (`quorum_watch`), and how many are now.
    pub(crate) watch_holds: bool,
    pub(crate) watched: std::sync::atomic::AtomicUsize,
    pub(crate) shutdown: watch::Sender<bool>,
    pub(crate) builder: ClientBuilder,
}

impl QuorumInner {
    pub(crate) fn check_running(&self) -> Result<()> {
        if self.shutting_down.load(Ordering::SeqCst) {
            Err(Error::Shutdown)
        } else {
            Ok(())
        }
    }

    pub(crate) fn grace_ms(&self) -> u64 {
        self.counter_grace.as_millis() as u64
    }

    /// The nodes that may vote now, with their connections; `votes` records why each of the
    /// others cannot (quarantined, or unavailable).
    pub(crate) fn eligible(&self, votes: &mut [crate::error::Vote]) -> Vec<(usize, Arc<Inner>)> {
        use crate::error::Vote;
        let mut out = Vec::with_capacity(self.nodes.len());
        for (i, node) in self.nodes.iter().enumerate() {
            match node.eligibility() {
                Eligibility::Yes(c) => out.push((i, c)),
                Eligibility::Quarantined(remaining) => votes[i] = Vote::Quarantined { remaining },
                Eligibility::Unavailable(why) => votes[i] = Vote::Error(why),
            }
        }
        out
    }

    /// Each node's vote (by node index), named by its node, for an error.
    pub(crate) fn name_votes(&self, votes: Vec<crate::error::Vote>) -> Vec<crate::error::NodeVote> {
        votes
            .into_iter()
            .zip(&self.nodes)
            .map(|(vote, node)| crate::error::NodeVote {
                node: node.name.clone(),
                vote,
            })
            .collect()
    }

    /// Records a lease in use, for the default quarantine.
    pub(crate) fn note_lease(&self, lease: Duration) {
        self.max_lease_ms
            .fetch_max(lease.as_millis() as u64, Ordering::SeqCst);
    }

    pub(crate) fn quarantine(&self) -> Duration {
        self.quarantine
            .unwrap_or_else(|| Duration::from_millis(self.max_lease_ms.load(Ordering::SeqCst)))
    }

    /// Whether the quarantine setting was left at its default.
    pub(crate) fn quarantine_is_default(&self) -> bool {
        self.quarantine.is_none()
    }

    /// Checks every connected node's uptime and run id (INFO server) and sets when it may vote.
    pub(crate) async fn check_uptimes(self: &Arc<Self>, limit: Duration, every_connection: bool) {
        let mut checks = JoinSet::new();
        for i in 0..self.nodes.len() {
            let this = self.clone();
            checks.spawn(async move { this.check_uptime_on(i, limit, every_connection).await });
        }
        while checks.join_next().await.is_some() {}
    }

    /// The periodic checks' limit: a node that does not answer within it stops voting.
    fn uptime_check_limit(&self) -> Duration {
        self.node_timeout.max(Duration::from_millis(200))
    }

    /// Reads the uptime and run id of node `i` (INFO server) and sets when it may vote. With
    /// `every_connection` (a new set of connections), each connection is asked, and they must
    /// all have reached the same instance. A node with a dead connection is replaced whole.
    async fn check_uptime_on(self: &Arc<Self>, i: usize, limit: Duration, every_connection: bool) {
        let node = &self.nodes[i];
        let Some(conn) = node.conn() else { return };
        let quarantine = self.quarantine();
        let Some(answers) = self.ask_uptimes(i, &conn, limit, every_connection).await else {
            return;
        };
        let Some((uptime, run_id)) = answers.iter().min_by_key(|(u, _)| *u).cloned() else {
            return;
        };
        if answers.iter().any(|(_, r)| *r != run_id) {
            // The server restarted while the connections were being made: start again.
            node.suspect();
            self.replace_dead(i, &conn);
            return;
        }
        node.note_instance(&conn, uptime, run_id, quarantine);
    }

    /// Each asked connection's answer to INFO server (`every_connection`: every connection of
    /// the set, else one): its uptime and run id. `None` once one does not answer in time or
    /// well (the node stops voting; a broken connection has its set replaced).
    async fn ask_uptimes(
        self: &Arc<Self>,
        i: usize,
        conn: &Arc<Inner>,
        limit: Duration,
        every_connection: bool,
    ) -> Option<Vec<(u64, String)>> {
        let node = &self.nodes[i];
        let asked: Vec<&fred::clients::Client> = if every_connection {
            conn.pool().clients().iter().collect()
        } else {
            vec![conn.conn()]
        };
        let mut answers = Vec::with_capacity(asked.len());
        for c in asked {
            let info =
                tokio::time::timeout(limit, c.info::<String>(Some(fred::types::InfoKind::Server)))
                    .await;
            let info = match info {
                Ok(Ok(info)) => info,
                Ok(Err(e)) => {
                    tracing::debug!(node = %node.name, error = %e, "uptime check failed");
                    node.suspect();
                    // A broken connection never comes back: replace the set. A refusal (an
                    // ACL without INFO, BUSY) is the server's answer: the node waits.
                    if matches!(
                        e.kind(),
                        fred::error::ErrorKind::IO | fred::error::ErrorKind::Canceled
                    ) {
                        self.replace_dead(i, conn);
                    }
                    return None;
                }
                Err(_) => {
                    // Slow or paused: its connections may still be good; it votes again once
                    // a check answers.
                    node.suspect();
                    return None;
                }
            };
            let Some(answer) = uptime_and_run_id(&info) else {
                node.suspect();
                return None;
            };
            answers.push(answer);
        }
        Some(answers)
    }

    /// Whether releases being sent again should stop: the nodes are closed, or shutdown's
    /// first settle wait is over.
    fn closing(&self) -> bool {
        *self.shutdown.borrow()
            || self
                .closing_at
                .lock()
                .unwrap()
                .is_some_and(|t| Instant::now() >= t)
    }

    /// Node `i`'s connections (`dead`, one of them failed) can never come back to the same
    /// server instance (they do not reconnect by themselves): the node stops voting, they are
    /// closed, and a new set is made and checked (`spawn_reconnect`).
    fn replace_dead(self: &Arc<Self>, i: usize, dead: &Arc<Inner>) {
        let node = &self.nodes[i];
        {
            let mut conn = node.conn.write().unwrap();
            if !conn.as_ref().is_some_and(|c| Arc::ptr_eq(c, dead)) {
                return; // already replaced
            }
            node.suspect();
            node.mark_reconnecting(true);
            *conn = None;
        }
        tracing::debug!(node = %node.name, "connection lost; reconnecting, then checking the node's run id before it votes");
        let old = dead.clone();
        tokio::spawn(async move { crate::Client { inner: old }.shutdown().await });
        // A set that fails again soon after it was made waits longer each time (a server
        // that drops every new connection must not get a connection storm).
        let delay = {
            let mut st = node.state.lock().unwrap();
            let now = Instant::now();
            let soon = st
                .replaced_at
                .is_some_and(|t| now - t < Duration::from_secs(2));
            st.replace_delay = if soon {
                (st.replace_delay * 2).clamp(Duration::from_millis(50), Duration::from_secs(1))
            } else {
                Duration::ZERO
            };
            st.replaced_at = Some(now);
            st.replace_delay
        };
        spawn_reconnect(Arc::downgrade(self), i, self.shutdown.subscribe(), delay);
    }

    /// Runs `quorum_release.lua` for `field` on every node at once (including the ones that
    /// may not vote); returns each node's reply. `token`: the hold's, which each node's
    /// counter is raised to in the same script (0 for an attempt's clean-up).
    pub(crate) async fn release_everywhere(
        self: &Arc<Self>,
        keys: &LockKeys,
        field: &str,
        all: bool,
        token: u64,
    ) -> Vec<std::result::Result<Option<i64>, String>> {
        // Each node's release runs in its own task to the end: only the wait stops at a
        // majority. (A dropped command future may never be written, and a node must not keep
        // a lock that was released everywhere else.)
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        for (i, node) in self.nodes.iter().enumerate() {
            // Before anything else (even for a node without connections now): the votes and
            // re-entries of this field on this node send nothing more.
            let after = self.in_flight.release(field, i, all);
            let Some(conn) = node.conn() else { continue };
            // Registered before `unlock()` can return; says when its first call is with fred,
            // and ends with that call's outcome.
            let releasing = self.releasing.start(&keys.lock, i);
            let call = ReleaseCall::new(keys, field, all, token, self);
            let tx = tx.clone();
            let q = Arc::downgrade(self);
            self.shared.tracker.spawn(async move {
                // After the votes and re-entries of this field on this node: their tasks may
                // not even have sent them yet.
                after.wait().await;
                // The registration goes with the call's end.
                let first = call.send(conn.clone(), Some(releasing)).await;
                let unknown = matches!(first, Sent::Unknown(_));
                let _ = tx.send((i, first.into_reply()));
                // The caller waits for a majority's answers or for every sender to go: what
                // follows must not keep it waiting.
                drop(tx);
                if unknown && all {
                    resend_on_a_new_set(q, i, conn, call).await;
                }
            });
        }
        drop(tx);
        self.majority_of_replies(rx).await
    }

    /// The nodes' replies to a release, as they come, until a majority has answered or every
    /// node's task has sent what it had; the others are "not awaited".
    async fn majority_of_replies(
        &self,
        mut rx: tokio::sync::mpsc::UnboundedReceiver<(usize, NodeReply)>,
    ) -> Vec<NodeReply> {
        let mut out = vec![Err("not awaited".to_string()); self.nodes.len()];
        let mut answered = 0;
        while answered < self.quorum {
            let Some((i, r)) = rx.recv().await else { break };
            answered += usize::from(r.is_ok());
            out[i] = r;
        }
        out
    }
}

/// One node's reply to a release: its answer, or why there was none.
type NodeReply = std::result::Result<Option<i64>, String>;

/// One node's release call (`quorum_release.lua`), as often as it is sent.
#[derive(Clone)]
struct ReleaseCall {
    keys: Vec<String>,
    args: Vec<String>,
    limit: Duration,
}

/// The outcome of one release call: answered, refused (an error reply), or unknown (no answer
/// in time, or the connection broke).
enum Sent {
    Answered(Option<i64>),
    Refused(String),
    Unknown(String),
}

impl Sent {
    fn into_reply(self) -> NodeReply {
        match self {
            Sent::Answered(r) => Ok(r),
            Sent::Refused(e) | Sent::Unknown(e) => Err(e),
        }
    }
}

impl ReleaseCall {
    fn new(keys: &LockKeys, field: &str, all: bool, token: u64, q: &QuorumInner) -> Self {
        let mode = if all { "all" } else { "1" };
        ReleaseCall {
            keys: vec![keys.lock.clone(), keys.token.clone()],
            args: vec![
                field.to_string(),
                mode.into(),
                "publish".into(),
                keys.channel.clone(),
                token.to_string(),
                q.grace_ms().to_string(),
            ],
            limit: q.node_timeout,
        }
    }

    /// Sends it once on `conn`, on the lock's pinned connection, bounded by the node timeout;
    /// `tracked`: its registration in `releasing`, told when it is with fred.
    async fn send(&self, conn: Arc<Inner>, tracked: Option<Call>) -> Sent {
        let (keys, args) = (self.keys.clone(), self.args.clone());
        let client = pinned(&conn, &keys[0]);
        let call = async {
            match &tracked {
                Some(t) => {
                    scripts::QUORUM_RELEASE
                        .run_tracked::<Option<i64>>(client, keys, args, t)
                        .await
                }
                None => {
                    scripts::QUORUM_RELEASE
                        .run::<Option<i64>>(client, keys, args)
                        .await
                }
            }
        };
        match tokio::time::timeout(self.limit, call).await {
            Ok(Ok(r)) => Sent::Answered(r),
            Ok(Err(e))
                if matches!(
                    e.kind(),
                    fred::error::ErrorKind::IO | fred::error::ErrorKind::Canceled
                ) =>
            {
                Sent::Unknown(e.to_string())
            }
            Ok(Err(e)) => Sent::Refused(e.to_string()),
            Err(_) => Sent::Unknown(format!(
                "no answer within {}",
                crate::error::Human(self.limit)
            )),
        }
    }
}

/// A whole hold's release with no known outcome on node `i`: on connections that are still up
/// it runs in its turn (they never reconnect), but if they broke with it on the way, the hold
/// would stay on this node for its lease, and with another node down or quarantined no
/// majority could form for anyone meanwhile. So once the node's set has been replaced, it is
/// sent again on the new one, until it answers, the longest lease in use has passed, or the
/// client shuts down. It names only this hold's field, so a repeat is harmless (nil).
async fn resend_on_a_new_set(
    q: Weak<QuorumInner>,
    i: usize,
    sent_on: Arc<Inner>,
    call: ReleaseCall,
) {
    if !set_broke(&q, &sent_on).await {
        return;
    }
    let mut sent_on = sent_on;
    let started = Instant::now();
    loop {
        // Only waiting for the node's new set (no call): cheap however long.
        tokio::time::sleep(call.limit.max(Duration::from_millis(20))).await;
        let Some(q) = q.upgrade() else { return };
        let lease = Duration::from_millis(q.max_lease_ms.load(Ordering::SeqCst));
        if q.closing() || started.elapsed() > lease {
            return;
        }
        let Some(current) = q.nodes[i].conn() else {
            continue;
        };
        if Arc::ptr_eq(&current, &sent_on) {
            continue;
        }
        drop(q);
        sent_on = current.clone();
        if !matches!(call.send(current, None).await, Sent::Unknown(_)) {
            return;
        }
    }
}

/// Whether the set a release was sent on broke. fred notices a dead connection within its
/// command timeout; a set that stays up runs the release in its turn (false).
async fn set_broke(q: &Weak<QuorumInner>, sent_on: &Inner) -> bool {
    let notice = Instant::now() + sent_on.settings().command_timeout + Duration::from_secs(1);
    loop {
        if *sent_on.pool_failed().borrow() {
            return true;
        }
        // In short steps. Shutdown waits for this task (its settle time) before it closes the
        // nodes, so a release still on its way is sent again then too: this is when a paused
        // node resumes and shutdown follows at once.
        let closed = q.upgrade().is_none_or(|q| q.closing());
        if closed || Instant::now() >= notice {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The uptime (whole seconds) and run id in an INFO server reply.
fn uptime_and_run_id(info: &str) -> Option<(u64, String)> {
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
    };
    let uptime = field("uptime_in_seconds:").and_then(|v| v.parse::<u64>().ok());
    let (Some(uptime), Some(run_id)) = (uptime, field("run_id:")) else {
        return None;
    };
    Some((uptime, run_id))
}

pub(crate) fn spawn_reconnect(
    q: Weak<QuorumInner>,
    i: usize,
    shutdown: watch::Receiver<bool>,
    delay: Duration,
) {
    // At once, then less and less often: a blip costs a reconnect, not a second.
    let mut backoff = retry::Backoff::default();
    let stop = shutdown.clone();
    tokio::spawn(every::every(q, stop, delay, move |inner| {
        let mut shutdown = shutdown.clone();
        let next = backoff.next_wait();
        async move {
            let builder = inner.builder.clone().url(inner.nodes[i].url.clone());
            let built = tokio::select! {
                b = builder.build() => b,
                _ = shutdown.wait_for(|s| *s) => return None,
            };
            match built {
                Ok(c) => {
                    let node = &inner.nodes[i];
                    node.suspect();
                    spawn_connection_watch(&inner, i, &c.inner);
                    {
                        let mut conn = node.conn.write().unwrap();
                        // Installed under the lock that shutdown takes the sets with: a set
                        // made after it closed the nodes is not kept (one made during its
                        // settle wait is, so a release still on its way can be sent again on
                        // it, and shutdown closes it with the others).
                        if *inner.shutdown.borrow() {
                            drop(conn);
                            c.shutdown().await;
                            return None;
                        }
                        *conn = Some(c.inner);
                    }
                    // Every new connection is asked: each must have reached the same instance.
                    // Reconnecting until then: the node votes (or is quarantined) right after.
                    inner
                        .check_uptime_on(i, inner.uptime_check_limit(), true)
                        .await;
                    node.mark_reconnecting(false);
                    None
                }
                Err(_) => {
                    inner.nodes[i].mark_reconnecting(false);
                    Some(next)
                }
            }
        }
    }));
}

/// Replaces node `i`'s connections as soon as one of them fails: they do not reconnect by
/// themselves, and fred's connection state does not say that one has stopped. Ends when the
/// connections are replaced or the client shuts down.
pub(crate) fn spawn_connection_watch(q: &Arc<QuorumInner>, i: usize, conn: &Arc<Inner>) {
    let (weak, conn) = (Arc::downgrade(q), conn.clone());
    let mut shutdown = q.shutdown.subscribe();
    let mut failed = conn.pool_failed();
    let mut stopping = conn.stopping();
    tokio::spawn(async move {
        tokio::select! {
            r = failed.wait_for(|f| *f) => {
                if r.is_err() {
                    return;
                }
            }
            // Replaced for another reason (a failed check) and shut down, or the client is.
            _ = stopping.wait_for(|s| *s) => return,
            _ = shutdown.wait_for(|s| *s) => return,
        }
        if let Some(q) = weak.upgrade() {
            q.replace_dead(i, &conn);
        }
    });
}

pub(crate) fn spawn_uptime_checks(q: Weak<QuorumInner>, shutdown: watch::Receiver<bool>) {
    tokio::spawn(every::every(
        q,
        shutdown,
        UPTIME_CHECK,
        |inner| async move {
            inner.check_uptimes(inner.uptime_check_limit(), false).await;
            Some(UPTIME_CHECK)
        },
    ));
}
