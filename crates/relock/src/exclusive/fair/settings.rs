//! The fair lock's own client setting: the heartbeat deadline of its waiters.

use std::time::Duration;

use crate::client::builder::ClientBuilder;
use crate::client::inner::Inner;
use crate::client::settings::{KindSetting, MAX_LEASE};
use crate::error::{Error, Result};

/// The fair lock's own client setting ([`ClientBuilder::fair_heartbeat`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FairSettings {
    heartbeat: Duration,
}

impl Default for FairSettings {
    fn default() -> Self {
        FairSettings {
            heartbeat: Duration::from_secs(5),
        }
    }
}

impl KindSetting for FairSettings {
    fn check(&self) -> Result<()> {
        if self.heartbeat < Duration::from_millis(100) || self.heartbeat > MAX_LEASE {
            return Err(Error::invalid(
                "fair_heartbeat",
                format!(
                    "{}: use at least 100 ms (waiters refresh every deadline/5) and at most 30 years",
                    crate::error::Human(self.heartbeat)
                ),
            ));
        }
        Ok(())
    }
}

impl ClientBuilder {
    /// How long a fair-lock waiter keeps its place in line without a heartbeat. Each client
    /// refreshes its waiters every deadline/5, so a waiter whose process died stops holding
    /// up the line after at most this long. It is also the first lease of a watchdog hold
    /// that a release hands to a waiter (renewed to the watchdog lease soon after), so a
    /// waiter that died just before it was handed the lock holds it no longer than this.
    /// Default: 5 s; at least 100 ms.
    pub fn fair_heartbeat(self, deadline: Duration) -> Self {
        self.kind_setting(FairSettings {
            heartbeat: deadline,
        })
    }
}

/// The client's fair heartbeat deadline.
pub(crate) fn heartbeat(inner: &Inner) -> Duration {
    inner.settings().kind::<FairSettings>().heartbeat
}
