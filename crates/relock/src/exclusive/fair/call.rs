//! The fair lock's attempt (`fair_acquire.lua`) and how its reply is read: granted, held,
//! behind another waiter, or out of line.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::client::inner::Inner;
use crate::client::scripts;
use crate::exclusive::attempt::{read_grant, AcquireCall, Reply};
use crate::exclusive::fair::channel::FAIR_CHANNEL;
use crate::exclusive::fair::first_lease::renew_first_lease;
use crate::exclusive::fair::line;
use crate::exclusive::fair::line::{QueueEntry, QueueKeys};
use crate::exclusive::fair::settings::heartbeat;
use crate::hold::holds::Hold;
use crate::hold::kind::LockKeys;
use crate::hold::wake::Format;

/// The fair lock's attempt: `fair_acquire.lua`, without joining the line (`None`: `try_lock`,
/// and the first attempt) or as the waiter `entry` (joining the line, or staying in it, if
/// not granted).
#[derive(Debug, Clone)]
pub(crate) struct FairCall(pub(crate) Option<Arc<QueueEntry>>);

/// What a fair lock's reply says beyond granted or held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FairOutcome {
    /// Free, but another waiter is first; it has this many ms to take it.
    Behind(i64),
    /// This field is out of line (evicted, or handed the lock whose lease then ran out) and
    /// was not put back: rejoin under a new field, with the ticket.
    OutOfLine,
}

/// Reads `fair_acquire.lua`'s reply: the shared shapes ([`read_grant`]), and while not
/// granted whether it is in line,
/// `[0, pttl or bound, ticket, 0 (in line) | -1 (try) | -2 (out of line), held or behind]`.
pub(crate) fn read_reply(reply: &[i64]) -> Reply<FairOutcome> {
    match *reply {
        [0, _, _, -2, _] => Reply::Kind(FairOutcome::OutOfLine),
        [0, pttl, _, _, 0] => Reply::Held(pttl),
        [0, bound, _, _, 1] => Reply::Kind(FairOutcome::Behind(bound)),
        _ => read_grant(reply),
    }
}

impl AcquireCall for FairCall {
    type Outcome = FairOutcome;

    fn call(
        &self,
        inner: &Inner,
        keys: &LockKeys,
        _: &str,
        args: &mut Vec<String>,
    ) -> (&'static scripts::Script, Vec<String>) {
        let [lock, line, token, grant] = match &self.0 {
            Some(e) => e.line.group(keys),
            None => QueueKeys::of(&keys.lock).group(keys),
        };
        let (join, ticket, first_lease, joined) = match &self.0 {
            Some(e) => {
                // Set before sending: if the reply is lost we may be in line.
                e.queued.store(true, Ordering::SeqCst);
                (
                    "wait",
                    e.ticket.load(Ordering::SeqCst),
                    e.first_lease.map_or(0, |l| l.as_millis()),
                    e.joined(),
                )
            }
            None => ("try", 0, 0, false),
        };
        args.extend([
            heartbeat(inner).as_millis().to_string(),
            join.to_string(),
            ticket.to_string(),
            inner.publish_cmd().to_string(),
            first_lease.to_string(),
            u8::from(joined).to_string(),
            keys.wake.clone(),
        ]);
        if let Some(e) = &self.0 {
            if let Some(retired) = e.replaces.as_ref().filter(|_| !joined) {
                args.push(retired.clone());
            }
        }
        (&line::FAIR_ACQUIRE, vec![lock, token, line, grant])
    }

    /// A leave of the line must not overtake this attempt (it would put us back).
    fn gate(&self) -> Option<Arc<tokio::sync::Mutex<()>>> {
        self.0.as_ref().map(|e| e.gate.clone())
    }

    /// Notes the waiter's place in line, then reads the reply.
    fn read(&self, reply: &[i64], sent: tokio::time::Instant) -> Reply<FairOutcome> {
        if let Some(e) = &self.0 {
            match ticket_in_line(reply) {
                Some(ticket) => {
                    e.ticket.store(ticket, Ordering::SeqCst);
                    // In line when the script ran: any handoff to this field comes after it.
                    e.seen_in_line(sent);
                }
                None => e.queued.store(false, Ordering::SeqCst),
            }
        }
        read_reply(reply)
    }

    /// Its waiters listen on the fair channel (`channel`).
    fn wake(&self) -> Format {
        FAIR_CHANNEL
    }

    /// A watchdog hold handed over by a release has the first lease, not the watchdog's.
    fn granted(&self, inner: &Arc<Inner>, hold: &Arc<Hold>, handed: bool, watchdog: bool) {
        if handed && watchdog {
            renew_first_lease(inner, hold.clone());
        }
    }
}

/// The waiter's ticket, if a fair acquire's reply leaves it in line; `None` if the script
/// took it out of the line (a grant) or it is out of line and was not put back.
pub(crate) fn ticket_in_line(reply: &[i64]) -> Option<i64> {
    match *reply {
        [0, _, _, -2, _] => None,
        [0, _, ticket, _, _] => Some(ticket),
        _ => None,
    }
}
