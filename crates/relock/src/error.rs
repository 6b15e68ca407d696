//! The one error type of the crate.

use std::time::Duration;

/// Everything that can go wrong with a relock call.
///
/// "Held by someone else" is not an error: [`try_lock`](crate::Lock::try_lock) returns `Ok(None)`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An argument was rejected before anything was sent to Redis.
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
    /// see `docs/safety.md` and [`LockGuard::fencing_token`](crate::LockGuard::fencing_token).
    #[error("lock `{name}` was lost while held (lease expired, deleted or force-unlocked)")]
    LockLost {
        /// The lock name.
        name: String,
    },
    /// The key at the lock's name holds something that is not a lock.
    #[error("key `{key}` exists but is not a relock/Redisson lock hash; pick another lock name or delete the key")]
    WrongType {
        /// The key.
        key: String,
    },
    /// A command did not answer in time. Its outcome on the server is unknown.
    #[error(
        "Redis at {server} did not answer `{operation}` within {timeout:?}; the outcome is unknown"
    )]
    Timeout {
        /// What we asked.
        operation: &'static str,
        /// The node.
        server: String,
        /// The limit that ran out.
        timeout: Duration,
    },
    /// The [`Client`](crate::Client) was shut down.
    #[error("the relock client has been shut down")]
    Shutdown,
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

/// `Result<T, relock::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn invalid(name: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidArgument {
            name,
            reason: reason.into(),
        }
    }

    /// Whether retrying later may succeed (connection trouble and timeouts).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Error::Connection { .. } | Error::Timeout { .. } | Error::Redis { .. }
        )
    }
}
