//! [`PermitSemaphore`]: a semaphore whose permits each have an id and a lease, wire-compatible
//! with Redisson's `RPermitExpirableSemaphore`. Its wait is the counting kinds' shared one
//! (`counting::wait`); a granted permit becomes a `PermitGuard` (`permit_guard`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::client::handle::Client;
use crate::client::inner::Inner;
use crate::client::settings::validate_lease;
use crate::counting::add::{read_add, SEMAPHORE_ADD};
use crate::counting::channel::COUNT_CHANNEL;
use crate::counting::counts::{unexpected, validate_count, MAX_COUNT};
use crate::counting::names::Names;
use crate::counting::permit_guard::{release_retrying, retry_give_back, PermitGuard};
use crate::counting::permit_leases;
use crate::counting::permit_leases::{Leases, Permit, PermitKeys};
use crate::counting::request::retrying;
use crate::counting::semaphore;
use crate::counting::wait::{wait_until, Check};
use crate::error::{Error, Result};
use crate::hold::keys::{prefixed, suffixed, validate_name};
use crate::hold::meter;

/// A semaphore whose permits each have an id and a lease, shared by every process on the same
/// Redis, wire-compatible with Redisson's `RPermitExpirableSemaphore`.
///
/// A cheap handle (`Clone + Send + Sync`) made by [`Client::permit_expirable_semaphore`].
/// Compared with [`Semaphore`](crate::Semaphore), whose permits are a bare number:
/// - **Every permit taken has an id and a lease.** [`acquire`](PermitSemaphore::acquire)
///   returns a [`PermitGuard`]; its permit comes back when the guard is released or dropped,
///   or by itself when its lease ends: **a holder that dies (or whose reply was lost) cannot
///   keep a permit longer than its lease.** With `lease = None` the lease is the client's
///   watchdog lease (30 s by default) and the client renews it while the guard lives.
/// - **Layout (Redisson's):** the string `<name>` holds the available count (**a missing key is
///   0 permits**: create it with [`try_set_permits`](PermitSemaphore::try_set_permits) or
///   [`add_permits`](PermitSemaphore::add_permits)); the sorted set `{<name>}:timeout` maps each
///   permit id (16 random bytes, shown as 32 hex digits) to the end of its lease (ms since
///   1970). Each acquire first gives back the permits whose lease has ended. A Java service
///   using Redisson on the same name shares the permits, and can release relock's ids (and
///   relock can release its ids with [`release_id`](PermitSemaphore::release_id)).
/// - **Clock:** relock's scripts judge leases on the Redis server's clock (`TIME`). Redisson
///   sends its client's clock: a Java client whose clock is off by `d` sees every lease end `d`
///   early or late (and relock sees the leases it sets that much off), so keep clocks in sync
///   (NTP) when both share a semaphore.
/// - **Waking:** as [`Semaphore`](crate::Semaphore): a new count `k` published on
///   `redisson_sc:{<name>}` wakes up to `k` waiters per client; a waiter also looks again after
///   a backing-off re-check period (at most 1 s), and **never sleeps past the end of the first
///   lease that ends** (an expired permit comes back without any message).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
/// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
/// use std::time::Duration;
/// let client = relock::Client::connect(&url).await?;
/// let slots = client.permit_expirable_semaphore("renderer:slots");
/// slots.try_set_permits(4).await?;                   // only the first caller sets it
///
/// let permit = slots.acquire(None).await?;           // renewed while `permit` lives
/// println!("working under permit {}", permit.id());
/// # assert_eq!(slots.acquired().await?, 1);
/// permit.release().await?;
///
/// // A fixed lease: the permit comes back after 10 s even if this process dies.
/// if let Some(p) = slots.try_acquire_for(Duration::from_secs(1), Some(Duration::from_secs(10))).await? {
///     tokio::select! {
///         _ = p.lost() => eprintln!("lease over: stop"),
///         _ = render() => {}
///     }
/// #   assert!(!p.is_renewed());
/// }
/// # client.shutdown().await;
/// # let check = relock::Client::connect(&url).await?;
/// # assert_eq!(check.permit_expirable_semaphore("renderer:slots").available().await?, 4);
/// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["renderer:slots"]).await.unwrap(); }
/// # check.shutdown().await; Ok(()) }
/// # async fn render() {}
/// ```
#[derive(Debug, Clone)]
pub struct PermitSemaphore {
    pub(super) inner: Arc<Inner>,
    name: Arc<str>,
    keys: Option<(Arc<Names>, Arc<PermitKeys>)>,
}

impl Client {
    /// A handle to the permit-expirable semaphore called `name` (Redisson's
    /// `RPermitExpirableSemaphore`). Cheap; nothing is sent until it is used. A bad name is
    /// reported by the first operation, as [`Error::InvalidArgument`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// let sem = client.permit_expirable_semaphore("exports");
    /// sem.add_permits(2).await?;
    /// let permit = sem.acquire(None).await?;
    /// # assert_eq!(sem.available().await?, 1);
    /// permit.release().await?;
    /// # client.shutdown().await;
    /// # let check = relock::Client::connect(&url).await?;
    /// # assert_eq!(check.permit_expirable_semaphore("exports").available().await?, 2);
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["exports"]).await.unwrap(); }
    /// # check.shutdown().await; Ok(()) }
    /// ```
    pub fn permit_expirable_semaphore(&self, name: impl Into<String>) -> PermitSemaphore {
        let name: String = self.inner.named(name.into());
        let keys = validate_name(&name).ok().map(|()| {
            let channel = prefixed("redisson_sc", &name);
            let names = Names {
                key: name.clone(),
                channel: channel.clone(),
            };
            let keys = PermitKeys {
                count: name.clone(),
                channel,
                timeouts: suffixed(&name, "timeout"),
            };
            (Arc::new(names), Arc::new(keys))
        });
        PermitSemaphore {
            inner: self.inner.clone(),
            name: name.into(),
            keys,
        }
    }

    /// How many permits of permit-expirable semaphores this client's guards hold right now
    /// (guards not yet released or dropped, also those whose permit was lost meanwhile).
    pub fn held_permits(&self) -> usize {
        self.inner.state::<Leases>().len()
    }
}

/// What one acquire attempt found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Attempt<G = PermitGuard> {
    Granted(G),
    /// None available; the first lease ends in this long.
    FreesIn(Duration),
    /// None available, and no lease ends by itself.
    NoneFree,
}

impl PermitSemaphore {
    /// The semaphore's name (also the key of its count).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(super) fn keys(&self) -> Result<(Arc<Names>, Arc<PermitKeys>)> {
        match &self.keys {
            Some(k) => Ok(k.clone()),
            None => Err(validate_name(&self.name).expect_err("the name failed before")),
        }
    }

    /// Takes one permit for `lease` (`None`: the client's watchdog lease, renewed while the
    /// guard lives), waiting as long as it takes for one to be available.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a lease below 1 ms or above 30 years, or a bad name;
    /// [`Error::WrongType`] if the count or the timeouts key holds something else; connection
    /// errors and [`Error::Timeout`] once they have lasted one command timeout (a waiter retries
    /// them until then); [`Error::Shutdown`].
    ///
    /// # Cancel safety
    /// Cancel safe in what the caller can observe: each attempt runs in a task of its own, so
    /// if the future is dropped while an attempt is in flight and the reply grants a permit,
    /// that permit's guard is dropped there, which gives it back. Unlike
    /// [`Semaphore::acquire`](crate::Semaphore::acquire), an attempt whose reply never arrives
    /// cannot lose a permit for good: relock tries to give that id back, and if it was granted
    /// and that fails too, the permit comes back when its lease ends (it is never renewed).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let sem = client.permit_expirable_semaphore("doctest:permits:acquire");
    /// # sem.try_set_permits(1).await?;
    /// let permit = sem.acquire(None).await?;
    /// // ... work; the lease is renewed until `permit` is released or dropped ...
    /// # assert!(permit.is_renewed() && sem.available().await? == 0);
    /// permit.release().await?;
    /// # client.shutdown().await;
    /// # let check = relock::Client::connect(&url).await?;
    /// # assert_eq!(check.permit_expirable_semaphore("doctest:permits:acquire").available().await?, 1);
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["doctest:permits:acquire"]).await.unwrap(); }
    /// # check.shutdown().await; Ok(()) }
    /// ```
    pub async fn acquire(&self, lease: Option<Duration>) -> Result<PermitGuard> {
        let guard = self.acquire_within(None, lease).await?;
        Ok(guard.expect("an acquire without a deadline only returns once it got one"))
    }

    /// Takes one permit for `lease` if one is available now; never waits. `Ok(None)` means none
    /// was available.
    ///
    /// # Errors
    /// As [`acquire`](PermitSemaphore::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](PermitSemaphore::acquire).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let sem = client.permit_expirable_semaphore("doctest:permits:try_acquire");
    /// # sem.try_set_permits(1).await?;
    /// use std::time::Duration;
    /// if let Some(permit) = sem.try_acquire(Some(Duration::from_secs(30))).await? {
    /// #   assert!(!permit.is_renewed()); // a fixed lease
    ///     permit.release().await?;
    /// }
    /// # else { panic!("the permit was free") }
    /// # client.shutdown().await;
    /// # let check = relock::Client::connect(&url).await?;
    /// # assert_eq!(check.permit_expirable_semaphore("doctest:permits:try_acquire").available().await?, 1);
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["doctest:permits:try_acquire"]).await.unwrap(); }
    /// # check.shutdown().await; Ok(()) }
    /// ```
    pub async fn try_acquire(&self, lease: Option<Duration>) -> Result<Option<PermitGuard>> {
        self.acquire_within(Some(Duration::ZERO), lease).await
    }

    /// Takes one permit for `lease`, waiting at most about `wait` for one to be available.
    /// `Ok(None)` means none was available in time.
    ///
    /// # Errors
    /// As [`acquire`](PermitSemaphore::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](PermitSemaphore::acquire).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let sem = client.permit_expirable_semaphore("doctest:permits:try_acquire_for");
    /// # sem.try_set_permits(1).await?;
    /// use std::time::Duration;
    /// match sem.try_acquire_for(Duration::from_millis(500), None).await? {
    ///     Some(permit) => permit.release().await?,
    ///     None => eprintln!("busy; try later"),
    /// }
    /// # let held = sem.acquire(None).await?;
    /// # assert!(sem.try_acquire_for(Duration::from_millis(50), None).await?.is_none());
    /// # held.release().await?;
    /// # client.shutdown().await;
    /// # let check = relock::Client::connect(&url).await?;
    /// # assert_eq!(check.permit_expirable_semaphore("doctest:permits:try_acquire_for").available().await?, 1);
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["doctest:permits:try_acquire_for"]).await.unwrap(); }
    /// # check.shutdown().await; Ok(()) }
    /// ```
    pub async fn try_acquire_for(
        &self,
        wait: Duration,
        lease: Option<Duration>,
    ) -> Result<Option<PermitGuard>> {
        self.acquire_within(Some(wait), lease).await
    }

    /// The counting kinds' wait (`wait::wait_until`) with one permit attempt per check.
    async fn acquire_within(
        &self,
        wait: Option<Duration>,
        lease: Option<Duration>,
    ) -> Result<Option<PermitGuard>> {
        self.inner.check_running()?;
        let (names, keys) = self.keys()?;
        let (lease, renewed) = match lease {
            Some(lease) => {
                validate_lease("lease", lease)?;
                (lease, false)
            }
            None => (self.inner.settings().watchdog_lease, true),
        };
        let granted = Mutex::new(None);
        let check = |woken: bool| self.check(&names, &keys, lease, renewed, woken, &granted);
        let got = wait_until(&self.inner, &names.channel, COUNT_CHANNEL, wait, check).await?;
        let guard = granted.into_inner().unwrap_or_else(|e| e.into_inner());
        debug_assert_eq!(got, guard.is_some());
        Ok(guard)
    }

    /// One attempt for the wait: a guard (kept in `granted`), or not yet, with the time until
    /// the first lease ends (the wait sleeps no longer).
    async fn check(
        &self,
        names: &Arc<Names>,
        keys: &Arc<PermitKeys>,
        lease: Duration,
        renewed: bool,
        woken: bool,
        granted: &Mutex<Option<PermitGuard>>,
    ) -> Result<Check> {
        let attempt = self.attempt(names, keys, lease, renewed).await?;
        if woken && !matches!(attempt, Attempt::Granted(_)) {
            meter::wasted_wakeup();
        }
        Ok(match attempt {
            Attempt::Granted(guard) => {
                *granted.lock().unwrap_or_else(|e| e.into_inner()) = Some(guard);
                Check::Done
            }
            Attempt::FreesIn(ms) => Check::Within(ms),
            Attempt::NoneFree => Check::NotYet,
        })
    }

    /// One `permits_acquire.lua` call under a new id, in a task of its own: a grant becomes a
    /// registered [`PermitGuard`] there, so a caller gone by then drops it, which gives the
    /// permit back. A call whose outcome is unknown gives its id back in the background.
    async fn attempt(
        &self,
        names: &Arc<Names>,
        keys: &Arc<PermitKeys>,
        lease: Duration,
        renewed: bool,
    ) -> Result<Attempt> {
        // Nothing new is sent once shutdown has begun.
        self.inner.check_running()?;
        let (inner, names, keys) = (self.inner.clone(), names.clone(), keys.clone());
        let task = self.inner.shared().tracker.spawn(async move {
            let id = uuid::Uuid::new_v4().simple().to_string();
            let sent = Instant::now();
            let args = vec![id.clone(), lease.as_millis().to_string()];
            let gone = keys.request_of(&id);
            let timeouts = [keys.timeouts.as_str(), gone.as_str()];
            let script = &permit_leases::PERMITS_ACQUIRE;
            let reply = names
                .run_publishing::<Vec<i64>>(
                    &inner,
                    (script, "permits acquire"),
                    &timeouts,
                    args,
                    false,
                )
                .await;
            let reply = match reply {
                Ok(reply) => reply,
                Err(e) => {
                    // The outcome is unknown (no reply came; during shutdown the error says
                    // only `Shutdown`): the id may hold a permit. Give it back (the id is this
                    // attempt's alone, so giving back one that took nothing is harmless);
                    // failing that, its lease ends it.
                    if e.is_transient() || matches!(e, Error::Shutdown) {
                        let lease = Arc::new(Permit::new(keys, id, false, sent + lease));
                        let retry = retry_give_back(inner.clone(), lease);
                        inner.shared().tracker.spawn(retry);
                    }
                    return Err(e);
                }
            };
            match read_acquire(&reply) {
                Some(Attempt::Granted(())) => Ok(Attempt::Granted(PermitGuard::register(
                    inner,
                    keys,
                    id,
                    renewed,
                    sent + lease,
                ))),
                Some(Attempt::FreesIn(wait)) => Ok(Attempt::FreesIn(wait)),
                Some(Attempt::NoneFree) => Ok(Attempt::NoneFree),
                None => Err(unexpected("permits acquire", &inner, &reply)),
            }
        });
        match task.await {
            Ok(r) => r,
            Err(_) => Err(Error::Shutdown),
        }
    }

    /// Gives back the permit with id `id` (taken by anyone: this process, another one, or a
    /// Redisson client), and wakes a waiter. Returns whether a permit was given back while its
    /// lease ran; `false` if the id was not there (released before, given back after its
    /// lease ended, deleted) or its lease had ended (the permit is back now, as in Redisson's
    /// `tryRelease`). Releasing an id twice gives its permit back once.
    ///
    /// A guard of this process is better released with [`PermitGuard::release`]: this call
    /// does not tell the guard, which goes on renewing nothing and reports itself lost at its
    /// next renewal.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `id` is not hex digits (an even number, at most 256);
    /// [`Error::WrongType`]; connection errors; [`Error::Shutdown`].
    ///
    /// # Cancel safety
    /// The release is sent from a task of its own as soon as the future is first polled:
    /// dropping the future after that does not stop it. Repeating it is harmless.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let sem = client.permit_expirable_semaphore("doctest:permits:release_id");
    /// # sem.try_set_permits(1).await?;
    /// # let taken = sem.acquire(Some(std::time::Duration::from_secs(30))).await?; // as a Java service would
    /// # let id_from_java = taken.id().to_string();
    /// if !sem.release_id(&id_from_java).await? {
    ///     eprintln!("permit {id_from_java} had expired or was released already");
    /// }
    /// # assert_eq!(sem.available().await?, 1);
    /// # assert!(!sem.release_id(&id_from_java).await?); // twice: given back once
    /// # drop(taken);
    /// # client.shutdown().await;
    /// # let check = relock::Client::connect(&url).await?;
    /// # assert_eq!(check.permit_expirable_semaphore("doctest:permits:release_id").available().await?, 1);
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["doctest:permits:release_id"]).await.unwrap(); }
    /// # check.shutdown().await; Ok(()) }
    /// ```
    pub async fn release_id(&self, id: &str) -> Result<bool> {
        self.inner.check_running()?;
        let (_, keys) = self.keys()?;
        validate_id(id)?;
        let (inner, id) = (self.inner.clone(), id.to_string());
        let released = self.inner.shared().tracker.spawn(async move {
            release_retrying(&inner, &keys, &id)
                .await
                .unwrap_or_else(|| {
                    Err(Error::Timeout {
                        operation: "permits release",
                        server: inner.server(),
                        timeout: inner.settings().command_timeout,
                    })
                })
        });
        Ok(released.await.map_err(|_| Error::Shutdown)?? == 1)
    }

    /// `permits_count.lua`: (available, acquired), after giving back expired permits.
    async fn counts(&self) -> Result<(u64, u64)> {
        self.inner.check_running()?;
        let (names, keys) = self.keys()?;
        let timeouts = [keys.timeouts.as_str()];
        let script = &permit_leases::PERMITS_COUNT;
        // Read again after a transient error: giving back expired permits twice is harmless.
        let reply: Vec<i64> = retrying(&self.inner, || {
            names.run_publishing(
                &self.inner,
                (script, "permits count"),
                &timeouts,
                Vec::new(),
                false,
            )
        })
        .await?;
        read_counts(&reply).ok_or_else(|| unexpected("permits count", &self.inner, &reply))
    }

    /// The number of permits available now, after giving back those whose lease has ended (0
    /// if the key is missing, or if `add_permits` took it below 0).
    ///
    /// # Errors
    /// [`Error::WrongType`]; connection errors; a bad name; [`Error::Shutdown`].
    ///
    /// # Cancel safety
    /// Cancel safe: if dropped, at most the expired permits were given back (as any call
    /// would).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let sem = client.permit_expirable_semaphore("doctest:permits:available");
    /// # sem.try_set_permits(2).await?;
    /// println!("{} permits free", sem.available().await?);
    /// # assert_eq!(sem.available().await?, 2);
    /// # client.shutdown().await;
    /// # let check = relock::Client::connect(&url).await?;
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["doctest:permits:available"]).await.unwrap(); }
    /// # check.shutdown().await; Ok(()) }
    /// ```
    pub async fn available(&self) -> Result<u64> {
        Ok(self.counts().await?.0)
    }

    /// The number of permits held now (ids whose lease runs), after giving back those whose
    /// lease has ended.
    ///
    /// # Errors
    /// As [`available`](PermitSemaphore::available).
    ///
    /// # Cancel safety
    /// As [`available`](PermitSemaphore::available).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let sem = client.permit_expirable_semaphore("doctest:permits:acquired");
    /// # sem.try_set_permits(2).await?;
    /// # let permit = sem.acquire(None).await?;
    /// println!("{} permits in use", sem.acquired().await?);
    /// # assert_eq!(sem.acquired().await?, 1);
    /// # permit.release().await?;
    /// # client.shutdown().await;
    /// # let check = relock::Client::connect(&url).await?;
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["doctest:permits:acquired"]).await.unwrap(); }
    /// # check.shutdown().await; Ok(()) }
    /// ```
    pub async fn acquired(&self) -> Result<u64> {
        Ok(self.counts().await?.1)
    }

    /// Creates the semaphore with `n` permits, only if its count does not exist yet (so every
    /// process may call it at start-up). Returns whether it was set. `n` may be 0.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `n` above 10^15 or a bad name; [`Error::WrongType`];
    /// connection errors; [`Error::Shutdown`].
    ///
    /// # Cancel safety
    /// If dropped after the command was sent, the semaphore may or may not have been set;
    /// calling it again is harmless.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let sem = client.permit_expirable_semaphore("doctest:permits:try_set_permits");
    /// if sem.try_set_permits(5).await? {
    ///     println!("created with 5 permits");
    /// }
    /// # assert!(!sem.try_set_permits(7).await?); // set already: left as it is
    /// # assert_eq!(sem.available().await?, 5);
    /// # client.shutdown().await;
    /// # let check = relock::Client::connect(&url).await?;
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["doctest:permits:try_set_permits"]).await.unwrap(); }
    /// # check.shutdown().await; Ok(()) }
    /// ```
    pub async fn try_set_permits(&self, n: u64) -> Result<bool> {
        self.inner.check_running()?;
        let (names, _) = self.keys()?;
        if n > MAX_COUNT {
            validate_count("n", n, "permits")?;
        }
        let script = &semaphore::SEMAPHORE_SET;
        let set: i64 = names
            .run_publishing(
                &self.inner,
                (script, "permits set"),
                &[],
                vec![n.to_string()],
                false,
            )
            .await?;
        Ok(set == 1)
    }

    /// Adds `n` permits, or takes `-n` away if `n` is negative (the count may then go below 0,
    /// as with Redisson's `addPermits`; nobody can acquire until enough come back). Adding
    /// publishes the new count, which wakes waiters.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `n` = 0 or `|n|` above 10^15, or if the count would
    /// exceed 10^15; [`Error::WrongType`]; connection errors; [`Error::Shutdown`].
    ///
    /// # Cancel safety
    /// If dropped after the command was sent, the permits may or may not have been added: read
    /// [`available`](PermitSemaphore::available) before adding again.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let sem = client.permit_expirable_semaphore("doctest:permits:add_permits");
    /// sem.add_permits(3).await?;
    /// # sem.add_permits(3).await?;
    /// # assert_eq!(sem.available().await?, 6);
    /// # client.shutdown().await;
    /// # let check = relock::Client::connect(&url).await?;
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["doctest:permits:add_permits"]).await.unwrap(); }
    /// # check.shutdown().await; Ok(()) }
    /// ```
    pub async fn add_permits(&self, n: i64) -> Result<()> {
        self.inner.check_running()?;
        let (names, _) = self.keys()?;
        validate_count("n", n.unsigned_abs(), "permits")?;
        let script = &SEMAPHORE_ADD;
        let reply: Vec<i64> = names
            .run_publishing(
                &self.inner,
                (script, "permits add"),
                &[],
                vec![n.to_string()],
                true,
            )
            .await?;
        match read_add(&reply) {
            Some(Ok(_)) => Ok(()),
            Some(Err(available)) => Err(Error::invalid(
                "n",
                format!("adding {n} to the {available} available permits of `{}` would exceed the 10^15 supported; add fewer", self.name),
            )),
            None => Err(unexpected("permits add", &self.inner, &reply)),
        }
    }
}

/// Reads `permits_acquire.lua`'s reply (`[1, _]` taken, `[0, ms]` none free until a lease ends
/// in `ms`, `[0, -1]` none free); `None` for a shape it never sends.
pub(super) fn read_acquire(reply: &[i64]) -> Option<Attempt<()>> {
    match *reply {
        [1, _] => Some(Attempt::Granted(())),
        [0, ms] if ms > 0 => Some(Attempt::FreesIn(Duration::from_millis(ms as u64))),
        [0, _] => Some(Attempt::NoneFree),
        _ => None,
    }
}

/// Reads `permits_count.lua`'s reply, `[available, acquired]`, each at least 0; `None` for a
/// shape it never sends.
pub(super) fn read_counts(reply: &[i64]) -> Option<(u64, u64)> {
    match *reply {
        [available, acquired] => Some((available.max(0) as u64, acquired.max(0) as u64)),
        _ => None,
    }
}

/// Rejects an id that is not hex digits (an even number of them, 2 to 256): the scripts store
/// an id as the bytes its digits spell, as Redisson does.
fn validate_id(id: &str) -> Result<()> {
    let hex = !id.is_empty()
        && id.len() % 2 == 0
        && id.len() <= 256
        && id.bytes().all(|b| b.is_ascii_hexdigit());
    if hex {
        Ok(())
    } else {
        Err(Error::invalid(
            "id",
            format!("`{id}` is not a permit id: pass the hex digits an acquire returned (relock's and Redisson's are 32)"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(dead_code)]
    fn futures_are_send(sem: PermitSemaphore, guard: PermitGuard) {
        fn send<T: Send>(_: T) {}
        send(sem.acquire(None));
        send(sem.try_acquire_for(Duration::ZERO, None));
        send(sem.release_id("00"));
        send(guard.release());
    }

    #[test]
    fn ids_must_be_hex_digits_in_pairs() {
        validate_id("0123456789abcdef0123456789ABCDEF").unwrap();
        for bad in ["", "abc", "zz", "0x12", &"ab".repeat(129)] {
            let e = validate_id(bad).unwrap_err();
            assert!(
                matches!(&e, Error::InvalidArgument { name: "id", .. }),
                "{bad:?}: {e}"
            );
        }
    }
}
