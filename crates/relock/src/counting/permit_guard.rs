//! [`PermitGuard`](crate::PermitGuard): one permit of a permit-expirable semaphore, held
//! under its own lease: its record in the client (`Leases`, with the shutdown step that gives
//! every permit back, and the renewal of the permits in the client's watchdog round), and its
//! release (by the guard, or in the background on drop).

use std::sync::Arc;

use tokio::time::Instant;
use tracing::Instrument;

use crate::client::hold_watch;
use crate::client::inner::Inner;
use crate::client::retry;
use crate::counting::permit_leases;
use crate::counting::permit_leases::{Leases, Permit, PermitKeys};
use crate::counting::request::Request;
use crate::error::{Error, Result};
use crate::hold::detach;

/// One permit of a [`PermitSemaphore`](crate::PermitSemaphore), given back when the guard is released or dropped, or
/// by itself when its lease ends.
///
/// Unlike a local semaphore permit, it can end without the guard: its lease can run out (a
/// fixed lease, or renewals that kept failing) or its id can be released or deleted elsewhere.
/// [`lost`](PermitGuard::lost) tells you when (no later than
/// [`valid_until`](PermitGuard::valid_until)). A guard taken with `lease = None` is renewed by
/// the client every watchdog lease / 3; renewal never brings back a permit whose lease has
/// ended on the server.
///
/// Dropping the guard gives the permit back in the background; use
/// [`release`](PermitGuard::release) to learn the outcome. A guard dropped where no tokio
/// runtime runs stops being renewed, and its permit comes back when its lease ends.
/// [`Client::shutdown`](crate::Client::shutdown) gives back the permits of guards still alive; they then report
/// themselves lost.
#[must_use = "if unused the permit is given back at once"]
#[clippy::has_significant_drop]
pub struct PermitGuard {
    inner: Arc<Inner>,
    lease: Arc<Permit>,
    released: bool,
}

impl std::fmt::Debug for PermitGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let left = self
            .lease
            .lease
            .valid_until()
            .saturating_duration_since(Instant::now());
        f.debug_struct("PermitGuard")
            .field("semaphore", &self.lease.keys.count)
            .field("id", &self.lease.id)
            .field("renewed", &self.lease.renewed)
            .field("remaining", &left)
            .field("lost", &self.is_lost())
            .finish()
    }
}

impl PermitGuard {
    /// Records a granted permit in the client's registry (a renewed one is renewed from the
    /// next watchdog round on).
    pub(crate) fn register(
        inner: Arc<Inner>,
        keys: Arc<PermitKeys>,
        id: String,
        renewed: bool,
        until: Instant,
    ) -> Self {
        let lease = Arc::new(Permit::new(keys, id, renewed, until));
        let leases = inner.state::<Leases>();
        leases.insert(lease.clone());
        if inner.settings().watch_holds {
            // From SETTLE after its grant, as a hold's watch starts.
            let settle = hold_watch::SETTLE;
            hold_watch::spawn_watch(
                inner.pubsub(),
                inner.pool(),
                inner.runtime(),
                lease.clone(),
                settle,
            );
        }
        PermitGuard {
            inner,
            lease,
            released: false,
        }
    }

    /// The permit's id (32 hex digits): what Redisson's `release(id)` takes, and what
    /// [`PermitSemaphore::release_id`](crate::PermitSemaphore::release_id) takes anywhere else.
    pub fn id(&self) -> &str {
        &self.lease.id
    }

    /// The semaphore's name.
    pub fn semaphore(&self) -> &str {
        &self.lease.keys.count
    }

    /// Whether the client renews this permit's lease (it was taken with `lease = None`).
    pub fn is_renewed(&self) -> bool {
        self.lease.renewed
    }

    /// When the lease ends at the latest, on this process's monotonic clock, unless renewed
    /// meanwhile: the send time of the last successful acquire or renewal plus its lease.
    pub fn valid_until(&self) -> std::time::Instant {
        self.lease.lease.valid_until().into_std()
    }

    /// Whether the permit is known to be lost, or its lease has run out on the local clock.
    pub fn is_lost(&self) -> bool {
        self.lease.lease.is_lost()
    }

    /// Resolves once the permit is lost: its lease ran out on the local clock without a
    /// renewal, or a renewal found its id gone (released by id, deleted, or expired on the
    /// server). It never resolves later than [`valid_until`](PermitGuard::valid_until) (plus
    /// scheduling noise).
    ///
    /// # Errors
    /// None: it only waits.
    ///
    /// # Cancel safety
    /// Cancel safe: it only observes.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let sem = client.permit_expirable_semaphore("doctest:permits:lost");
    /// # sem.try_set_permits(1).await?;
    /// let permit = sem.acquire(None).await?;
    /// tokio::select! {
    ///     _ = permit.lost() => eprintln!("permit lost: stop"),
    ///     _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
    /// }
    /// # assert!(!permit.is_lost()); // renewed by the watchdog
    /// # permit.release().await?;
    /// # client.shutdown().await;
    /// # let check = relock::Client::connect(&url).await?;
    /// # assert_eq!(check.permit_expirable_semaphore("doctest:permits:lost").available().await?, 1);
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["doctest:permits:lost"]).await.unwrap(); }
    /// # check.shutdown().await; Ok(()) }
    /// ```
    pub async fn lost(&self) {
        self.lease.lost().await
    }

    /// Gives the permit back and reports how that went.
    ///
    /// # Errors
    /// [`Error::PermitLost`] if the permit had already been lost (its lease ran out, or its id
    /// was released or deleted elsewhere, or the client shut down): anything done under it
    /// since may have overlapped another holder. Connection errors and [`Error::Timeout`]
    /// only once the release, sent again under one request id after each transient error,
    /// has had no reply for one command timeout; relock then keeps trying in the background
    /// until the lease would have ended (releasing an id twice is harmless).
    ///
    /// # Cancel safety
    /// The release runs in its own task, so dropping this future does not stop it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let sem = client.permit_expirable_semaphore("doctest:permits:guard_release");
    /// # sem.try_set_permits(1).await?;
    /// let permit = sem.acquire(None).await?;
    /// match permit.release().await {
    ///     Err(relock::Error::PermitLost { .. }) => eprintln!("the lease had run out"),
    ///     other => other?,
    /// }
    /// # assert_eq!(sem.available().await?, 1);
    /// # client.shutdown().await;
    /// # let check = relock::Client::connect(&url).await?;
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["doctest:permits:guard_release"]).await.unwrap(); }
    /// # check.shutdown().await; Ok(()) }
    /// ```
    pub async fn release(mut self) -> Result<()> {
        self.released = true;
        let task = give_back(self.inner.clone(), self.lease.clone());
        match self.inner.shared().tracker.spawn(task).await {
            Ok(r) => r,
            Err(_) => Err(Error::Shutdown),
        }
    }
}

impl Drop for PermitGuard {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        let task = give_back(self.inner.clone(), self.lease.clone());
        let work = async move {
            if let Err(e) = task.await {
                if !matches!(e, Error::PermitLost { .. } | Error::Shutdown) {
                    tracing::warn!(error = %e, "background release of a permit failed; retrying until its lease would end");
                }
            }
        };
        // If the client's runtime is gone, the permit comes back when its lease ends.
        let inner = &self.inner;
        detach::spawn(&inner.shared().tracker, Some(inner.runtime()), work);
    }
}

/// Gives back `lease`'s permit: out of the registry first (the renewal stops), then
/// `permits_release.lua`, bounded by the command timeout; retried in the background if its
/// outcome is unknown.
async fn give_back(inner: Arc<Inner>, lease: Arc<Permit>) -> Result<()> {
    let lost = || Error::PermitLost {
        semaphore: lease.keys.count.clone(),
        id: lease.id.clone(),
    };
    let was_lost = lease.lease.is_lost();
    lease.lease.mark_ended();
    if !inner.state::<Leases>().remove(&lease) {
        // Shutdown gave it back already.
        return Err(lost());
    }
    let span =
        tracing::debug_span!("permit release", semaphore = %lease.keys.count, id = %lease.id);
    let limit = inner.settings().command_timeout;
    match release_retrying(&inner, &lease.keys, &lease.id)
        .instrument(span)
        .await
    {
        Some(Ok(1)) if !was_lost => Ok(()),
        Some(Ok(_)) => {
            lease.lease.mark_lost();
            Err(lost())
        }
        outcome => {
            let err = match outcome {
                Some(Err(e)) => e,
                _ => Error::Timeout {
                    operation: "permits release",
                    server: inner.server(),
                    timeout: limit,
                },
            };
            if err.is_transient() {
                inner
                    .shared()
                    .tracker
                    .spawn(retry_give_back(inner.clone(), lease.clone()));
            }
            Err(err)
        }
    }
}

/// Retries giving back a permit whose release (or acquire) had an unknown outcome, until it
/// gets a reply or its lease has ended (the server gives it back by itself then), with
/// shutdown's last chance ([`until_done`](crate::client::retry::until_done)): an acquire cut
/// off during shutdown is given back before shutdown returns. Releasing an id twice is
/// harmless. The give-back is recorded under the id's request key even when it finds nothing,
/// so that an acquire of the id still on its way takes nothing when it lands (it would hold a
/// permit nobody has until its lease ends).
pub(crate) async fn retry_give_back(inner: Arc<Inner>, lease: Arc<Permit>) {
    let request = Request::new(&inner, &lease.keys.count);
    let key = lease.keys.request_of(&lease.id);
    let limit = inner.settings().command_timeout;
    let call = || async {
        let call = permit_leases::release(
            inner.conn(),
            &lease.keys,
            &lease.id,
            inner.publish_cmd(),
            Some((key.as_str(), request.ttl_ms.as_str(), true)),
        );
        match tokio::time::timeout(limit, call).await {
            Ok(r) => r.map_err(|e| e.to_string()),
            Err(_) => Err(format!("no reply within {}", crate::error::Human(limit))),
        }
    };
    let (until, name) = (lease.lease.valid_until(), &lease.keys.count);
    retry::until_done(&inner, until, "permit give-back", name, call).await;
}

/// [`crate::counting::permit_leases::release`] on the client's pool under a request id of its own, sent again
/// after a transient error (a connection cut off, a command not routed during a reconnect)
/// until one command timeout has passed. Every copy returns what the copy that gave the permit
/// back returned: a copy whose reply was lost is not mistaken for someone else's release, and
/// a copy that was never sent is not mistaken for ours. `None` if no reply came in time.
pub(crate) async fn release_retrying(
    inner: &Inner,
    keys: &PermitKeys,
    id: &str,
) -> Option<Result<i64>> {
    let request = Request::new(inner, &keys.count);
    let call = || async {
        let publish = inner.publish_cmd();
        let once = Some((request.key.as_str(), request.ttl_ms.as_str(), false));
        permit_leases::release(inner.conn(), keys, id, publish, once)
            .await
            .map_err(|e| inner.error("permits release", &keys.count, e))
    };
    let limit = inner.settings().command_timeout;
    let r = tokio::time::timeout(limit, request.send(inner, call)).await;
    if r.is_err() {
        // A copy may still be on its way: the request key must outlive it.
        let _ = request.mark_uncertain();
    }
    r.ok()
}
