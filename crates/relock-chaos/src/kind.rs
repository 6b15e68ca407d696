//! The kinds the harness runs, and the constants their workloads share.

use clap::ValueEnum;

/// The lock kind under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// `client.lock(name)` on one server.
    Plain,
    /// `client.fair_lock(name)` on one server.
    Fair,
    /// `client.spin_lock(name)` on one server: the plain lock's keys, its waiters polling with
    /// the default back-off (no pub/sub).
    Spin,
    /// `client.read_write_lock(name)` on one server: the write side in 70% of the cycles (a
    /// fenced read-modify-write), the read side otherwise (a fenced read).
    Rw,
    /// `client.semaphore(name)` on one server: a counting semaphore of [`SEM_PERMITS`]
    /// permits; a section holds one (no fencing token, no lease: it only works for its time).
    Sem,
    /// `QuorumClient` over 3 independent masters.
    Quorum,
    /// `client.lock(name)` on a 3-master cluster with replicas.
    Cluster,
    /// `client.lock(name)` through Sentinel (a master and a replica).
    Sentinel,
    /// `client.election(name)` on one server: a section is a term (campaign, the fenced
    /// read-modify-write with the term as token, resign).
    Election,
    /// `client.job(name, …)` on one server: a run-at-most-once job that every client tries
    /// without waiting ([`JOB_AT_LEAST`] kept after an early finish): a run is the fenced
    /// read-modify-write; two runs closer than the at-least time overlap.
    Job,
    /// `client.rate_limiter(name)` on one server: [`RATE_PERMITS`] per [`RATE_INTERVAL`] for
    /// every client together; a cycle takes one permit (no section, no token). Its checker
    /// (reported as exclusion) finds, from the grants' sent and replied times, any window of
    /// the interval in which more permits than the rate were granted.
    Rate,
}

/// The job kind's `at_least_for`.
pub const JOB_AT_LEAST: std::time::Duration = std::time::Duration::from_millis(300);

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Plain => "plain",
            Kind::Fair => "fair",
            Kind::Spin => "spin",
            Kind::Rw => "rw",
            Kind::Sem => "sem",
            Kind::Quorum => "quorum",
            Kind::Cluster => "cluster",
            Kind::Sentinel => "sentinel",
            Kind::Election => "election",
            Kind::Job => "job",
            Kind::Rate => "rate",
        }
    }

    /// How many holds of one name may overlap: [`SEM_PERMITS`] for the semaphore, 1 for the
    /// locks (a read-write lock's read holds share among themselves: see `check::exclusion`).
    pub fn capacity(self) -> usize {
        match self {
            Kind::Sem => SEM_PERMITS as usize,
            _ => 1,
        }
    }

    /// Whether holds carry a fencing token (the semaphore's do not, and a rate limiter has no
    /// holds: no fencing checks).
    pub fn fenced(self) -> bool {
        !matches!(self, Kind::Sem | Kind::Rate)
    }

    /// The rate kind's limit: (permits, interval).
    pub fn rate(self) -> Option<(u64, std::time::Duration)> {
        (self == Kind::Rate).then_some((RATE_PERMITS, RATE_INTERVAL))
    }

    /// Whether the sections' resource is a guarded counter on the lock's own server (the
    /// kinds held in a lock hash on one server), not the fenced resource on a server of its
    /// own: see `resource`.
    pub fn guarded(self) -> bool {
        matches!(
            self,
            Kind::Plain | Kind::Fair | Kind::Spin | Kind::Rw | Kind::Election | Kind::Job
        )
    }

    /// The longest the median handoff to a waiting client may be, away from faults: a round
    /// trip or two for the kinds whose waiters a release wakes; for the spin lock, whose
    /// waiters poll, its longest sleep (128 ms and up to 4 ms of jitter by default) and a
    /// margin.
    pub fn median_handoff(self) -> std::time::Duration {
        match self {
            Kind::Spin => std::time::Duration::from_millis(150),
            _ => std::time::Duration::from_millis(20),
        }
    }
}

/// The sem kind's permits per name (each client sets them at start; the first one wins).
pub const SEM_PERMITS: u64 = 2;

/// The rate kind's permits per [`RATE_INTERVAL`] (each client sets the rate at start, and again
/// if the server forgot it; the first one wins).
pub const RATE_PERMITS: u64 = 5;

/// The rate kind's interval.
pub const RATE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);
