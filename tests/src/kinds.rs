//! Every kind a [`relock::Client`] makes from a name, in one list: the tests that must cover
//! every kind (data under a lock's name, the key prefix, the least-privilege ACL users, a
//! force-unlocked holder, the `Send + Sync + 'static` bounds) walk [`KINDS`], so that a kind
//! added here is covered by each of them. `tests/lock`'s `t109` fails when `lib.rs` exports a
//! type that is neither a kind's (here) nor named in [`NOT_KINDS`].

use std::time::Duration;

use relock::{Client, DistributedLock, LockStatus};

/// One kind: its name, its public types, and how to make a handle of it.
#[derive(Debug)]
pub struct Kind {
    /// Its name in messages, and the last part of the names tests give it (`orders:<name>`).
    pub name: &'static str,
    /// The types of the kind that `lib.rs` exports (its handles, guards and events).
    pub exports: &'static [&'static str],
    /// Compiles only if every one of [`exports`](Kind::exports) is `Send + Sync + 'static`.
    pub bounds: fn(),
    /// A handle of the kind on `name`.
    pub make: fn(&Client, &str) -> Handle,
}

fn send_sync_static<T: Send + Sync + 'static>() {}

/// `exports` and `bounds` from one list of `relock::` type names, so they cannot disagree.
macro_rules! exports {
    ($($t:ident),+ $(,)?) => {
        (&[$(stringify!($t)),+], send_sync_static::<($(relock::$t,)+)>)
    };
}

const fn kind(
    name: &'static str,
    (exports, bounds): (&'static [&'static str], fn()),
    make: fn(&Client, &str) -> Handle,
) -> Kind {
    Kind {
        name,
        exports,
        bounds,
        make,
    }
}

/// Every kind of a [`Client`].
pub const KINDS: &[Kind] = &[
    kind("plain", exports!(Lock, LockGuard), |c, n| {
        Handle::Lock(c.lock(n))
    }),
    kind("fair", exports!(Lock, LockGuard), |c, n| {
        Handle::Lock(c.fair_lock(n))
    }),
    kind("spin", exports!(Lock, LockGuard, SpinBackoff), |c, n| {
        Handle::Spin(c.spin_lock(n))
    }),
    kind(
        "read",
        exports!(ReadWriteLock, ReadLock, LockGuard),
        |c, n| Handle::Read(c.read_write_lock(n)),
    ),
    kind(
        "write",
        exports!(ReadWriteLock, WriteLock, LockGuard),
        |c, n| Handle::Write(c.read_write_lock(n)),
    ),
    kind(
        "semaphore",
        exports!(Semaphore, SemaphorePermits),
        |c, n| Handle::Semaphore(c.semaphore(n)),
    ),
    kind("permits", exports!(PermitSemaphore, PermitGuard), |c, n| {
        Handle::Permits(c.permit_expirable_semaphore(n))
    }),
    kind("latch", exports!(CountDownLatch), |c, n| {
        Handle::Latch(c.count_down_latch(n))
    }),
    kind(
        "rate",
        exports!(RateLimiter, RateConfig, RateType),
        |c, n| Handle::RateLimiter(c.rate_limiter(n)),
    ),
    kind(
        "election",
        exports!(Election, Leadership, Observation, Leader, LeaderEvent),
        |c, n| Handle::Election(c.election(n)),
    ),
    kind("job", exports!(Job, JobGuard), |c, n| {
        Handle::Job(c.job(n, Duration::from_secs(10)))
    }),
];

/// What `lib.rs` exports that is not a kind of a [`Client`], and why.
pub const NOT_KINDS: &[(&str, &str)] = &[
    ("Client", "the client every kind is made from"),
    ("ClientBuilder", "the client's builder"),
    ("ClusterPubSub", "a client setting"),
    ("OwnerInfo", "what a client says of itself"),
    ("fred", "the Redis client relock is built on"),
    ("Error", "errors"),
    ("Result", "errors"),
    ("Vote", "errors"),
    ("NodeVote", "errors"),
    ("DistributedLock", "the trait every lock kind implements"),
    ("DistributedSemaphore", "the trait of the semaphore's Redisson form"),
    ("Owner", "an explicit owner of holds of any lock kind"),
    ("Reentrancy", "a client setting"),
    ("Commands", "a batch a guard writes under its hold"),
    ("MAX_COMMAND_WORDS", "a bound on a guard's batch"),
    ("MAX_NAME_LEN", "a bound on every kind's name"),
    ("LockStatus", "a lock kind's status"),
    ("Holder", "a lock kind's status"),
    ("Waiter", "a lock kind's status"),
    ("KeyNames", "a lock kind's status"),
    ("OwnerLayout", "a lock kind's status"),
    ("Inspection", "what is under a name, of any kind"),
    (
        "FencedKey",
        "a value written under a holder's fencing token: it never holds nor waits",
    ),
    (
        "MultiLock",
        "all of several locks of the kinds here, of any clients (tests/lock m*)",
    ),
    ("MultiGuard", "the multi-lock's guard"),
    (
        "QuorumLock",
        "a kind of a QuorumClient, not of a Client (tests/quorum: q104 for its ACL line, q106 for a force-unlock)",
    ),
    ("QuorumClient", "the quorum lock's client"),
    ("QuorumClientBuilder", "the quorum client's builder"),
];

/// A handle of one of [`KINDS`].
#[derive(Debug, Clone)]
pub enum Handle {
    /// A plain or fair lock.
    Lock(relock::Lock),
    /// A spin lock.
    Spin(relock::Lock),
    /// A read-write lock, held for reading.
    Read(relock::ReadWriteLock),
    /// A read-write lock, held for writing.
    Write(relock::ReadWriteLock),
    Semaphore(relock::Semaphore),
    Permits(relock::PermitSemaphore),
    Latch(relock::CountDownLatch),
    RateLimiter(relock::RateLimiter),
    Election(relock::Election),
    Job(relock::Job),
}

impl Handle {
    /// A lock kind's handle, as a [`DistributedLock`]; `None` for the other kinds.
    pub fn as_lock(&self) -> Option<Box<dyn DistributedLock>> {
        match self {
            Handle::Lock(l) | Handle::Spin(l) => Some(Box::new(l.clone())),
            Handle::Read(rw) => Some(Box::new(rw.read_lock())),
            Handle::Write(rw) => Some(Box::new(rw.write_lock())),
            _ => None,
        }
    }

    /// For a lock kind: the lock of the same name on `c` that its hold keeps out, and that
    /// keeps it out (the same kind; for a read hold a writer, for a write hold a reader).
    pub fn rival_on(&self, c: &Client) -> Option<Box<dyn DistributedLock>> {
        match self {
            Handle::Lock(l) if l.is_fair() => Some(Box::new(c.fair_lock(l.name()))),
            Handle::Lock(l) => Some(Box::new(c.lock(l.name()))),
            Handle::Spin(l) => Some(Box::new(c.spin_lock(l.name()))),
            Handle::Read(rw) => Some(Box::new(c.read_write_lock(rw.name()).write_lock())),
            Handle::Write(rw) => Some(Box::new(c.read_write_lock(rw.name()).read_lock())),
            _ => None,
        }
    }

    /// For a lock kind: the channel its holders listen on (Redisson's, where a release or a
    /// force-unlock is announced). A spin lock's holders listen nowhere: they learn of a
    /// force-unlock at their next renewal.
    pub fn hold_channel(&self) -> Option<String> {
        match self {
            Handle::Lock(l) => Some(format!("redisson_lock__channel:{{{}}}", l.name())),
            Handle::Read(rw) | Handle::Write(rw) => {
                Some(format!("redisson_rwlock:{{{}}}", rw.name()))
            }
            _ => None,
        }
    }

    /// For a lock kind: its status.
    pub async fn status(&self) -> Option<relock::Result<LockStatus>> {
        match self {
            Handle::Lock(l) | Handle::Spin(l) => Some(l.status().await),
            Handle::Read(rw) | Handle::Write(rw) => Some(rw.status().await),
            _ => None,
        }
    }

    /// Takes what the kind gives: a lock kind's hold, a semaphore's permit (set to one permit
    /// first), a latch's count (set to one), a rate limiter's permit (set to one a minute), a
    /// leadership, a job's run. Each stays until
    /// [`Taken::give_back`].
    pub async fn take(&self) -> relock::Result<Taken> {
        if let Some(lock) = self.as_lock() {
            return Ok(Taken::Hold(lock.lock().await?));
        }
        Ok(match self {
            Handle::Semaphore(s) => {
                s.try_set_permits(1).await?;
                Taken::Permits(s.acquire(1).await?)
            }
            Handle::Permits(s) => {
                s.try_set_permits(1).await?;
                Taken::Permit(s.acquire(None).await?)
            }
            Handle::Latch(l) => {
                l.try_set_count(1).await?;
                Taken::Count(l.clone())
            }
            Handle::RateLimiter(l) => {
                l.try_set_rate(relock::RateType::Overall, 1, Duration::from_secs(60))
                    .await?;
                l.acquire(1).await?;
                Taken::Rate(l.clone())
            }
            Handle::Election(e) => Taken::Leadership(e.campaign("taken").await?),
            Handle::Job(j) => Taken::Run(j.start().await?),
            Handle::Lock(_) | Handle::Spin(_) | Handle::Read(_) | Handle::Write(_) => {
                unreachable!("a lock kind")
            }
        })
    }
}

/// What [`Handle::take`] took.
#[derive(Debug)]
pub enum Taken {
    Hold(relock::LockGuard),
    Permits(relock::SemaphorePermits),
    Permit(relock::PermitGuard),
    /// A latch counted to one.
    Count(relock::CountDownLatch),
    /// A rate limiter's permit.
    Rate(relock::RateLimiter),
    Leadership(relock::Leadership),
    Run(relock::JobGuard),
}

impl Taken {
    /// Gives back what was taken (a latch: counts it down; a rate limiter: releases it).
    pub async fn give_back(self) -> relock::Result<()> {
        match self {
            Taken::Hold(g) => g.unlock().await,
            Taken::Permits(p) => p.release().await,
            Taken::Permit(p) => p.release().await,
            Taken::Count(l) => l.count_down().await,
            Taken::Rate(l) => l.release(1).await,
            Taken::Leadership(l) => l.resign().await,
            Taken::Run(j) => j.finish().await,
        }
    }
}
