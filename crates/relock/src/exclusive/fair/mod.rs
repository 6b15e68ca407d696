//! **The fair lock**: first come, first served across all clients. A [`Lock`] made by
//! [`Client::fair_lock`] carries this folder's [`FAIR_LOCK`] as its variant (its keys, its
//! wait, its line); everything else is the plain lock's handle and guard.
//!
//! - `kind`: the fair holds' [`HoldKind`](crate::hold::kind::HoldKind) (`FAIR`): released by
//!   `fair_release.lua`, which hands the lock to the first in line.
//! - `call`: the fair attempt (`fair_acquire.lua`) and how its reply is read (granted, held,
//!   behind another waiter, out of line).
//! - `wait`: the fair wait loop: a first attempt that never joins the line, then subscribe,
//!   join the line, and sleep until a message names us or hands us the lock.
//! - `channel`: the fair channel's messages (`<field>`, `<field>=<token>`) and this client's
//!   waiters named on it.
//! - `line`: the line's keys and scripts, and this client's waiters in lines (`Line`, with
//!   its shutdown step: leave them all; `Waiting`, which leaves the line on drop).
//! - `heartbeat`: the client's heartbeat scheduler for its waiters.
//! - `first_lease`: a handed-over hold's first lease, brought to the watchdog's.
//! - `settings`: the heartbeat deadline ([`ClientBuilder::fair_heartbeat`](crate::ClientBuilder::fair_heartbeat)).
//!
//! After an attempt whose outcome is unknown, the waiter's field is retired (see
//! `attempt::Fresh`): it leaves the line under the old field and rejoins under a new one with
//! its old ticket, so it keeps its place.

pub(crate) mod call;
pub(crate) mod channel;
pub(crate) mod first_lease;
pub(crate) mod heartbeat;
pub(crate) mod kind;
pub(crate) mod line;
pub(crate) mod settings;
pub(crate) mod wait;

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use crate::client::handle::Client;
use crate::client::inner::Inner;
use crate::error::Result;
use crate::exclusive::attempt::Fresh;
use crate::exclusive::fair::kind::FAIR;
use crate::exclusive::fair::line::{fair_channel, Line, QueueKeys, FAIR_FORCE_UNLOCK, TICKET_MIN};
use crate::exclusive::lock::{LineKeys, Lock, Variant};
use crate::hold::guard::LockGuard;
use crate::hold::kind::{CallContext, LockKeys, ScriptCall};

/// The fair lock, as a [`Lock`] carries it.
#[derive(Debug)]
pub(crate) struct FairLock;

/// The fair lock's [`Variant`].
pub(crate) static FAIR_LOCK: FairLock = FairLock;

impl Variant for FairLock {
    fn is_fair(&self) -> bool {
        true
    }

    /// Its holds' keys, its waiters listening on the fair channel.
    fn keys(&self, name: &str) -> Result<LockKeys> {
        let keys = LockKeys::new(name, &FAIR)?;
        Ok(keys.waking_on(fair_channel(name)))
    }

    fn wait<'a>(
        &'a self,
        inner: &'a Arc<Inner>,
        keys: Arc<LockKeys>,
        fresh: Fresh,
        wait: Option<Duration>,
    ) -> BoxFuture<'a, Result<Option<LockGuard>>> {
        Box::pin(wait::acquire_fair(inner, keys, fresh, wait))
    }

    fn line(&self, keys: &LockKeys) -> Option<LineKeys> {
        let q = QueueKeys::of(&keys.lock);
        Some(LineKeys {
            line: q.line,
            tickets_from: TICKET_MIN,
            grant: q.grant,
        })
    }

    /// `fair_force_unlock.lua` on the lock and the rest of its line's group, so that the first
    /// waiter is told (it takes the lock with its own acquire).
    fn force_unlock(&self, keys: &LockKeys, ctx: &CallContext) -> ScriptCall {
        ScriptCall {
            script: &FAIR_FORCE_UNLOCK,
            keys: QueueKeys::of(&keys.lock).group(keys).to_vec(),
            args: vec![ctx.publish.into(), keys.channel.clone(), keys.wake.clone()],
            coalesce: None,
        }
    }

    fn local_waiters(&self, inner: &Inner, lock: &str) -> Vec<String> {
        inner.state::<Line>().fields_of(lock)
    }
}

impl Client {
    /// A handle to the fair lock called `name`: first come, first served across all clients.
    ///
    /// The same methods and guard as [`lock`](Client::lock) (reentrancy, watchdog, fencing
    /// tokens); waiters form a line on the server and each release hands the lock to the
    /// first (its `lock()` returns without a round trip of its own), or wakes only it.
    /// `try_lock` never joins the line and never jumps it. A waiter that dies stops holding up
    /// the line after [`ClientBuilder::fair_heartbeat`](crate::ClientBuilder::fair_heartbeat) (5 s). Use one kind per name: a plain
    /// lock on the same name does not see the line.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// let client = relock::Client::connect(&url).await?;
    /// let lock = client.fair_lock("plotter");
    /// let guard = lock.lock().await?; // served in arrival order
    /// # assert!(lock.is_fair() && lock.is_locked().await?);
    /// guard.unlock().await?;
    /// # assert!(!lock.is_locked().await?);
    /// # client.shutdown().await; Ok(()) }
    /// ```
    pub fn fair_lock(&self, name: impl Into<String>) -> Lock {
        Lock::new(
            self.inner.clone(),
            self.inner.named(name.into()),
            Some(&FAIR_LOCK),
        )
    }

    /// Fair-lock waiters of this client that may be in a line right now.
    pub fn queued_waiters(&self) -> usize {
        self.inner.state::<Line>().queued_count()
    }
}
