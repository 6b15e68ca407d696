//! What count is under a name, read without changing anything: a semaphore's or latch's count,
//! or a permit-expirable semaphore's (its layout is the permit semaphore's own: `permit_semaphore`).
//! For `Client::inspect`.

use fred::interfaces::{ClientLike, KeysInterface, SortedSetsInterface};
use fred::types::{ClusterHash, CustomCommand};

use crate::client::handle::Client;
use crate::error::Result;

/// The count under a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counted {
    /// A string holding an integer: a semaphore's available permits or a latch's count.
    Count(i64),
    /// A count beside a permit semaphore's timeouts: the available permits, those whose lease
    /// has ended counted back (as `available()` and Redisson count them), and the permits whose
    /// lease runs.
    Permits { available: i64, held: u64 },
}

impl Client {
    /// The count under `name`; `None` if no string holding an integer is there. Read only, with
    /// a few commands (not at one moment: a count that changes meanwhile may be read half old).
    pub(crate) async fn read_count(&self, name: &str) -> Result<Option<Counted>> {
        let sem = self.permit_expirable_semaphore(name);
        let (_, keys) = sem.keys()?;
        let inner = &sem.inner;
        let pool = &inner.pool();
        let err = |key: &str, e| inner.error("inspect", key, e);
        let kind: String = pool
            .r#type(keys.count.as_str())
            .await
            .map_err(|e| err(&keys.count, e))?;
        if kind != "string" {
            return Ok(None);
        }
        let value: Option<String> = pool
            .get(keys.count.as_str())
            .await
            .map_err(|e| err(&keys.count, e))?;
        let Some(count) = value.and_then(|v| v.parse::<i64>().ok()) else {
            return Ok(None);
        };
        let timeouts = keys.timeouts.as_str();
        let kind: String = pool.r#type(timeouts).await.map_err(|e| err(timeouts, e))?;
        match kind.as_str() {
            "none" => return Ok(Some(Counted::Count(count))),
            "zset" => {}
            // Not a permit semaphore's timeouts: not a count relock knows.
            _ => return Ok(None),
        }
        // The server's clock, which the permits' leases are counted on, from the node that
        // holds them.
        let time = CustomCommand::new_static(
            "TIME",
            ClusterHash::Custom(fred::util::redis_keyslot(timeouts.as_bytes())),
            false,
        );
        let (secs, micros): (i64, i64) = pool
            .next()
            .custom(time, Vec::<String>::new())
            .await
            .map_err(|e| err(timeouts, e))?;
        let now = secs * 1000 + micros / 1000;
        let ended: i64 = pool
            .zcount(timeouts, f64::NEG_INFINITY, now as f64)
            .await
            .map_err(|e| err(timeouts, e))?;
        let held: u64 = pool
            .zcount(timeouts, (now + 1) as f64, f64::INFINITY)
            .await
            .map_err(|e| err(timeouts, e))?;
        Ok(Some(Counted::Permits {
            available: count + ended,
            held,
        }))
    }
}
