//! [`Leadership`], the guard of a term: campaigning for it, its value, its loss, and its
//! resignation (also when it is dropped).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::client::inner::Inner;
use crate::coordination::election::handle::Election;
use crate::coordination::election::leaderships::Leaderships;
use crate::coordination::election::record::{resign_record, Led};
use crate::error::{Error, Result};
use crate::hold::detach;
use crate::hold::guard::LockGuard;
use crate::hold::reentry;

impl Election {
    /// Waits until this client leads, then states `value` as the leader's: the leadership,
    /// with its term. Candidates are served first come, first served.
    ///
    /// # Errors
    /// [`Error::LockLost`] if the leadership was lost before its value was recorded;
    /// [`Error::InvalidArgument`] if this caller already leads the election (in the
    /// leadership's scope, or as its owner: a campaign never re-enters a leadership); a bad
    /// name; connection errors.
    ///
    /// # Cancel safety
    /// As the fair lock's [`lock`](crate::Lock::lock): a campaign dropped while waiting leaves
    /// the line; one dropped after it was granted resigns in the background.
    pub async fn campaign(&self, value: impl Into<String>) -> Result<Leadership> {
        self.not_leading()?;
        let guard = self.lock.lock().await?;
        self.begin(guard, value.into()).await
    }

    /// Leads now if nobody does and nobody waits before this client; `None` otherwise, without
    /// waiting.
    ///
    /// # Errors
    /// As [`campaign`](Election::campaign).
    ///
    /// # Cancel safety
    /// As [`campaign`](Election::campaign).
    pub async fn try_campaign(&self, value: impl Into<String>) -> Result<Option<Leadership>> {
        self.not_leading()?;
        match self.lock.try_lock().await? {
            Some(guard) => Ok(Some(self.begin(guard, value.into()).await?)),
            None => Ok(None),
        }
    }

    /// As [`campaign`](Election::campaign), waiting at most `wait`; `None` if this client does
    /// not lead by then.
    ///
    /// # Errors
    /// As [`campaign`](Election::campaign).
    ///
    /// # Cancel safety
    /// As [`campaign`](Election::campaign).
    pub async fn campaign_for(
        &self,
        wait: Duration,
        value: impl Into<String>,
    ) -> Result<Option<Leadership>> {
        self.not_leading()?;
        match self.lock.try_lock_for(wait).await? {
            Some(guard) => Ok(Some(self.begin(guard, value.into()).await?)),
            None => Ok(None),
        }
    }

    /// Refuses a campaign whose `lock()` would re-enter a leadership this caller already has (in
    /// its scope, or as its owner): a second leadership of the same term, whose resignation
    /// would end the first's record while it still leads.
    fn not_leading(&self) -> Result<()> {
        let name = self.lock.name();
        let target = reentry::resolve(
            self.inner.shared().id,
            self.inner.settings().reentrancy,
            &self.inner.shared().holds,
            name,
        );
        match target {
            Ok(reentry::Target::Reenter(hold)) => Err(Error::invalid(
                "campaign",
                format!(
                    "this caller already leads `{name}` (term {}): a campaign never re-enters a leadership; resign it first, or campaign from another task or owner",
                    hold.token
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Records `value` for the hold `guard`, then hands out the leadership.
    async fn begin(&self, guard: LockGuard, value: String) -> Result<Leadership> {
        let leadership = Leadership {
            election: self.clone(),
            value: Mutex::new(value.clone()),
            state: Arc::new(Led {
                lock: self.lock.name().to_string(),
                record: self.record.to_string(),
                channel: self.channel.to_string(),
                field: guard.owner().to_string(),
                term: guard.fencing_token(),
                hold: guard.hold().clone(),
                recorded: Arc::default(),
            }),
            runtime: tokio::runtime::Handle::try_current().ok(),
            guard: Some(guard),
        };
        // From here a dropped future resigns (the leadership's drop). Recorded before its
        // record is written: a shutdown that begins while the write is on its way resigns it
        // (resigning a record that is not, or no longer, this leader's changes nothing).
        self.inner
            .state::<Leaderships>()
            .add(Arc::downgrade(&leadership.state));
        let guard = leadership.guard();
        if !self.state(guard, &value, "elected").await? {
            return Err(Error::LockLost {
                name: self.lock.name().to_string(),
            });
        }
        leadership.state.recorded.store(true, Ordering::SeqCst);
        // Shut down meanwhile: its record is resigned (by shutdown, or by this drop), and the
        // caller must not lead on a client that has stopped.
        self.inner.check_running()?;
        Ok(leadership)
    }
}

/// Leading an election: proof of a term, until [`resign`](Leadership::resign), a drop (which
/// resigns in the background) or a loss ([`lost`](Leadership::lost)).
#[must_use = "if unused the leadership is resigned at once"]
#[derive(Debug)]
pub struct Leadership {
    election: Election,
    guard: Option<LockGuard>,
    value: Mutex<String>,
    state: Arc<Led>,
    runtime: Option<tokio::runtime::Handle>,
}

impl Leadership {
    fn guard(&self) -> &LockGuard {
        self.guard
            .as_ref()
            .expect("a leadership has its guard until it resigns")
    }

    /// Its term: the fencing token of the hold, strictly increasing across leaders. Send it
    /// with every write that only the leader may make, and have the resource refuse lower ones.
    pub fn term(&self) -> u64 {
        self.guard().fencing_token()
    }

    /// The value it last stated.
    pub fn value(&self) -> String {
        self.value.lock().unwrap().clone()
    }

    /// The hold behind it (its lease, `valid_until`, scope for re-entry).
    pub fn lock_guard(&self) -> &LockGuard {
        self.guard()
    }

    /// Whether the leadership is known lost, or its lease ran out on the local clock.
    pub fn is_lost(&self) -> bool {
        self.guard().is_lost()
    }

    /// Resolves once the leadership is lost (see [`LockGuard::lost`]): stop leading.
    ///
    /// # Cancel safety
    /// Cancel safe: it only observes.
    pub async fn lost(&self) {
        self.guard().lost().await
    }

    /// States a new value for the same term (observers see
    /// [`LeaderEvent::ValueChanged`](crate::LeaderEvent::ValueChanged)).
    ///
    /// # Errors
    /// [`Error::LockLost`] if this client no longer leads; connection errors (the value may
    /// or may not have been recorded).
    ///
    /// # Cancel safety
    /// A dropped call may still record the value.
    pub async fn proclaim(&self, value: impl Into<String>) -> Result<()> {
        let value = value.into();
        if self.is_lost() {
            return Err(self.lost_error());
        }
        if !self.election.state(self.guard(), &value, "value").await? {
            // The lock or the record is no longer this leader's: either way nobody sees it
            // leading, and it must stop.
            self.state.not_leading(
                "a proclaim found the election's lock or record no longer this leader's",
            );
            return Err(self.lost_error());
        }
        *self.value.lock().unwrap() = value;
        Ok(())
    }

    fn lost_error(&self) -> Error {
        Error::LockLost {
            name: self.election.lock.name().to_string(),
        }
    }

    /// Gives up the leadership: observers are told
    /// ([`LeaderEvent::Resigned`](crate::LeaderEvent::Resigned)), then the lock is released,
    /// which hands it to the first standby in line at once.
    ///
    /// # Errors
    /// [`Error::LockLost`] if the leadership had already been lost; connection errors, after
    /// which the release is retried in the background as any release.
    ///
    /// # Cancel safety
    /// The resignation runs in its own task: dropping this future does not stop it.
    pub async fn resign(mut self) -> Result<()> {
        let guard = self.guard.take().expect("resigned once");
        let work = resign(self.election.inner.clone(), (*self.state).clone(), guard);
        match self.election.inner.shared().tracker.spawn(work).await {
            Ok(r) => r,
            Err(_) => Err(Error::Shutdown),
        }
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        if let Some(guard) = self.guard.take() {
            let work = resign(self.election.inner.clone(), (*self.state).clone(), guard);
            let work = async move {
                if let Err(e) = work.await {
                    if !matches!(e, Error::LockLost { .. } | Error::Shutdown) {
                        tracing::warn!(error = %e, "a leadership's background resignation failed");
                    }
                }
            };
            detach::spawn(
                &self.election.inner.shared().tracker,
                self.runtime.as_ref(),
                work,
            );
        }
    }
}

/// Ends `guard`'s term on the record (if it is still the record's), then releases the lock.
async fn resign(inner: Arc<Inner>, led: Led, guard: LockGuard) -> Result<()> {
    if !guard.is_lost() {
        // Best effort: an observer that misses it reports the end as an expiry.
        if let Err(e) = resign_record(&inner, &led).await {
            tracing::debug!(error = %e, "resigning an election's record failed; releasing its lock");
        }
    }
    guard.unlock().await
}
