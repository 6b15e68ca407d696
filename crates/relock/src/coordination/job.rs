//! [`Job`]: a run-at-most-once job on a plain lock's layout (ShedLock's model).
//!
//! The hold is a plain lock's hold with a fixed lease of `at_most_for`, not renewed: a run is
//! cancelled when it reaches that time, and a crashed node's hold ends by then. An early
//! finish does not release the lock but leaves it to expire at `at_least_for` after the run
//! started (`job_keep.lua`), so that a node whose scheduler fires late (a skewed clock, a slow
//! start) finds the occurrence taken. Both times are TTLs on the server, measured by this
//! process's monotonic clock: no wall clock is compared anywhere.

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::client::handle::Client;
use crate::client::inner::Inner;
use crate::client::scripts;
use crate::error::{Error, Result};
use crate::exclusive::lock::Lock;
use crate::hold::detach;
use crate::hold::guard;
use crate::hold::guard::{KeepOutcome, LockGuard};
use crate::hold::lease;

scripts::scripts! {
    /// A finished job's lock kept for what is left of its at-least time.
    JOB_KEEP = writes "job_keep.lua" [];
}

/// A job that runs at most once per occurrence across every client that shares its name:
/// each node's scheduler calls [`run`](Job::run) when the occurrence is due; one runs it, the
/// others skip (they do not wait). ShedLock's `@SchedulerLock` for Rust, on a lock that a
/// Redisson `RLock` of the same name sees held.
///
/// - **`at_most_for`** (required): the longest a run may hold the lock. The hold has this
///   fixed lease (no watchdog): a run still going at its end is cancelled with
///   [`Error::LockLost`], and a node that crashes mid-run holds the occurrence until then.
///   A `lock()` of the job's lock inside the body re-enters the run's hold and, as any
///   re-entry of a fixed-lease lock, gives it the whole lease again: the bound then counts
///   from that re-entry, not from the run's start.
/// - **`at_least_for`** (default zero): the lock stays taken at least this long after the run
///   started, even if it finished earlier, so that a node whose scheduler fires a little later
///   skips this occurrence instead of running it again. Set it to more than the clock skew and
///   start-up spread between your nodes, and less than the interval between occurrences.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
/// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
/// # let client = relock::Client::connect(&url).await?;
/// use std::time::Duration;
/// let job = client
///     .job("reports:nightly", Duration::from_secs(3600))
///     .at_least_for(Duration::from_millis(300));
/// match job.run(async |run| send_report(run.fencing_token()).await).await? {
///     Some(()) => println!("this node ran it"),
///     None => println!("another node runs or ran this occurrence"),
/// }
/// // The same occurrence, fired a moment later (here, or on another node): skipped.
/// assert_eq!(job.run(async |_| ()).await?, None);
/// # client.shutdown().await; Ok(()) }
/// # async fn send_report(_: u64) {}
/// ```
///
/// What a Redisson client sees: the plain lock's hash, held by the run's field; during the
/// at-least time after an early finish it is still held (by a fresh field of the finished
/// run's client, so that no late re-entry of the run can lengthen it), so
/// Redisson's `tryLock` fails and `isLocked` is true until it expires; Redisson's
/// `forceUnlock` ends it.
#[derive(Debug, Clone)]
pub struct Job {
    inner: Arc<Inner>,
    lock: Lock,
    at_most_for: Duration,
    at_least_for: Duration,
}

impl Client {
    /// A run-at-most-once job named `name` whose runs hold its lock at most `at_most_for`
    /// (see [`Job`]). The lock's key is `name` (with the client's key prefix), as a plain
    /// lock's: a `relock run --at-least … NAME` and a Redisson `RLock` of that name exclude it.
    /// Cheap: nothing is sent until a run starts. Bad arguments are reported by the first run.
    pub fn job(&self, name: impl Into<String>, at_most_for: Duration) -> Job {
        Job {
            inner: self.inner.clone(),
            lock: self.lock(name).with_lease(at_most_for),
            at_most_for,
            at_least_for: Duration::ZERO,
        }
    }
}

impl Job {
    /// The same job, keeping its lock at least `at_least_for` after a run starts (at most
    /// `at_most_for`: a longer one is refused when a run starts).
    pub fn at_least_for(mut self, at_least_for: Duration) -> Self {
        self.at_least_for = at_least_for;
        self
    }

    /// The job's name (also its lock's key).
    pub fn name(&self) -> &str {
        self.lock.name()
    }

    /// Its `at_most_for`.
    pub fn at_most_for(&self) -> Duration {
        self.at_most_for
    }

    /// The lock a run holds (a plain lock with a fixed lease of `at_most_for`): for its status,
    /// or to wait until no run holds it.
    pub fn lock(&self) -> &Lock {
        &self.lock
    }

    /// Runs `f` now unless another client runs or ran this occurrence (the lock is taken):
    /// `Some(output)` if it ran, `None` if it skipped. Tries once, without waiting. The body
    /// gets the run's guard (its fencing token, `lost()`); a `lock()` of the job's lock inside
    /// it re-enters the run's hold. The body is cancelled (dropped at the await it is parked
    /// on) if the hold is lost: `at_most_for` reached, or the lock deleted or force-unlocked.
    /// Afterwards the lock is kept for what is left of `at_least_for` (or released if nothing
    /// is), also after an error or a panic in the body (the panic is resumed afterwards).
    ///
    /// # Errors
    /// [`Error::LockLost`] if the hold was lost while the body ran (its work may overlap a
    /// later run); [`Error::InvalidArgument`] for a zero or over-long `at_most_for`, an
    /// `at_least_for` longer than `at_most_for`, or a bad name; connection errors; those of
    /// [`JobGuard::finish`].
    ///
    /// # Cancel safety
    /// Dropping the future drops the body and finishes the run in the background (kept for
    /// what is left of `at_least_for`), as an early finish.
    pub async fn run<T>(&self, f: impl AsyncFnOnce(&LockGuard) -> T) -> Result<Option<T>> {
        let Some(guard) = self.try_start().await? else {
            return Ok(None);
        };
        let name = guard.name().to_string();
        let out = {
            let body = guard::catch_unwind(guard.scope(f(&guard)));
            tokio::select! {
                // A loss seen at the same poll as the body's end wins: the output may have
                // been made after the exclusion ended.
                biased;
                () = guard.lost() => None,
                out = body => Some(out),
            }
        };
        let finished = guard.finish().await;
        match out {
            None => Err(Error::LockLost { name }),
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            Some(Ok(v)) => finished.map(|()| Some(v)),
        }
    }

    /// Starts a run now unless the lock is taken: its guard, or `None` without waiting. Finish
    /// it with [`JobGuard::finish`] (or drop it) when the work is done.
    ///
    /// # Errors
    /// As [`run`](Job::run), without the body's.
    ///
    /// # Cancel safety
    /// As [`Lock::try_lock`](crate::Lock::try_lock): a grant whose future was dropped is
    /// released.
    pub async fn try_start(&self) -> Result<Option<JobGuard>> {
        self.validate()?;
        let guard = self.lock.try_lock().await?;
        Ok(guard.map(|g| self.guard(g)))
    }

    /// Starts a run, waiting for the lock at most `wait` (for the command's `--wait`); `None`
    /// if it was still taken then. A job that waits runs after another run of the same name:
    /// for "once per occurrence" across a fleet use [`try_start`](Job::try_start).
    ///
    /// # Errors
    /// As [`try_start`](Job::try_start).
    ///
    /// # Cancel safety
    /// As [`Lock::try_lock_for`](crate::Lock::try_lock_for).
    pub async fn try_start_for(&self, wait: Duration) -> Result<Option<JobGuard>> {
        self.validate()?;
        let guard = self.lock.try_lock_for(wait).await?;
        Ok(guard.map(|g| self.guard(g)))
    }

    /// Starts a run, waiting as long as it takes for the lock (see
    /// [`try_start_for`](Job::try_start_for)).
    ///
    /// # Errors
    /// As [`try_start`](Job::try_start).
    ///
    /// # Cancel safety
    /// As [`Lock::lock`](crate::Lock::lock).
    pub async fn start(&self) -> Result<JobGuard> {
        self.validate()?;
        let guard = self.lock.lock().await?;
        Ok(self.guard(guard))
    }

    fn guard(&self, guard: LockGuard) -> JobGuard {
        JobGuard {
            inner: self.inner.clone(),
            // From the grant's reply (a little after the server granted it): the lock is kept
            // until at least `at_least_for` after the server's grant.
            started: Instant::now(),
            at_least_for: self.at_least_for,
            guard: Some(guard),
            runtime: tokio::runtime::Handle::try_current().ok(),
        }
    }

    fn validate(&self) -> Result<()> {
        lease::validate_lease("at_most_for", self.at_most_for)?;
        if self.at_least_for > self.at_most_for {
            return Err(Error::invalid(
                "at_least_for",
                format!(
                    "{} is longer than at_most_for ({}): the lock cannot be kept longer than a run may hold it; lower at_least_for or raise at_most_for",
                    crate::error::Human(self.at_least_for),
                    crate::error::Human(self.at_most_for)
                ),
            ));
        }
        Ok(())
    }
}

/// A run of a [`Job`]: the lock's guard (it derefs to [`LockGuard`]: fencing token, `lost()`,
/// scope) until [`finish`](JobGuard::finish), which keeps the lock for what is left of
/// `at_least_for` or releases it. Dropping it finishes the same way in the background.
#[must_use = "if unused the run finishes at once"]
#[derive(Debug)]
pub struct JobGuard {
    inner: Arc<Inner>,
    started: Instant,
    at_least_for: Duration,
    guard: Option<LockGuard>,
    runtime: Option<tokio::runtime::Handle>,
}

impl Deref for JobGuard {
    type Target = LockGuard;

    fn deref(&self) -> &LockGuard {
        self.guard
            .as_ref()
            .expect("a job guard has its lock guard until finished")
    }
}

impl JobGuard {
    /// How long the lock stays taken after a finish now: what is left of `at_least_for`.
    pub fn kept_for(&self) -> Duration {
        self.at_least_for.saturating_sub(self.started.elapsed())
    }

    /// Ends the run: the lock is kept for what is left of `at_least_for` (its TTL shortened to
    /// that, the hold left as it is, so others still see it taken), or released when nothing
    /// is left.
    ///
    /// # Errors
    /// [`Error::LockLost`] if the hold had been lost (the run may have overlapped another);
    /// connection errors, after which the lock ends with its `at_most_for` lease at the latest
    /// (never sooner than it should).
    ///
    /// # Cancel safety
    /// The finish runs in its own task: dropping this future does not stop it.
    pub async fn finish(mut self) -> Result<()> {
        let guard = self.guard.take().expect("finished once");
        let work = finish(self.inner.clone(), guard, self.kept_for());
        match self.inner.shared().tracker.spawn(work).await {
            Ok(r) => r,
            Err(_) => Err(Error::Shutdown),
        }
    }
}

impl Drop for JobGuard {
    fn drop(&mut self) {
        if let Some(guard) = self.guard.take() {
            let work = finish(self.inner.clone(), guard, self.kept_for());
            let work = async move {
                if let Err(e) = work.await {
                    if !matches!(e, Error::LockLost { .. } | Error::Shutdown) {
                        tracing::warn!(error = %e, "a job's background finish failed; its lock ends with its at-most lease");
                    }
                }
            };
            detach::spawn(&self.inner.shared().tracker, self.runtime.as_ref(), work);
        }
    }
}

/// Keeps `guard`'s lock for `keep`, or releases it (nothing left to keep, the hold lost, or
/// other counts of the hold out).
async fn finish(inner: Arc<Inner>, guard: LockGuard, keep: Duration) -> Result<()> {
    let keep_ms = keep.as_millis() as u64;
    if keep_ms == 0 {
        return guard.unlock().await;
    }
    let name = guard.name().to_string();
    // Waiters parked until the at-most lease they last read are told the lock now ends
    // sooner (Redisson's unlock message: they try again and park until the kept time's end).
    let channel = guard.hold().keys.channel.clone();
    guard
        .unlock_or_keep(|field| async move {
            let kept = JOB_KEEP
                .run::<i64>(
                    inner.conn(),
                    vec![name.clone()],
                    vec![
                        field,
                        keep_ms.to_string(),
                        inner.new_field(),
                        inner.publish_cmd().to_string(),
                        channel,
                    ],
                )
                .await
                // Outcome unknown: a release now could end the at-least time early; the hold
                // ends with its lease (at most `at_most_for`), which is never too soon.
                .map_err(|e| inner.error("job finish", &name, e))?;
            Ok(keep_outcome(kept))
        })
        .await
}

/// Reads `job_keep.lua`'s reply: 1 kept, 2 other counts of the hold are out, anything else
/// gone.
pub(super) fn keep_outcome(reply: i64) -> KeepOutcome {
    match reply {
        1 => KeepOutcome::Kept,
        2 => KeepOutcome::NotAlone,
        _ => KeepOutcome::Gone,
    }
}
