//! [`Lease`]: something held on the server under a lease, as this client knows it. The one
//! place that decides "held under a lease": a lock's [`Hold`](crate::hold::holds::Hold) and a
//! permit of a permit-expirable semaphore each keep one, so a hold and a permit end, are
//! renewed and report a loss by the same rules.
//!
//! The rules:
//! - its end on the local monotonic clock is conservative: the send time of the last acquire
//!   or renewal that succeeded, plus the lease it set; once that passes, it is lost, whether or
//!   not anybody looked;
//! - a renewal sent, or answered, after that end does not revive it (`is_lost()` may already
//!   have said it was lost), and a renewal never shortens it;
//! - lost is final; so is ended (its owner let it go: a guard released it, or its last guard
//!   went), after which nothing it finds gone is a loss.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy)]
struct Standing {
    until: Instant,
    lost: bool,
    ended: bool,
}

/// The local end, loss and release of one thing held under a lease.
#[derive(Debug)]
pub(crate) struct Lease {
    standing: watch::Sender<Standing>,
    /// A lock hold's lease, which the chaos harness's `renewal-recreates-expired-lock` mutant
    /// breaks; a permit's is not (each mutant breaks one mechanism).
    lock_hold: bool,
}

/// What a renewal's success did to a lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Renewal {
    /// Its end moved to `sent + lease` (or stayed, if that was earlier).
    Extended,
    /// It came too late: the lease had ended on the local clock. This call marked it lost.
    Late,
    /// It was lost already; nothing changed.
    AlreadyLost,
}

impl Lease {
    /// A lease that ends at `until` unless renewed.
    pub(crate) fn new(until: Instant) -> Self {
        Lease {
            standing: watch::Sender::new(Standing {
                until,
                lost: false,
                ended: false,
            }),
            lock_hold: false,
        }
    }

    /// A lock hold's lease (see `lock_hold`).
    pub(crate) fn of_hold(until: Instant) -> Self {
        Lease {
            lock_hold: true,
            ..Lease::new(until)
        }
    }

    /// Whether the mutant that believes renewals whatever the deadline is active here.
    fn renewals_outlive_the_deadline(&self) -> bool {
        self.lock_hold && crate::seam::renewals_outlive_the_deadline()
    }

    /// Its local end.
    pub(crate) fn valid_until(&self) -> Instant {
        self.standing.borrow().until
    }

    /// Marked lost, or past its local end.
    pub(crate) fn is_lost(&self) -> bool {
        let s = *self.standing.borrow();
        s.lost || Instant::now() >= s.until
    }

    /// Marked lost (its end may have passed without anyone marking it yet).
    pub(crate) fn is_marked_lost(&self) -> bool {
        self.standing.borrow().lost
    }

    /// Neither lost, nor ended, nor past its local end: something may still join it.
    pub(crate) fn is_live(&self) -> bool {
        let s = *self.standing.borrow();
        !s.lost && !s.ended && Instant::now() < s.until
    }

    /// Its owner let it go.
    pub(crate) fn is_ended(&self) -> bool {
        self.standing.borrow().ended
    }

    /// Marks it lost and wakes every `lost()` and `ended()`; true if this call did (it is
    /// idempotent).
    pub(crate) fn mark_lost(&self) -> bool {
        self.standing
            .send_if_modified(|s| !std::mem::replace(&mut s.lost, true))
    }

    /// Marks it lost if its end has passed, checked in the same step; true if this call did.
    fn mark_lost_if_past_end(&self) -> bool {
        self.standing.send_if_modified(|s| {
            let now_lost = !s.lost && Instant::now() >= s.until;
            s.lost |= now_lost;
            now_lost
        })
    }

    /// Marks it let go by its owner and wakes every `ended()`; true if this call did.
    pub(crate) fn mark_ended(&self) -> bool {
        self.standing
            .send_if_modified(|s| !std::mem::replace(&mut s.ended, true))
    }

    /// Something joins it (a re-entry), moving its end to `until` if that is later: only if it
    /// is live, checked in the same step, so that a lease found ended in between is not
    /// extended. False if it was not live.
    pub(crate) fn join(&self, until: Instant) -> bool {
        let mut live = false;
        self.standing.send_if_modified(|s| {
            live = !s.lost && !s.ended && Instant::now() < s.until;
            let later = live && until > s.until;
            if later {
                s.until = until;
            }
            later
        });
        live
    }

    /// A renewal sent at `sent` set a lease of `lease` on the server.
    pub(crate) fn renewed(&self, sent: Instant, lease: Duration) -> Renewal {
        let now = Instant::now();
        let revive = self.renewals_outlive_the_deadline();
        let mut outcome = Renewal::Extended;
        self.standing.send_if_modified(|s| {
            if s.lost {
                outcome = Renewal::AlreadyLost;
                return false;
            }
            if !revive && (sent >= s.until || now >= s.until) {
                s.lost = true;
                outcome = Renewal::Late;
                return true;
            }
            let until = sent + lease;
            let later = until > s.until;
            s.until = s.until.max(until);
            later
        });
        outcome
    }

    /// A call sent at `sent` set a lease of exactly `lease` on the server, possibly shorter
    /// than the one it had: its local end moves to `sent + lease` if that is sooner (never
    /// later: the caller renews as usual afterwards).
    pub(crate) fn settled(&self, sent: Instant, lease: Duration) {
        self.standing.send_if_modified(|s| {
            let until = sent + lease;
            let sooner = !s.lost && until < s.until;
            if sooner {
                s.until = until;
            }
            sooner
        });
    }

    /// Resolves once it is lost: marked lost, or its local end passed (a renewal that succeeds
    /// moves the end first), so never later than [`valid_until`](Self::valid_until). Returns
    /// true if its end passing is what ended it: this call then marked it lost, and the
    /// caller reports the loss.
    pub(crate) async fn lost(&self) -> bool {
        let mut rx = self.standing.subscribe();
        loop {
            let s = *rx.borrow_and_update();
            if s.lost {
                return false;
            }
            let until = if self.renewals_outlive_the_deadline() {
                // The mutant believes renewals whatever the deadline: only "gone" ends a hold.
                s.until + Duration::from_secs(86_400)
            } else {
                s.until
            };
            tokio::select! {
                _ = tokio::time::sleep_until(until) => {
                    // A renewal or a re-entry may have moved the end meanwhile: the end and
                    // the mark are checked in one step.
                    if self.mark_lost_if_past_end() {
                        return true;
                    }
                }
                r = rx.changed() => if r.is_err() { return false },
            }
        }
    }

    /// Resolves once it is no longer live: lost, ended, or past its local end. Unlike
    /// [`lost`](Self::lost) it marks nothing (a watcher's wait must not turn an unobserved
    /// lease end into a reported loss).
    pub(crate) async fn ended(&self) {
        let mut rx = self.standing.subscribe();
        loop {
            let s = *rx.borrow_and_update();
            if s.lost || s.ended || Instant::now() >= s.until {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(s.until) => {}
                r = rx.changed() => if r.is_err() { return },
            }
        }
    }
}

/// Longest lease accepted: PEXPIRE takes milliseconds, and tokens are µs in a Lua double.
pub(crate) const MAX_LEASE: Duration = Duration::from_secs(60 * 60 * 24 * 365 * 30);
pub(crate) fn validate_lease(name: &'static str, lease: Duration) -> Result<()> {
    if lease < Duration::from_millis(1) {
        return Err(Error::invalid(
            name,
            format!(
                "{}: a lease must be at least 1 ms",
                crate::error::Human(lease)
            ),
        ));
    }
    if lease > MAX_LEASE {
        return Err(Error::invalid(
            name,
            format!(
                "{}: a lease must be at most 30 years",
                crate::error::Human(lease)
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[tokio::test]
    async fn a_lease_is_lost_at_its_local_end_and_a_late_renewal_does_not_revive_it() {
        let start = Instant::now();
        let lease = Lease::new(start + ms(30));
        assert_eq!(lease.renewed(start + ms(10), ms(50)), Renewal::Extended);
        assert_eq!(lease.valid_until(), start + ms(60));
        assert_eq!(lease.renewed(start, ms(20)), Renewal::Extended);
        assert_eq!(
            lease.valid_until(),
            start + ms(60),
            "a renewal never shortens"
        );
        let ran_out = tokio::time::timeout(ms(2_000), lease.lost()).await.unwrap();
        assert!(ran_out, "its end passing is what ended it");
        assert!(Instant::now() >= start + ms(60));
        assert!(lease.is_lost() && !lease.is_live());
        assert_eq!(
            lease.renewed(Instant::now(), ms(1_000)),
            Renewal::AlreadyLost
        );
        assert_eq!(lease.valid_until(), start + ms(60));
    }

    #[tokio::test]
    async fn a_renewal_answered_after_the_end_marks_it_lost() {
        let start = Instant::now();
        let lease = Lease::new(start + ms(5));
        tokio::time::sleep_until(start + ms(10)).await;
        assert_eq!(lease.renewed(start, ms(1_000)), Renewal::Late);
        assert!(lease.is_lost());
        assert!(
            !lease.lost().await,
            "marked already: not ended by this wait"
        );
    }

    #[tokio::test]
    async fn only_a_live_lease_can_be_joined_and_joining_never_shortens_it() {
        let start = Instant::now();
        let lease = Lease::new(start + ms(40));
        assert!(lease.join(start + ms(10)));
        assert_eq!(lease.valid_until(), start + ms(40), "never shortened");
        assert!(lease.join(start + ms(60)));
        assert_eq!(lease.valid_until(), start + ms(60));
        tokio::time::sleep_until(start + ms(61)).await;
        assert!(!lease.join(start + ms(5_000)), "past its end: not joined");
        assert_eq!(lease.valid_until(), start + ms(60), "and not extended");
        let ended = Lease::new(Instant::now() + ms(5_000));
        ended.mark_ended();
        assert!(!ended.join(Instant::now() + ms(9_000)));
        let lost = Lease::new(Instant::now() + ms(5_000));
        lost.mark_lost();
        assert!(!lost.join(Instant::now() + ms(9_000)));
    }

    #[tokio::test]
    async fn ending_wakes_ended_but_not_lost() {
        let lease = std::sync::Arc::new(Lease::new(Instant::now() + ms(60_000)));
        let waiter = tokio::spawn({
            let lease = lease.clone();
            async move { lease.ended().await }
        });
        assert!(lease.is_live());
        assert!(lease.mark_ended());
        assert!(!lease.mark_ended(), "idempotent");
        tokio::time::timeout(ms(2_000), waiter)
            .await
            .unwrap()
            .unwrap();
        assert!(!lease.is_live() && lease.is_ended() && !lease.is_lost());
        let lost = tokio::time::timeout(ms(50), lease.lost()).await;
        assert!(lost.is_err(), "an ended lease is not a lost one");
    }
}
