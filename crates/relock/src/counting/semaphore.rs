//! [`Semaphore`]: a counting semaphore on one Redis string, wire-compatible with Redisson's
//! `RSemaphore`. Its wait is the counting kinds' shared one (`counter`).

use std::sync::Arc;
use std::time::Duration;

use crate::client::handle::Client;
use crate::client::inner::Inner;
use crate::client::scripts;
use crate::counting::add::add;
use crate::counting::channel::COUNT_CHANNEL;
use crate::counting::counts::{unexpected, validate_count, MAX_COUNT};
use crate::counting::names::Names;
use crate::counting::request::Request;
use crate::counting::semaphore_permits::{Outstanding, SemaphorePermits};
use crate::counting::semaphore_request::{
    read_acquire, uncertain, Abandon, Attempt, Taken, Unsettled, SEMAPHORE_ACQUIRE,
};
use crate::counting::wait::{wait_until, Check};
use crate::error::{Error, Result};
use crate::hold::keys::{prefixed, validate_name};
use crate::hold::meter;

scripts::scripts! {
    /// Semaphore: create it with n permits if it does not exist.
    SEMAPHORE_SET = writes "semaphore_set.lua" [];
    /// Semaphore: take every available permit.
    SEMAPHORE_DRAIN = writes "semaphore_drain.lua" [];
}

/// A counting semaphore shared by every process on the same Redis, wire-compatible with
/// Redisson's `RSemaphore`.
///
/// A cheap handle (`Clone + Send + Sync`) made by [`Client::semaphore`]. Compared with
/// `tokio::sync::Semaphore`:
/// - **Permits** are a number in Redis (the string key `<name>`), not owned by anyone: any
///   handle anywhere may [`release`](Semaphore::release) them, and nothing gives them back if
///   a process that took some dies. A **missing key is 0 permits**: create the semaphore with
///   [`try_set_permits`](Semaphore::try_set_permits) (only if absent, so every process may
///   call it at start-up) or [`add_permits`](Semaphore::add_permits).
/// - **A guard, or Redisson's way**: [`acquire`](Semaphore::acquire) returns
///   [`SemaphorePermits`], which gives the permits back when dropped;
///   [`forget`](SemaphorePermits::forget) keeps them taken until a
///   [`release`](Semaphore::release) from any handle, as Redisson's `acquire`.
/// - **Not fair**: any waiter (or a newcomer) may take released permits first. A message
///   wakes waiters without knowing how many permits each wants: a waiter for several permits
///   woken by a smaller release passes the wake-up on to the next local waiter (once per
///   message), who may want fewer.
/// - **Waking**: a release publishes the new count `k` on `redisson_sc:{<name>}`; each client
///   wakes at most `k` of its waiters on that semaphore, not all of them. Pub/sub may lose a
///   message (a reconnect, a failover), so a waiter also looks again on its own after 50 ms,
///   then 100, 200, 400, 800 ms and from then on every second: **a lost message delays a
///   waiter by at most about 1 s** (plus a round trip), never forever (Redisson's
///   `acquire()` can wait forever on one: redisson#3573). While the client's pub/sub
///   connection is down, waiters look every 100 ms, and every waiter looks at once after it
///   reconnects.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
/// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
/// use std::time::Duration;
/// let client = relock::Client::connect(&url).await?;
/// let sem = client.semaphore("crawler:slots");
/// sem.try_set_permits(3).await?;                 // only the first caller sets it
///
/// let permit = sem.acquire(1).await?;            // waits for a permit
/// // ... at most 3 of these run at once, across every process ...
/// drop(permit);                                  // given back (also on `?` or a panic)
///
/// if let Some(two) = sem.try_acquire_for(2, Duration::from_secs(1)).await? {
///     two.release().await?;                      // given back, reporting the outcome
/// }
/// # else { panic!("two of three permits were free") }
/// # client.shutdown().await;
/// # let check = relock::Client::connect(&url).await?;
/// # assert_eq!(check.semaphore("crawler:slots").available().await?, 3);
/// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["crawler:slots"]).await.unwrap(); }
/// # check.shutdown().await; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Semaphore {
    inner: Arc<Inner>,
    name: Arc<str>,
    names: Option<Arc<Names>>,
}

impl Client {
    /// A handle to the counting semaphore called `name` (Redisson's `RSemaphore`). Cheap;
    /// nothing is sent until it is used. A bad name is reported by the first operation, as
    /// [`Error::InvalidArgument`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// let sem = client.semaphore("uploads");
    /// sem.add_permits(4).await?;
    /// assert!(sem.try_acquire(4).await?.is_some());
    /// # client.shutdown().await;
    /// # let check = relock::Client::connect(&url).await?;
    /// # assert_eq!(check.semaphore("uploads").available().await?, 4);
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["uploads"]).await.unwrap(); }
    /// # check.shutdown().await; Ok(()) }
    /// ```
    pub fn semaphore(&self, name: impl Into<String>) -> Semaphore {
        let name: String = self.inner.named(name.into());
        let names = validate_name(&name).ok().map(|()| {
            Arc::new(Names {
                channel: prefixed("redisson_sc", &name),
                key: name.clone(),
            })
        });
        Semaphore {
            inner: self.inner.clone(),
            name: name.into(),
            names,
        }
    }
}

impl Semaphore {
    /// The semaphore's name (also its key).
    pub fn name(&self) -> &str {
        &self.name
    }

    fn names(&self) -> Result<Arc<Names>> {
        match &self.names {
            Some(n) => Ok(n.clone()),
            None => Err(validate_name(&self.name).expect_err("the name failed before")),
        }
    }

    /// Takes `n` permits, waiting as long as it takes for that many to be available. They are
    /// given back when the returned guard is dropped (an early `?` or a panic included), as
    /// tokio's `Semaphore::acquire`; [`forget`](SemaphorePermits::forget) keeps them taken,
    /// for code that gives them back elsewhere with [`release`](Semaphore::release), as
    /// Redisson's `acquire` does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `n` = 0 or above 10^15, or a bad name;
    /// [`Error::WrongType`] if the key holds something else than a count; connection errors
    /// and [`Error::Timeout`] (the attempt's outcome is unknown: see *Cancel safety*) once they
    /// have lasted one command timeout (a waiter retries them until then); [`Error::Shutdown`].
    ///
    /// # Cancel safety
    /// Cancel safe in what the caller can observe: if the future is dropped, either it took no
    /// permits, or the permits an attempt in flight took are released again as soon as its
    /// reply arrives (each attempt runs in a task of its own). You lose your place, as with
    /// `tokio::sync::Semaphore::acquire`. Every attempt of one `acquire` carries the same
    /// request id, recorded with the permits it takes, so an attempt whose reply was lost is
    /// found by the next attempt, which takes nothing more and returns the permits. An
    /// `acquire` that ends without the permits (its deadline, an error it returns, or its
    /// future dropped) after an attempt whose reply never arrived ([`Error::Timeout`] or a
    /// connection lost mid-command) gives back, in the background and under the same request
    /// id, whatever that attempt took, and a copy of it still on its way then takes nothing.
    /// [`Client::shutdown`](crate::Client::shutdown) does the same for an `acquire` whose
    /// attempt got no reply and that is still retrying, or not being polled, when it begins,
    /// and waits for those give-backs. Only if a give-back cannot reach Redis within one
    /// command timeout are those permits lost, as they always are with Redisson's
    /// `RSemaphore` (its `RPermitExpirableSemaphore` exists for that).
    ///
    /// **At exit.** Permits have no lease. A guard dropped as `main` returns, without
    /// [`Client::shutdown`](crate::Client::shutdown), gives its permits back on a connection
    /// of its own as the runtime ends (bounded by the connect and command timeouts); only if
    /// Redis cannot be reached then are they lost for good, with a warning that names the
    /// semaphore and how many. Call `shutdown` before `main` returns.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let sem = client.semaphore("doctest:semaphore:acquire");
    /// # sem.try_set_permits(2).await?;
    /// let permits = sem.acquire(2).await?;
    /// // ... work that needs two permits ...
    /// # assert_eq!(sem.available().await?, 0);
    /// drop(permits); // or `permits.release().await?` to learn the outcome
    /// # client.shutdown().await;
    /// # let check = relock::Client::connect(&url).await?;
    /// # assert_eq!(check.semaphore("doctest:semaphore:acquire").available().await?, 2);
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["doctest:semaphore:acquire"]).await.unwrap(); }
    /// # check.shutdown().await; Ok(()) }
    /// ```
    pub async fn acquire(&self, n: u64) -> Result<SemaphorePermits> {
        let permits = self.acquire_within(n, None).await?;
        Ok(permits.expect("an acquire without a deadline only returns once it got them"))
    }

    /// Takes `n` permits if that many are available now; never waits. `Ok(None)` means
    /// fewer were available (nothing was taken).
    ///
    /// # Errors
    /// As [`acquire`](Semaphore::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Semaphore::acquire).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let sem = client.semaphore("doctest:semaphore:try_acquire");
    /// # sem.try_set_permits(1).await?;
    /// if let Some(permit) = sem.try_acquire(1).await? {
    ///     // ... work ...
    /// #   assert_eq!(sem.available().await?, 0);
    ///     permit.release().await?;
    /// }
    /// # else { panic!("the permit was free") }
    /// # assert_eq!(sem.available().await?, 1);
    /// # client.shutdown().await;
    /// # let check = relock::Client::connect(&url).await?;
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["doctest:semaphore:try_acquire"]).await.unwrap(); }
    /// # check.shutdown().await; Ok(()) }
    /// ```
    pub async fn try_acquire(&self, n: u64) -> Result<Option<SemaphorePermits>> {
        self.acquire_within(n, Some(Duration::ZERO)).await
    }

    /// Takes `n` permits, waiting at most about `wait` for that many to be available.
    /// `Ok(None)` means they were not available in time (nothing was taken).
    ///
    /// # Errors
    /// As [`acquire`](Semaphore::acquire).
    ///
    /// # Cancel safety
    /// As [`acquire`](Semaphore::acquire).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let sem = client.semaphore("doctest:semaphore:try_acquire_for");
    /// # sem.try_set_permits(1).await?;
    /// use std::time::Duration;
    /// match sem.try_acquire_for(1, Duration::from_millis(500)).await? {
    ///     Some(_permit) => { /* ... work; given back at the end of the block ... */ }
    ///     None => eprintln!("busy; try later"),
    /// }
    /// # let held = sem.acquire(1).await?;
    /// # assert!(sem.try_acquire_for(1, Duration::from_millis(50)).await?.is_none());
    /// # held.release().await?;
    /// # client.shutdown().await;
    /// # let check = relock::Client::connect(&url).await?;
    /// # assert_eq!(check.semaphore("doctest:semaphore:try_acquire_for").available().await?, 1);
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["doctest:semaphore:try_acquire_for"]).await.unwrap(); }
    /// # check.shutdown().await; Ok(()) }
    /// ```
    pub async fn try_acquire_for(
        &self,
        n: u64,
        wait: Duration,
    ) -> Result<Option<SemaphorePermits>> {
        self.acquire_within(n, Some(wait)).await
    }

    /// Takes `n` permits, waiting at most `wait` (`None`: as long as it takes) on the counting
    /// kinds' wait (`wait::wait_until`).
    async fn acquire_within(
        &self,
        n: u64,
        wait: Option<Duration>,
    ) -> Result<Option<SemaphorePermits>> {
        self.inner.check_running()?;
        let names = self.names()?;
        validate_count("n", n, "permits")?;
        // One request for every attempt: an attempt that took the permits but whose reply
        // was lost is found by the next one, which takes nothing more.
        let request = Arc::new(Request::new(&self.inner, &names.key));
        // Dropped without the permits (gave up, failed, or the future was dropped): an
        // attempt whose reply never came may have taken them, or may still land.
        let abandon = Abandon {
            inner: self.inner.clone(),
            names: names.clone(),
            request: request.clone(),
            n,
            got: false,
        };
        let check = |woken: bool| self.check(&names, &request, n, woken);
        let r = wait_until(&self.inner, &names.channel, COUNT_CHANNEL, wait, check).await;
        // Forgotten at once only if no attempt's outcome was unknown: an attempt that timed
        // out may still be on its way, and must find the key (it expires by itself).
        if matches!(r, Ok(true)) && !request.uncertain() {
            request.done(&self.inner);
        }
        abandon.finish(matches!(r, Ok(true)));
        if !r? {
            return Ok(None);
        }
        // The attempt recorded the permits; shutdown may have given them back since.
        SemaphorePermits::claim(&self.inner, names, n, &request.key)
            .map(Some)
            .ok_or(Error::Shutdown)
    }

    /// One attempt for the wait: taken, or not yet; a waiter woken for permits too few for it
    /// passes the wake-up on, since another local waiter may want fewer.
    async fn check(
        &self,
        names: &Arc<Names>,
        request: &Arc<Request>,
        n: u64,
        woken: bool,
    ) -> Result<Check> {
        Ok(match self.attempt(names, request, n).await? {
            Attempt::Taken => Check::Done,
            Attempt::TooFew(available) if woken => {
                meter::wasted_wakeup();
                if available > 0 {
                    Check::PassOn
                } else {
                    Check::NotYet
                }
            }
            Attempt::TooFew(_) => Check::NotYet,
        })
    }

    /// One acquire script call, in a task of its own: if the caller is gone when the reply
    /// says the permits were taken, the reply's [`Taken`] is dropped there, which gives them
    /// back.
    async fn attempt(&self, names: &Arc<Names>, request: &Arc<Request>, n: u64) -> Result<Attempt> {
        // Nothing new is sent once shutdown has begun.
        self.inner.check_running()?;
        let (inner, names, request) = (self.inner.clone(), names.clone(), request.clone());
        let work = async move {
            let reply: Vec<i64> = SEMAPHORE_ACQUIRE
                .run(
                    inner.conn(),
                    vec![names.key.clone(), request.key.clone()],
                    vec![n.to_string(), request.ttl_ms.clone()],
                )
                .await
                .map_err(|e| {
                    // An error reply ran nothing; no reply at all may have run (judged on
                    // fred's error: during shutdown the mapped one is only `Shutdown`). If
                    // the caller is gone by now, nobody else gives back what it may have
                    // taken.
                    let may_have_run = crate::error::fred_may_have_run(&e);
                    let e = inner.error("semaphore acquire", &names.key, e);
                    if may_have_run {
                        uncertain(&inner, &names, &request, n);
                    }
                    e
                })?;
            match read_acquire(&reply) {
                Some(Attempt::Taken) => {
                    if request.uncertain() {
                        inner.state::<Unsettled>().settled(&request.key);
                    }
                    // Given up on after an earlier copy got no reply: the give-back of the
                    // request (under way) returns these permits, once; the caller is gone or
                    // shutting down. Otherwise nobody can give up on the request any more.
                    if !request.close() && request.uncertain() {
                        return Err(Error::Shutdown);
                    }
                    // Recorded here, in the tracked task, so that shutdown gives them back
                    // even if the caller's future is never polled to its guard.
                    inner
                        .state::<Outstanding>()
                        .record(&request.key, names.clone(), n);
                    Ok(Ok(Taken {
                        inner: inner.clone(),
                        names,
                        request,
                        n,
                        claimed: false,
                    }))
                }
                Some(Attempt::TooFew(available)) => Ok(Err(available)),
                None => Err(unexpected("semaphore acquire", &inner, &reply)),
            }
        };
        // On the client's runtime, not the caller's: a caller's runtime that ends (a
        // `block_on` on another thread) would drop the attempt with its reply unread, and the
        // permits it took with it.
        let task = self
            .inner
            .shared()
            .tracker
            .spawn_on(work, self.inner.runtime());
        match task.await {
            Ok(Ok(Ok(taken))) => {
                taken.claim();
                Ok(Attempt::Taken)
            }
            Ok(Ok(Err(available))) => Ok(Attempt::TooFew(available)),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Error::Shutdown),
        }
    }

    /// Gives back `n` permits, and wakes up to that many waiters (each client wakes at most
    /// as many of its waiters as there are permits available then). Any handle may release,
    /// also permits it never took: a semaphore does not know who holds its permits.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `n` = 0 or above 10^15, or if the count would exceed
    /// 10^15; [`Error::WrongType`]; connection errors; [`Error::Shutdown`].
    ///
    /// # Cancel safety
    /// The release is sent from a task of its own as soon as the future is first polled:
    /// dropping the future after that does not stop it. After a transient error (a
    /// connection cut off) it is sent again under the same request id, so it takes effect
    /// once, for up to one command timeout; only then does it fail. An error after that
    /// ([`Error::Timeout`], a connection error) means its outcome is unknown: do not simply
    /// release again, or a permit may be created twice.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let sem = client.semaphore("doctest:semaphore:release");
    /// # sem.try_set_permits(1).await?;
    /// sem.acquire(1).await?.forget(); // taken, Redisson's way: no guard
    /// # assert_eq!(sem.available().await?, 0);
    /// sem.release(1).await?;          // from this or any other handle
    /// # assert_eq!(sem.available().await?, 1);
    /// # client.shutdown().await;
    /// # let check = relock::Client::connect(&url).await?;
    /// # assert_eq!(check.semaphore("doctest:semaphore:release").available().await?, 1);
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["doctest:semaphore:release"]).await.unwrap(); }
    /// # check.shutdown().await; Ok(()) }
    /// ```
    pub async fn release(&self, n: u64) -> Result<()> {
        validate_count("n", n, "permits")?;
        self.add_in_task(n as i64).await.map(drop)
    }

    /// Adds `n` permits, or takes `-n` away if `n` is negative (the count may then go below
    /// 0, as with Redisson's `addPermits`; it reads as 0 and nobody can acquire until enough
    /// are released). Adding wakes waiters as [`release`](Semaphore::release) does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `n` = 0 or `|n|` above 10^15, or if the count would
    /// exceed 10^15; [`Error::WrongType`]; connection errors; [`Error::Shutdown`].
    ///
    /// # Cancel safety
    /// As [`release`](Semaphore::release).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let sem = client.semaphore("doctest:semaphore:add_permits");
    /// sem.add_permits(10).await?;   // scale up
    /// sem.add_permits(-5).await?;   // and down again
    /// # assert_eq!(sem.available().await?, 5);
    /// # client.shutdown().await;
    /// # let check = relock::Client::connect(&url).await?;
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["doctest:semaphore:add_permits"]).await.unwrap(); }
    /// # check.shutdown().await; Ok(()) }
    /// ```
    pub async fn add_permits(&self, n: i64) -> Result<()> {
        validate_count("n", n.unsigned_abs(), "permits")?;
        self.add_in_task(n).await.map(drop)
    }

    async fn add_in_task(&self, n: i64) -> Result<i64> {
        self.inner.check_running()?;
        let names = self.names()?;
        let inner = self.inner.clone();
        self.inner
            .shared()
            .tracker
            .spawn(async move { add(&inner, &names, n).await })
            .await
            .map_err(|_| Error::Shutdown)?
    }

    /// The number of permits available now (0 if the key is missing, or if `add_permits` took
    /// it below 0).
    ///
    /// # Errors
    /// [`Error::WrongType`] if the key is not a count; connection errors; a bad name.
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let sem = client.semaphore("doctest:semaphore:available");
    /// # sem.try_set_permits(2).await?;
    /// println!("{} permits free", sem.available().await?);
    /// # assert_eq!(sem.available().await?, 2);
    /// # client.shutdown().await;
    /// # let check = relock::Client::connect(&url).await?;
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["doctest:semaphore:available"]).await.unwrap(); }
    /// # check.shutdown().await; Ok(()) }
    /// ```
    pub async fn available(&self) -> Result<u64> {
        let names = self.names()?;
        names.read(&self.inner).await
    }

    /// Creates the semaphore with `n` permits, only if it does not exist yet (so every process
    /// may call it at start-up). Returns whether it was set. `n` may be 0 (the key then
    /// exists, holding 0, and later calls return `false`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `n` above 10^15; [`Error::WrongType`] if the key holds
    /// something else; connection errors; [`Error::Shutdown`].
    ///
    /// # Cancel safety
    /// If dropped after the command was sent, the semaphore may or may not have been set;
    /// calling it again is harmless.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let sem = client.semaphore("doctest:semaphore:try_set_permits");
    /// if sem.try_set_permits(5).await? {
    ///     println!("created with 5 permits");
    /// }
    /// # assert!(!sem.try_set_permits(7).await?); // set already: left as it is
    /// # assert_eq!(sem.available().await?, 5);
    /// # client.shutdown().await;
    /// # let check = relock::Client::connect(&url).await?;
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["doctest:semaphore:try_set_permits"]).await.unwrap(); }
    /// # check.shutdown().await; Ok(()) }
    /// ```
    pub async fn try_set_permits(&self, n: u64) -> Result<bool> {
        self.inner.check_running()?;
        let names = self.names()?;
        if n > MAX_COUNT {
            validate_count("n", n, "permits")?;
        }
        let set: i64 = names
            .run_publishing(
                &self.inner,
                (&SEMAPHORE_SET, "semaphore set"),
                &[],
                vec![n.to_string()],
                false,
            )
            .await?;
        Ok(set == 1)
    }

    /// Takes every available permit at once and returns how many that was. The key stays,
    /// holding 0 (as with Redisson's `drainPermits`).
    ///
    /// # Errors
    /// [`Error::WrongType`]; connection errors; [`Error::Shutdown`].
    ///
    /// # Cancel safety
    /// If dropped after the command was sent, the permits may have been taken with nobody
    /// told how many: as with an acquire whose reply was lost, they are gone.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let sem = client.semaphore("doctest:semaphore:drain");
    /// # sem.try_set_permits(3).await?;
    /// let n = sem.drain().await?;
    /// // ... maintenance while nobody can acquire ...
    /// # assert_eq!((n, sem.available().await?), (3, 0));
    /// sem.add_permits(n as i64).await?;
    /// # client.shutdown().await;
    /// # let check = relock::Client::connect(&url).await?;
    /// # assert_eq!(check.semaphore("doctest:semaphore:drain").available().await?, 3);
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["doctest:semaphore:drain"]).await.unwrap(); }
    /// # check.shutdown().await; Ok(()) }
    /// ```
    pub async fn drain(&self) -> Result<u64> {
        self.inner.check_running()?;
        let names = self.names()?;
        let n: i64 = names
            .run_publishing(
                &self.inner,
                (&SEMAPHORE_DRAIN, "semaphore drain"),
                &[],
                vec![],
                true,
            )
            .await?;
        Ok(n.max(0) as u64)
    }
}

/// The operations of a counting semaphore in Redisson's form (`acquire` keeps the permits
/// taken, without a guard, until a `release`), for code generic over where its permits live
/// (a [`Semaphore`], or a test double). A
/// [`PermitSemaphore`](crate::PermitSemaphore) does not implement it: its permits are one per
/// acquisition, each with an id, a lease and a guard.
///
/// ```
/// use relock::{DistributedSemaphore, Result};
/// async fn with_two<S: DistributedSemaphore>(sem: &S) -> Result<()> {
///     sem.acquire(2).await?;
///     // ... work that needs two permits ...
/// #   assert_eq!(sem.available().await?, 0);
///     sem.release(2).await
/// }
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
/// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
/// # let client = relock::Client::connect(&url).await?;
/// # let sem = client.semaphore("doctest:semaphore:generic");
/// # sem.try_set_permits(2).await?;
/// # with_two(&sem).await?;
/// # assert_eq!(sem.available().await?, 2);
/// # client.shutdown().await;
/// # let check = relock::Client::connect(&url).await?;
/// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["doctest:semaphore:generic"]).await.unwrap(); }
/// # check.shutdown().await; Ok(()) }
/// ```
#[async_trait::async_trait]
pub trait DistributedSemaphore: Send + Sync {
    /// Takes `n` permits, waiting as long as it takes, and keeps them taken until
    /// [`release`](DistributedSemaphore::release) (Redisson's form: no guard; see
    /// [`Semaphore::acquire`] for one). Cancel safe: see [`Semaphore::acquire`].
    async fn acquire(&self, n: u64) -> Result<()>;
    /// Takes `n` permits if that many are available now, keeping them taken. Cancel safe.
    async fn try_acquire(&self, n: u64) -> Result<bool>;
    /// Takes `n` permits, waiting at most about `wait`, keeping them taken. Cancel safe.
    async fn try_acquire_for(&self, n: u64, wait: Duration) -> Result<bool>;
    /// Gives back `n` permits. See [`Semaphore::release`] for its cancel safety.
    async fn release(&self, n: u64) -> Result<()>;
    /// The permits available now. Cancel safe (read only).
    async fn available(&self) -> Result<u64>;
}

#[async_trait::async_trait]
impl DistributedSemaphore for Semaphore {
    async fn acquire(&self, n: u64) -> Result<()> {
        kept(Some(Semaphore::acquire(self, n).await?)).map(drop)
    }
    async fn try_acquire(&self, n: u64) -> Result<bool> {
        kept(Semaphore::try_acquire(self, n).await?)
    }
    async fn try_acquire_for(&self, n: u64, wait: Duration) -> Result<bool> {
        kept(Semaphore::try_acquire_for(self, n, wait).await?)
    }
    async fn release(&self, n: u64) -> Result<()> {
        Semaphore::release(self, n).await
    }
    async fn available(&self) -> Result<u64> {
        Semaphore::available(self).await
    }
}

/// Redisson's form of a guard: the permits kept without it; `Shutdown` if the client's shutdown
/// gave them back meanwhile.
fn kept(permits: Option<SemaphorePermits>) -> Result<bool> {
    match permits.map(SemaphorePermits::forget) {
        None => Ok(false),
        Some(0) => Err(Error::Shutdown),
        Some(_) => Ok(true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(dead_code)]
    fn futures_are_send(sem: Semaphore, latch: crate::CountDownLatch) {
        fn send<T: Send>(_: T) {}
        send(sem.acquire(1));
        send(sem.try_acquire_for(1, Duration::ZERO));
        send(sem.release(1));
        send(latch.wait());
        send(latch.wait_for(Duration::ZERO));
    }
}
