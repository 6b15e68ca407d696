//! The one error type of the crate.

use std::time::Duration;

/// Everything that can go wrong with a relock call.
///
/// "Held by someone else" is not an error: [`try_lock`](crate::Lock::try_lock) returns `Ok(None)`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An argument was rejected before anything was sent to Redis (or, for a bound kept in
    /// Redis, such as a rate limiter's rate, by the script before it wrote anything).
    #[error("invalid argument `{name}`: {reason}")]
    InvalidArgument {
        /// Which argument.
        name: &'static str,
        /// What was wrong with it, and what is accepted.
        reason: String,
    },
    /// No connection could be made (or kept) to a Redis node.
    #[error("cannot connect to Redis at {url}: {cause}")]
    Connection {
        /// The URL or address that failed.
        url: String,
        /// Why.
        cause: String,
    },
    /// The server refused the credentials (`WRONGPASS`, `NOAUTH`): a wrong user name or
    /// password in the URL, or none where the server needs one. Not transient: retrying with
    /// the same credentials fails the same way.
    #[error("Redis at {url} refused the credentials ({}); check the user name and password in the URL (relock::guide::operations, Credentials)", .source.details())]
    Authentication {
        /// The server, without credentials.
        url: String,
        /// The server's reply.
        #[source]
        source: fred::error::Error,
    },
    /// The server's ACL does not let this user run a command, or touch a key or channel
    /// (`NOPERM`). Not transient: grant what
    /// [`guide::operations`](crate::guide::operations#least-privilege-acl-users) lists for the
    /// kind and deployment.
    #[error("Redis at {server} refused `{operation}` on `{}` for lack of permission ({}); grant the user the keys, channels and commands relock::guide::operations lists (Least-privilege ACL users)", short(.key), .source.details())]
    Permission {
        /// What we asked.
        operation: &'static str,
        /// The node.
        server: String,
        /// The key (lock name, or the client's first key) it was about.
        key: String,
        /// The server's reply, which names the command, key or channel refused.
        #[source]
        source: fred::error::Error,
    },
    /// The server refused the connection's own settings (a database index out of range in
    /// the URL, for example). Not transient: fix the URL.
    #[error("Redis at {url} refused the connection's settings ({}); fix the URL (relock::guide::operations, URLs)", .source.details())]
    Configuration {
        /// The server, without credentials.
        url: String,
        /// The server's reply.
        #[source]
        source: fred::error::Error,
    },
    /// The operation needs a hold that the caller does not have.
    ///
    /// The reentrant lock's guards never return it (a guard whose hold ended reports
    /// [`Error::LockLost`]); it is for owner-based operations of other lock kinds.
    #[error("lock `{name}` is not held by this owner")]
    NotHeld {
        /// The lock name.
        name: String,
    },
    /// The lease ran out, or the lock was deleted or force-unlocked, while it was held.
    ///
    /// Anything done under the lock since it was lost may have overlapped with another holder:
    /// see [`guide::safety`](crate::guide::safety#fencing-tokens-closing-the-gap) and
    /// [`LockGuard::fencing_token`](crate::LockGuard::fencing_token).
    #[error("lock `{name}` was lost while held (lease expired, deleted or force-unlocked)")]
    LockLost {
        /// The lock name.
        name: String,
    },
    /// A [`FencedKey`](crate::FencedKey) refused a write: it has already accepted a higher
    /// fencing token, a later holder's. Nothing was written. For an exclusive lock the
    /// writer's hold has ended (its lease ran out, or it was paused past it): stop writing
    /// and let the later holder's data stand.
    #[error("`{}` refused the write under fencing token {token}: it has accepted the higher token {highest}, so a holder after this one has written; nothing was written", short(.key))]
    StaleToken {
        /// The fenced key.
        key: String,
        /// The token the write carried.
        token: u64,
        /// The highest token the key had accepted.
        highest: u64,
    },
    /// A write's reply never came (a timeout, a connection lost, the client shut down): it
    /// may have run, or not yet: a copy delayed in the network may still arrive and run. It
    /// runs at most once (relock's pools never resend), and as one script: every command up
    /// to the first that failed, or none. Never assume it failed. A read made now is not
    /// conclusive, because the copy may land after it:
    /// - a guarded write: end the hold first (`unlock`, of the outermost guard where the hold
    ///   was entered again: an inner guard's `unlock` only lowers the count, and the field
    ///   stays). Its field is never reused, so a copy that arrives later is refused; then read
    ///   the data to learn whether the batch ran.
    /// - a fenced set: any later set with a higher token makes a late copy refused; repeating
    ///   the same value with the same token is harmless.
    ///
    /// Not transient: retry only what is safe to run twice.
    #[error("Redis at {server} did not confirm `{operation}` ({cause}): it may have run, at most once, and a late copy may still run; end the hold (or write a higher token) before reading the data to learn whether it did")]
    OutcomeUnknown {
        /// What we asked (`guarded write`, `fenced set`).
        operation: &'static str,
        /// The node.
        server: String,
        /// Why no reply came.
        cause: String,
    },
    /// A write lock of a read-write lock was asked for by code that holds a read hold of it
    /// (inside the read hold's scope, or as its owner): the write would wait for that read
    /// hold, its own, for ever. Release the read hold first, or take the write lock first and
    /// read under it (a downgrade is allowed).
    #[error("read-write lock `{name}`: a read hold cannot be upgraded to a write hold (the write would wait for the caller's own read hold); release the read hold first, or take the write lock first and read under it")]
    UpgradeRefused {
        /// The lock name.
        name: String,
    },
    /// A permit of a [`PermitSemaphore`](crate::PermitSemaphore) ended while its guard held it:
    /// its lease ran out (renewals failed, or a fixed lease was too short), or it was released
    /// by id or deleted elsewhere. Its slot may have been handed to someone else since.
    #[error("permit `{id}` of semaphore `{semaphore}` was lost while held (its lease ran out, or it was released by id or deleted elsewhere)")]
    PermitLost {
        /// The semaphore's name.
        semaphore: String,
        /// The permit's id.
        id: String,
    },
    /// A key of the lock (its hash, fencing counter or fair line), of a semaphore or latch
    /// (its count, a permit semaphore's timeouts), or of a rate limiter (its config hash, its
    /// value, its permit records), holds something relock does not keep there.
    #[error("key `{key}` exists but does not hold what relock keeps there (a lock hash of hold counts, its fencing counter, or its fair line; a semaphore's or latch's integer count, or a permit semaphore's sorted set of timeouts; a rate limiter's config hash, value or permit records); pick another name or delete the key")]
    WrongType {
        /// The key.
        key: String,
    },
    /// The key at a lock's name exists but is not a lock: a hash without a time to live, or
    /// whose fields are not lock owners (`<id>:<n>` → hold count), typically application data
    /// that shares the lock's name (`HSET orders:99 status paid`). Nothing was written,
    /// renewed, deleted or waited on; name the lock apart from data (for example with
    /// [`ClientBuilder::key_prefix`](crate::ClientBuilder::key_prefix)), or delete the key if it
    /// really is a broken lock. A key of another type than a hash is [`Error::WrongType`].
    #[error("key `{}` is not a lock: it is {found}; nothing was changed. Name locks apart from data (ClientBuilder::key_prefix), or delete the key if it is a broken lock", short(.key))]
    NotALock {
        /// The key.
        key: String,
        /// What was found there, in words (for example "a hash without a time to live").
        found: String,
    },
    /// A command did not answer in time. Its outcome on the server is unknown, except for a
    /// lock's `acquire`: the call holds nothing, and a grant that landed anyway is released
    /// under the attempt's own field (retried in the background while the server is away) or
    /// ends with its lease.
    #[error(
        "Redis at {server} did not answer `{operation}` within {}; {}",
        Human(*.timeout),
        timeout_outcome(operation)
    )]
    Timeout {
        /// What we asked.
        operation: &'static str,
        /// The node.
        server: String,
        /// The limit that ran out.
        timeout: Duration,
    },
    /// A [`RateLimiter`](crate::RateLimiter) has no rate: nothing set one
    /// ([`try_set_rate`](crate::RateLimiter::try_set_rate) or
    /// [`set_rate`](crate::RateLimiter::set_rate)), or it was deleted or its keep-alive ran
    /// out. Nothing was taken or written. Redisson's message for it is "RateLimiter is not
    /// initialized".
    #[error("rate limiter `{}` has no rate (not initialized): set one with try_set_rate or set_rate first; nothing was taken", short(.name))]
    RateNotSet {
        /// The limiter's name.
        name: String,
    },
    /// The [`Client`](crate::Client) was shut down.
    #[error("the relock client has been shut down")]
    Shutdown,
    /// With [`ClientBuilder::sync_replicas`](crate::ClientBuilder::sync_replicas), too few
    /// replicas acknowledged a fresh acquisition in time. The lock was released again.
    #[error("lock `{name}`: only {acked} of the {wanted} replicas required acknowledged the acquisition within {} (Redis WAIT); it was released. Check the replicas, or lower `sync_replicas` or raise its timeout", Human(*.timeout))]
    ReplicationFailed {
        /// The lock name.
        name: String,
        /// Replicas that acknowledged.
        acked: u32,
        /// Replicas required.
        wanted: u32,
        /// How long WAIT waited.
        timeout: Duration,
    },
    /// A quorum lock could not get a majority of its nodes to agree, and waiting longer
    /// cannot help (too many nodes down, in quarantine, or the wait budget is spent).
    #[error("quorum not reached for `{name}`: {granted} of the {needed} votes needed ({}){}", votes_text(.votes), .hint.as_deref().map(|h| format!("; {h}")).unwrap_or_default())]
    QuorumNotReached {
        /// The lock name.
        name: String,
        /// Votes needed: N/2 + 1.
        needed: usize,
        /// Votes granted in the last attempt.
        granted: usize,
        /// What each node answered in the last attempt.
        votes: Vec<NodeVote>,
        /// How to change the outcome, when a setting is what prevents the quorum.
        hint: Option<String>,
    },
    /// Redis answered with an error, or the connection failed mid-command.
    #[error("Redis error on {server} during `{operation}`: {source}")]
    Redis {
        /// What we asked.
        operation: &'static str,
        /// The node.
        server: String,
        /// fred's error.
        #[source]
        source: fred::error::Error,
    },
}

/// What one node of a quorum lock answered to one acquire attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeVote {
    /// The node's URL.
    pub node: String,
    /// Its answer.
    pub vote: Vote,
}

/// One node's answer to an acquire attempt of a quorum lock.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Vote {
    /// Granted (or re-entered).
    Granted,
    /// Held by another owner, for this much longer (`None`: no expiry).
    HeldByAnother(Option<Duration>),
    /// No answer within the per-node timeout.
    Timeout(Duration),
    /// The node failed (connection refused, error reply, not connected yet).
    Error(String),
    /// The node restarted too recently to vote: it may have lost locks that others hold.
    Quarantined {
        /// How much longer it stays out.
        remaining: Duration,
    },
    /// The attempt ended (a quorum was reached, or became impossible) before this node answered.
    NotAwaited,
}

impl std::fmt::Display for NodeVote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: ", self.node)?;
        match &self.vote {
            Vote::Granted => write!(f, "granted"),
            Vote::HeldByAnother(Some(t)) => write!(f, "held by another for {}", Human(*t)),
            Vote::HeldByAnother(None) => write!(f, "held by another (no expiry)"),
            Vote::Timeout(t) => write!(f, "no answer within {}", Human(*t)),
            Vote::Error(e) => write!(f, "error: {e}"),
            Vote::Quarantined { remaining } => {
                write!(
                    f,
                    "restarted recently, in quarantine for {} more",
                    Human(*remaining)
                )
            }
            Vote::NotAwaited => write!(f, "not awaited"),
        }
    }
}

fn votes_text(votes: &[NodeVote]) -> String {
    votes
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A name as errors and logs print it: whole up to 80 bytes, else its first 60 bytes (cut at a
/// character boundary), an ellipsis and its length.
/// What a timed-out call leaves behind, in words.
fn timeout_outcome(operation: &str) -> &'static str {
    match operation {
        // `exclusive/attempt.rs`: an acquire whose reply is lost is released under its own field, and
        // the caller retires that field.
        "acquire" => "this call holds nothing (a grant that landed anyway is released, or ends with its lease)",
        // `LockGuard::extend`: an extension never shortens a lease, so one that landed late
        // only leaves the server's TTL longer than the local lease, which is kept.
        "extend" => "the local lease was not lengthened (the server's may have been: safe, it only ever lengthens)",
        _ => "the outcome is unknown",
    }
}

/// A duration as people write it: `29s`, `1.5s`, `300ms`, `2m30s`, `1h` (to the millisecond;
/// `Debug`'s `28.999901815s` is for programmers).
pub(crate) struct Human(pub(crate) Duration);

impl std::fmt::Display for Human {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_zero() {
            return write!(f, "0s");
        }
        // Rounded to the millisecond (59.9995 s is 1m0s, not 59.999s).
        let ms = (self.0.as_nanos() + 500_000) / 1_000_000;
        if ms == 0 {
            return write!(f, "{}µs", self.0.as_micros().max(1));
        }
        if ms < 1000 {
            return write!(f, "{ms}ms");
        }
        let (h, m, s, rest) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
        if h > 0 {
            write!(f, "{h}h")?;
        }
        if m > 0 {
            write!(f, "{m}m")?;
        }
        if rest > 0 {
            let frac = format!("{rest:03}");
            write!(f, "{s}.{}s", frac.trim_end_matches('0'))
        } else if s > 0 {
            write!(f, "{s}s")
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod human_tests {
    use super::Human;
    use std::time::Duration;

    #[test]
    fn durations_print_as_people_write_them() {
        let h = |ms: u64| Human(Duration::from_millis(ms)).to_string();
        assert_eq!(h(0), "0s");
        assert_eq!(h(300), "300ms");
        assert_eq!(h(1500), "1.5s");
        assert_eq!(h(28_999), "28.999s");
        assert_eq!(h(29_000), "29s");
        assert_eq!(h(150_000), "2m30s");
        assert_eq!(h(3_600_000), "1h");
        // Rounded to the millisecond.
        let n = |nanos: u64| Human(Duration::from_nanos(nanos)).to_string();
        assert_eq!(n(28_999_901_815), "29s");
        assert_eq!(n(59_999_500_000), "1m");
        assert_eq!(n(1), "1µs");
        assert_eq!(h(60_500), "1m0.5s");
        assert_eq!(h(3_600_500), "1h0.5s");
        assert_eq!(h(3_601_000), "1h1s");
    }
}

pub(crate) fn short(name: &str) -> std::borrow::Cow<'_, str> {
    if name.len() <= 80 {
        return name.into();
    }
    let mut end = 60;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &name[..end], name.len()).into()
}

/// `Result<T, relock::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A write's error, where the reply's loss makes the outcome unknown
    /// ([`Error::OutcomeUnknown`]); other errors as they are.
    pub(crate) fn unconfirmed(self, operation: &'static str, server: String) -> Self {
        match self {
            Error::Shutdown => Error::OutcomeUnknown {
                operation,
                server,
                cause: "the client shut down while the reply was awaited".into(),
            },
            Error::Timeout {
                server, timeout, ..
            } => Error::OutcomeUnknown {
                operation,
                server,
                cause: format!("no reply within {}", Human(timeout)),
            },
            Error::Connection { url, cause } => Error::OutcomeUnknown {
                operation,
                server: url,
                cause,
            },
            e => e,
        }
    }

    pub(crate) fn invalid(name: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidArgument {
            name,
            reason: reason.into(),
        }
    }

    /// Whether retrying later may succeed: connection trouble, timeouts, a command that could
    /// not be routed during a reconnect, and a server that is loading, read-only (a demoted
    /// master), busy or has its cluster down. An error the server would give again (a bad
    /// argument, a script error, a reply of the wrong shape) is not transient.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Connection { .. } | Error::Timeout { .. } | Error::QuorumNotReached { .. } => {
                true
            }
            Error::Redis { source, .. } => redis_transient(source),
            _ => false,
        }
    }

    /// Whether the call that failed may still have run on the server (no reply came: a
    /// timeout, or a connection lost after the command may have been written). An error
    /// reply, or a command that was never routed, did not run.
    pub(crate) fn may_have_run(&self) -> bool {
        matches!(self, Error::Connection { .. } | Error::Timeout { .. })
    }

    /// The `cause` label of a failed attempt's error, in metrics and acquire spans: each
    /// variant names its own, so the code that records it names no kind.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn cause_label(&self) -> &'static str {
        match self {
            Error::Timeout { .. } => "timeout",
            Error::Connection { .. } => "connection",
            Error::Redis { .. } => "redis",
            Error::WrongType { .. } => "wrong_type",
            Error::NotALock { .. } => "not_a_lock",
            Error::Authentication { .. } => "authentication",
            Error::Permission { .. } => "permission",
            Error::Configuration { .. } => "configuration",
            Error::ReplicationFailed { .. } => "replication",
            Error::QuorumNotReached { .. } => "no_quorum",
            _ => "other",
        }
    }
}

/// [`Error::may_have_run`] for fred's error, before it is mapped: during shutdown the mapped
/// error is [`Error::Shutdown`], which says nothing about the call.
pub(crate) fn fred_may_have_run(e: &fred::error::Error) -> bool {
    use fred::error::ErrorKind;
    matches!(
        e.kind(),
        ErrorKind::Timeout | ErrorKind::IO | ErrorKind::Canceled
    )
}

/// Whether a fred error or server error reply is worth retrying (see [`Error::is_transient`]).
pub(crate) fn redis_transient(e: &fred::error::Error) -> bool {
    use fred::error::ErrorKind;
    // OOM (maxmemory with noeviction, the usual setting for a lock store) and MISCONF (writes
    // refused while snapshots fail) end when memory or disk is freed.
    const REPLIES: [&str; 9] = [
        "READONLY",
        "LOADING",
        "TRYAGAIN",
        "MASTERDOWN",
        "CLUSTERDOWN",
        "BUSY",
        "NOREPLICAS",
        "OOM",
        "MISCONF",
    ];
    let details = e.details();
    match e.kind() {
        ErrorKind::IO
        | ErrorKind::Canceled
        | ErrorKind::Timeout
        | ErrorKind::Routing
        | ErrorKind::Backpressure
        | ErrorKind::Cluster
        | ErrorKind::Sentinel => true,
        // fred's own words for a command caught in a reconnect (`ErrorKind::Unknown`).
        ErrorKind::Unknown
            if [
                "Failed to route command",
                "Max attempts exceeded",
                "Too many failed write attempts",
                "Max redirections exceeded",
            ]
            .iter()
            .any(|m| details.starts_with(m)) =>
        {
            true
        }
        _ => REPLIES.iter().any(|r| details.starts_with(r)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fred::error::{Error as Fred, ErrorKind};

    fn redis(kind: ErrorKind, details: &str) -> Error {
        Error::Redis {
            operation: "test",
            server: "redis://127.0.0.1:6379".into(),
            source: Fred::new(kind, details.to_string()),
        }
    }

    #[test]
    fn only_errors_a_retry_can_cure_are_transient() {
        for (kind, details) in [
            (ErrorKind::Unknown, "Failed to route command."),
            (ErrorKind::Routing, "Failed to route command."),
            (ErrorKind::IO, "Connection reset by peer"),
            (
                ErrorKind::Unknown,
                "READONLY You can't write against a read only replica.",
            ),
            (
                ErrorKind::Unknown,
                "LOADING Redis is loading the dataset in memory",
            ),
            (ErrorKind::Cluster, "CLUSTERDOWN The cluster is down"),
            (ErrorKind::Unknown, "BUSY Redis is busy running a script."),
            (
                ErrorKind::Unknown,
                "OOM command not allowed when used memory > 'maxmemory'.",
            ),
        ] {
            assert!(redis(kind.clone(), details).is_transient(), "{details}");
        }
        for (kind, details) in [
            (
                ErrorKind::Unknown,
                "ERR wrong number of arguments for 'evalsha' command",
            ),
            (
                ErrorKind::Unknown,
                "ERR user_script:3: Script attempted to access nonexistent global variable",
            ),
            (ErrorKind::Protocol, "unexpected permits acquire reply [7]"),
            (
                ErrorKind::InvalidArgument,
                "WRONGTYPE Operation against a key holding the wrong kind of value",
            ),
            (ErrorKind::Auth, "WRONGPASS invalid username-password pair"),
        ] {
            assert!(!redis(kind.clone(), details).is_transient(), "{details}");
        }
        assert!(!Error::invalid("n", "0").is_transient());
    }

    #[test]
    fn only_a_call_without_a_reply_may_have_run() {
        let timeout = Error::Timeout {
            operation: "test",
            server: "s".into(),
            timeout: Duration::from_secs(1),
        };
        let cut = Error::Connection {
            url: "s".into(),
            cause: "broken pipe".into(),
        };
        assert!(timeout.may_have_run() && cut.may_have_run());
        assert!(!redis(ErrorKind::Unknown, "Failed to route command.").may_have_run());
        assert!(!redis(ErrorKind::Unknown, "ERR script error").may_have_run());
    }
}
