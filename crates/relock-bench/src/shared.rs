//! What every benchmark shares: its error, and the Redis it runs against.

/// Errors of a benchmark.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    #[error(transparent)]
    Lock(#[from] relock::Error),
    #[error("could not start a local redis-server: {0}")]
    Testkit(#[from] relock_testkit::Error),
    #[error("{0}")]
    Failed(String),
}

impl From<relock_cli::shared::CliError> for CliError {
    fn from(e: relock_cli::shared::CliError) -> Self {
        match e {
            relock_cli::shared::CliError::Lock(e) => CliError::Lock(e),
            other => CliError::Failed(other.to_string()),
        }
    }
}

/// A Redis to run against: the one given, or a fresh local one started through the test kit.
pub(crate) struct Target {
    pub(crate) url: String,
    pub(crate) server: Option<relock_testkit::RedisServer>,
}

impl Target {
    pub(crate) fn new(url: Option<String>) -> Result<Self, CliError> {
        Ok(match url {
            Some(url) => Target { url, server: None },
            None => {
                let server = relock_testkit::RedisServer::start()?;
                eprintln!("started redis-server on {}", server.addr());
                Target {
                    url: server.url(),
                    server: Some(server),
                }
            }
        })
    }
}
