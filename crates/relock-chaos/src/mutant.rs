//! Deliberately broken variants of relock, for the chaos harness to show that its checkers
//! catch broken locks (`relock-chaos --mutant NAME`). Compiled only with the `chaos-mutants`
//! feature, which builds relock with its `chaos-seams` hooks: [`activate`] installs one
//! variant through them (once, before the first lock); without it nothing changes. The
//! variants live here, not in the published library.
//!
//! Each mutant breaks one safety mechanism *end to end*: where relock has a second line of
//! defence (a client-side deadline behind a server-side check), the mutant removes both,
//! because a checker can only see what a broken library would let its callers believe.

use std::borrow::Cow;

/// One broken variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mutant {
    /// The release script deletes the lock whoever holds it (no owner check): the plain, fair
    /// and quorum releases, and the spin lock's (`--kind spin`).
    ReleaseWithoutOwnerCheck,
    /// A waiter sleeps for the holder's remaining lease without subscribing to the release
    /// channel: a release wakes nobody.
    WaitWithoutSubscribing,
    /// A renewal puts a missing hold back (recreating an expired or deleted lock), and the
    /// client believes a renewal whatever its deadline.
    RenewalRecreatesExpiredLock,
    /// The fencing token is the client's wall clock in milliseconds, not the server's counter.
    TokenFromClientClock,
    /// A semaphore release (or `add_permits`) adds one permit more than it says: permits are
    /// created.
    SemaphoreReleaseCreatesAPermit,
    /// A job's early finish releases its lock instead of keeping it for `at_least_for`: the
    /// same occurrence can run again at once.
    JobFinishReleasesInsteadOfKeeping,
    /// A guarded write runs its commands without checking that the hold is on the lock, and
    /// the client sends it even when it knows the hold is lost: a stale holder writes.
    GuardedWriteSkipsHoldCheck,
    /// The rate limiter's scripts take "now" from the client's wall clock (sent as their last
    /// argument, as Redisson's do) instead of the server's `TIME`: a client whose clock is
    /// ahead finds the others' records expired and is granted more than the rate.
    RateNowFromClientClock,
}

impl Mutant {
    /// Every mutant, with the name `relock-chaos --mutant` takes.
    pub const ALL: [(&'static str, Mutant); 8] = [
        (
            "release-without-owner-check",
            Mutant::ReleaseWithoutOwnerCheck,
        ),
        ("wait-without-subscribing", Mutant::WaitWithoutSubscribing),
        (
            "renewal-recreates-expired-lock",
            Mutant::RenewalRecreatesExpiredLock,
        ),
        ("token-from-client-clock", Mutant::TokenFromClientClock),
        (
            "semaphore-release-creates-a-permit",
            Mutant::SemaphoreReleaseCreatesAPermit,
        ),
        (
            "job-finish-releases-instead-of-keeping",
            Mutant::JobFinishReleasesInsteadOfKeeping,
        ),
        (
            "guarded-write-skips-hold-check",
            Mutant::GuardedWriteSkipsHoldCheck,
        ),
        ("rate-now-from-client-clock", Mutant::RateNowFromClientClock),
    ];

    /// Whether the mutant breaks the semaphore (`relock-chaos` then runs the `sem` kind), not
    /// the lock.
    pub fn breaks_semaphore(self) -> bool {
        matches!(self, Mutant::SemaphoreReleaseCreatesAPermit)
    }

    /// Whether the mutant breaks run-at-most-once jobs (`relock-chaos` then runs the `job`
    /// kind).
    pub fn breaks_jobs(self) -> bool {
        matches!(self, Mutant::JobFinishReleasesInsteadOfKeeping)
    }

    /// Whether the mutant breaks the rate limiter (`relock-chaos` then runs the `rate` kind).
    pub fn breaks_rate(self) -> bool {
        matches!(self, Mutant::RateNowFromClientClock)
    }

    /// The mutant called `name` (see [`Mutant::ALL`]).
    pub fn from_name(name: &str) -> Option<Mutant> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
    }
}

/// Turns `mutant` on for this process (relock's seams take one installation). Call it before
/// the first lock: scripts are prepared once. Returns false if seams were already installed.
pub fn activate(mutant: Mutant) -> bool {
    relock::seam::install(Box::new(mutant))
}

impl relock::seam::Seams for Mutant {
    fn lua(&self, name: &str, lua: &'static str) -> Cow<'static, str> {
        broken_lua(*self, name, lua)
    }

    fn args(&self, name: &str, mut args: Vec<String>) -> Vec<String> {
        if *self == Mutant::RateNowFromClientClock && RATE_CLOCK_SCRIPTS.contains(&name) {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis());
            args.push(now.to_string());
        }
        args
    }

    fn channel(&self, channel: &str) -> String {
        if *self == Mutant::WaitWithoutSubscribing {
            format!("{channel}:mutant-never-published")
        } else {
            channel.to_owned()
        }
    }

    fn token(&self, token: u64) -> u64 {
        if *self == Mutant::TokenFromClientClock {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64)
        } else {
            token
        }
    }

    fn renewals_outlive_the_deadline(&self) -> bool {
        *self == Mutant::RenewalRecreatesExpiredLock
    }

    fn guarded_writes_ignore_a_lost_hold(&self) -> bool {
        *self == Mutant::GuardedWriteSkipsHoldCheck
    }
}

/// The rate limiter's scripts that read "now".
const RATE_CLOCK_SCRIPTS: [&str; 2] = ["rate_acquire", "rate_available"];

/// The Lua body `name` runs as under `active`.
fn broken_lua(active: Mutant, name: &str, lua: &'static str) -> Cow<'static, str> {
    let is = |m: Mutant| active == m;
    const OWNER_CHECK: &str =
        "    if redis.call('hdel', lock, field) == 0 then\n      return nil\n    end\n    return 1";
    const RENEW_CHECK: &str = "if redis.pcall('hexists', KEYS[i], ARGV[1 + i]) == 1 then";
    const ADD: &str = "local available = redis.call('incrby', KEYS[1], ARGV[1])";
    const KEEP: &str = "local count = redis.call('hget', KEYS[1], ARGV[1])";
    const HOLD_CHECK: &str = "if ARGV[1] == 'mode' or redis.call('hexists', KEYS[1], ARGV[1]) == 0 then\n  return {0}\nend";
    const SERVER_NOW: &str = "local t = redis.call('time')\n  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)";
    match name {
        "release" | "fair_release" | "spin_release" | "batch" | "quorum_release"
            if is(Mutant::ReleaseWithoutOwnerCheck) =>
        {
            assert!(
                lua.contains(OWNER_CHECK),
                "release.lua changed: update the mutant"
            );
            lua.replace(OWNER_CHECK, "    redis.call('del', lock)\n    return 1")
                .into()
        }
        "renew" if is(Mutant::RenewalRecreatesExpiredLock) => {
            assert!(
                lua.contains(RENEW_CHECK),
                "renew.lua changed: update the mutant"
            );
            // The hold is put back (with a lease, if the key was created anew) and renewed.
            lua.replace(
                RENEW_CHECK,
                "redis.call('hsetnx', KEYS[i], ARGV[1 + i], 1)\n  if redis.call('pttl', KEYS[i]) == -1 then redis.call('pexpire', KEYS[i], lease) end\n  if true then",
            )
            .into()
        }
        "semaphore_add" if is(Mutant::SemaphoreReleaseCreatesAPermit) => {
            assert!(
                lua.contains(ADD),
                "semaphore_add.lua changed: update the mutant"
            );
            lua.replace(
                ADD,
                "local available = redis.call('incrby', KEYS[1], tonumber(ARGV[1]) + 1)",
            )
            .into()
        }
        "job_keep" if is(Mutant::JobFinishReleasesInsteadOfKeeping) => {
            assert!(
                lua.contains(KEEP),
                "job_keep.lua changed: update the mutant"
            );
            lua.replace(
                KEEP,
                &format!("redis.call('del', KEYS[1])\ndo return 1 end\n{KEEP}"),
            )
            .into()
        }
        "guarded" if is(Mutant::GuardedWriteSkipsHoldCheck) => {
            assert!(
                lua.contains(HOLD_CHECK),
                "guarded.lua changed: update the mutant"
            );
            lua.replace(HOLD_CHECK, "").into()
        }
        name if is(Mutant::RateNowFromClientClock) && RATE_CLOCK_SCRIPTS.contains(&name) => {
            assert!(
                lua.contains(SERVER_NOW),
                "lib/rate.lua's rate_now changed: update the mutant"
            );
            // The client's clock, appended as the last argument (`args` above).
            lua.replace(SERVER_NOW, "return tonumber(ARGV[#ARGV])")
                .into()
        }
        _ => lua.into(),
    }
}
