//! Coalescing: calls that are waiting for a connection go to the server together, in one call
//! of the script their kind declares for it ([`Coalescing`]: the plain lock's `batch.lua`).
//!
//! Why: on a busy client the cost of a lock operation is mostly the client's and the kernel's
//! (a command through fred's router, a socket write, a reply routed back), not the server's
//! Lua. One call for many operations pays that once. When the client is idle an operation goes
//! out at once, alone, as its own script: coalescing adds no wait, only a channel hop.
//!
//! How: there are `connections` call slots. An operation that finds nothing queued and a slot
//! free is sent at once from its own task, alone (no hop: the handoff latency of an idle
//! client is unchanged). Otherwise it joins a queue served by one task, which takes the first,
//! waits for a free slot (meanwhile more operations arrive), takes whatever else is queued (up
//! to [`MAX_BATCH`]), and sends them in one call on the next pool connection.
//! Each operation's reply is handed back on its own oneshot. The callers keep their own
//! semantics: an acquire runs to its end whatever its caller does (`detach`), so a reply that
//! arrives after its caller gave up still becomes a guard; an error of the call (timeout, connection) is every
//! operation's error, exactly as if each had been sent alone and failed; an error of one
//! operation (WRONGTYPE, READONLY) is that operation's only.
//!
//! Not on a cluster (the operations of one call must share a slot) nor with
//! `sync_replicas` (its WAIT must follow the acquire on the same connection).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use fred::clients::Pool;
use fred::error::{Error as FredError, ErrorKind};
use fred::types::{FromValue, Value};
// tokio's counting primitive, here the batcher's slots for calls in flight.
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit as Slot, Semaphore as Slots};

use crate::hold::detach;
use crate::hold::kind::Coalescible;
#[cfg(doc)]
use crate::hold::kind::Coalescing;
use crate::hold::meter;
use crate::script::Script;

/// Most operations in one call: bounds the script's run time (a few µs each) and the reply.
pub(crate) const MAX_BATCH: usize = 64;

/// How long the queue's task waits for a free call slot before it moves the client's in-place
/// work to tasks of their own. A slot is normally held for one round trip (well under a
/// millisecond), but an acquire sent alone runs in its caller's task (`detach`): a caller that
/// keeps its `lock()` future without polling it keeps that slot until it polls again, and
/// every queued lock and unlock of the client would wait behind it.
/// In a task of its own the acquire lets go of its slot as soon as its reply comes.
const SLOT_WAIT: std::time::Duration = std::time::Duration::from_millis(5);

/// An operation to coalesce: its own script call, and how it goes with others.
#[derive(Debug)]
pub(crate) struct Op {
    /// The script it is sent as when it goes alone.
    pub(crate) script: &'static Script,
    pub(crate) keys: Vec<String>,
    pub(crate) args: Vec<String>,
    pub(crate) how: Coalescible,
}

struct Queued {
    op: Op,
    reply: oneshot::Sender<Result<Value, FredError>>,
}

/// The handle: dropping the last one ends the task once the queue is empty.
#[derive(Debug)]
pub(crate) struct Batcher {
    tx: mpsc::UnboundedSender<Queued>,
    slots: Arc<Slots>,
    /// Operations sent to the queue and not yet taken by the task.
    queued: Arc<AtomicUsize>,
    pool: Pool,
}

impl std::fmt::Debug for Queued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.op.fmt(f)
    }
}

impl Batcher {
    /// Starts the task that sends the operations on `pool`, at most `in_flight` calls at once;
    /// `in_place` and `tracker` are the client's (see [`SLOT_WAIT`]).
    pub(crate) fn spawn(
        pool: Pool,
        in_flight: usize,
        in_place: Arc<detach::Registry>,
        tracker: tokio_util::task::TaskTracker,
    ) -> Batcher {
        let (tx, rx) = mpsc::unbounded_channel();
        let slots = Arc::new(Slots::new(in_flight.max(1)));
        let queued = Arc::new(AtomicUsize::new(0));
        let free_slots = move |slots: Arc<Slots>| {
            let (in_place, tracker) = (in_place.clone(), tracker.clone());
            async move {
                match tokio::time::timeout(SLOT_WAIT, slots.clone().acquire_owned()).await {
                    Ok(slot) => slot.ok(),
                    Err(_) => {
                        in_place.detach_current(&tracker);
                        slots.acquire_owned().await.ok()
                    }
                }
            }
        };
        tokio::spawn(run(
            pool.clone(),
            rx,
            slots.clone(),
            queued.clone(),
            free_slots,
        ));
        Batcher {
            tx,
            slots,
            queued,
            pool,
        }
    }

    /// Runs `op` (alone or with others) and converts its reply as the plain script's would be.
    ///
    /// # Cancel safety
    /// Dropping the future does not withdraw the operation: it runs, and its reply is dropped.
    /// Callers that must see the reply (an acquire) await this in a task of their own.
    pub(crate) async fn run<R: FromValue>(&self, op: Op) -> Result<R, FredError> {
        if self.queued.load(Ordering::SeqCst) == 0 {
            if let Ok(slot) = self.slots.clone().try_acquire_owned() {
                let r = alone(self.pool.next(), op).await;
                drop(slot);
                return R::from_value(r?);
            }
        }
        let (reply, rx) = oneshot::channel();
        self.queued.fetch_add(1, Ordering::SeqCst);
        self.tx
            .send(Queued { op, reply })
            .map_err(|_| FredError::new(ErrorKind::Canceled, "the client was dropped"))?;
        let value = rx.await.map_err(|_| {
            FredError::new(ErrorKind::Canceled, "the batch task ended before replying")
        })??;
        R::from_value(value)
    }
}

async fn run<F, Fut>(
    pool: Pool,
    mut rx: mpsc::UnboundedReceiver<Queued>,
    slots: Arc<Slots>,
    queued: Arc<AtomicUsize>,
    free_slot: F,
) where
    F: Fn(Arc<Slots>) -> Fut,
    Fut: std::future::Future<Output = Option<Slot>>,
{
    while let Some(first) = rx.recv().await {
        // While every slot is busy, operations queue up: they go together in the next call.
        let Some(slot) = free_slot(slots.clone()).await else {
            return;
        };
        let mut ops = vec![first];
        while ops.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(q) => ops.push(q),
                Err(_) => break,
            }
        }
        queued.fetch_sub(ops.len(), Ordering::SeqCst);
        let conn = pool.next().clone();
        tokio::spawn(async move {
            send(&conn, ops).await;
            drop(slot);
        });
    }
}

/// The calls for `ops`, one per script that coalesces them (in the order each first
/// appears: in practice one); every operation gets its reply (or its call's error).
async fn send(conn: &fred::clients::Client, ops: Vec<Queued>) {
    let mut groups: Vec<Vec<Queued>> = Vec::new();
    for q in ops {
        match groups
            .iter_mut()
            .find(|g| std::ptr::eq(g[0].op.how.via, q.op.how.via))
        {
            Some(g) => g.push(q),
            None => groups.push(vec![q]),
        }
    }
    for group in groups {
        send_group(conn, group).await;
    }
}

/// One call for `ops`, which share their [`Coalescing`].
async fn send_group(conn: &fred::clients::Client, ops: Vec<Queued>) {
    if ops.len() == 1 {
        let Queued { op, reply } = ops.into_iter().next().expect("one");
        let _ = reply.send(alone(conn, op).await);
        return;
    }
    meter::step("call");
    let via = ops[0].op.how.via;
    let mut keys = Vec::with_capacity(ops.len() * 2);
    let mut args = Vec::with_capacity(ops.len() * 5);
    let mut replies = Vec::with_capacity(ops.len());
    for Queued { op, reply } in ops {
        keys.extend(op.keys);
        args.push(op.how.tag.to_string());
        args.extend(op.args);
        replies.push(reply);
    }
    match via.script.run::<Vec<Value>>(conn, keys, args).await {
        Ok(results) if results.len() == replies.len() => {
            for (reply, result) in replies.into_iter().zip(results) {
                let _ = reply.send((via.part)(result));
            }
        }
        Ok(results) => {
            let e = FredError::new(
                ErrorKind::Protocol,
                format!(
                    "{} answered {} results for {} operations",
                    via.script.name,
                    results.len(),
                    replies.len()
                ),
            );
            for reply in replies {
                let _ = reply.send(Err(e.clone()));
            }
        }
        Err(e) => {
            for reply in replies {
                let _ = reply.send(Err(e.clone()));
            }
        }
    }
}

/// One operation, sent as its own script.
async fn alone(conn: &fred::clients::Client, op: Op) -> Result<Value, FredError> {
    meter::step("call");
    op.script.run::<Value>(conn, op.keys, op.args).await
}
