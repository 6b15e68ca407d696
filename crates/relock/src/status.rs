//! [`Lock::status`]: what Redis holds for a lock, for operators (`relock status`).

use fred::interfaces::{HashesInterface, KeysInterface, SortedSetsInterface};

use crate::error::Result;
use crate::lock::Lock;

/// A snapshot of a lock as Redis holds it: its holders, its lease, its fencing counter and, for
/// a fair lock, its line. The reads are separate commands, so a lock that changes meanwhile can
/// show a mix of before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockStatus {
    /// The lock's name (its hash key).
    pub name: String,
    /// The owner fields of the lock hash with their hold counts (one for an exclusive lock
    /// unless the hash was written by hand); empty when the lock is free.
    pub holders: Vec<Holder>,
    /// The lock's remaining lease in ms; `None` when free, `Some(-1)` with no expiry.
    pub pttl_ms: Option<i64>,
    /// The fencing counter (the last token handed out) while it lives.
    pub counter: Option<u64>,
    /// The counter's remaining life in ms.
    pub counter_pttl_ms: Option<i64>,
    /// A fair lock's waiting line, first first (empty for a plain lock).
    pub queue: Vec<Waiter>,
}

impl LockStatus {
    /// Whether anyone holds the lock.
    pub fn is_held(&self) -> bool {
        !self.holders.is_empty()
    }
}

/// One owner field of a lock hash.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Holder {
    /// The field: `<client id>:<n>` (relock) or `<uuid>:<thread id>` (Redisson).
    pub field: String,
    /// Its hold count (re-entries).
    pub count: i64,
    /// Who wrote it, judged by its shape.
    pub layout: OwnerLayout,
}

/// Which library an owner field looks like it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OwnerLayout {
    /// `<client id>:<n>` with `n` from a 62-bit random start: at least 2³².
    Relock,
    /// `<uuid>:<thread id>`: a small thread id.
    Redisson,
    /// Neither shape.
    Unknown,
}

/// A fair-lock waiter in line.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Waiter {
    /// Its owner field (the field its hold will have).
    pub field: String,
    /// 0 for the first in line.
    pub position: usize,
    /// Its ticket (arrival order).
    pub ticket: u64,
    /// Its heartbeat deadline, server time in ms since 1970; past it, it is dropped from line.
    pub deadline_ms: Option<i64>,
}

fn layout(field: &str) -> OwnerLayout {
    match field.rsplit_once(':').map(|(_, n)| n.parse::<u64>()) {
        Some(Ok(n)) if n >= 1 << 32 => OwnerLayout::Relock,
        Some(Ok(_)) => OwnerLayout::Redisson,
        _ => OwnerLayout::Unknown,
    }
}

impl Lock {
    /// A snapshot of this lock on the server: holders, lease, fencing counter, and the fair
    /// line. For operators and tooling (`relock status`); a program that wants the lock should
    /// take it, not look first.
    ///
    /// ```no_run
    /// # async fn f(client: relock::Client) -> relock::Result<()> {
    /// let status = client.lock("jobs:nightly").status().await?;
    /// for h in &status.holders {
    ///     println!("{} holds it ({} times), {:?} ms left", h.field, h.count, status.pttl_ms);
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::WrongType`](crate::Error::WrongType) if the key is not a hash of hold counts
    /// (a string, a list, a Redisson read-write lock's hash…); connection
    /// and timeout errors as for [`is_locked`](Lock::is_locked).
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    pub async fn status(&self) -> Result<LockStatus> {
        let keys = self.keys()?;
        let inner = &self.inner;
        let conn = inner.pool.next();
        let raw: std::collections::HashMap<String, String> = conn
            .hgetall(keys.lock.as_str())
            .await
            .map_err(|e| inner.error("hgetall", &keys.lock, e))?;
        // A lock hash maps owner fields to hold counts; any other hash is not a lock (a
        // Redisson read-write lock has a `mode` field, for one).
        let mut fields = Vec::with_capacity(raw.len());
        for (field, count) in raw {
            match count.parse::<i64>() {
                Ok(n) => fields.push((field, n)),
                Err(_) => {
                    return Err(crate::Error::WrongType {
                        key: keys.lock.clone(),
                    })
                }
            }
        }
        let pttl: i64 = conn
            .pttl(keys.lock.as_str())
            .await
            .map_err(|e| inner.error("pttl", &keys.lock, e))?;
        let counter: Option<u64> = conn
            .get(keys.token.as_str())
            .await
            .map_err(|e| inner.error("get", &keys.token, e))?;
        let counter_pttl: i64 = conn
            .pttl(keys.token.as_str())
            .await
            .map_err(|e| inner.error("pttl", &keys.token, e))?;
        let mut queue = Vec::new();
        if let Some(q) = &keys.queue {
            let line: Vec<(String, f64)> = conn
                .zrange(q.queue.as_str(), 0, -1, None, false, None, true)
                .await
                .map_err(|e| inner.error("zrange", &q.queue, e))?;
            for (position, (field, ticket)) in line.into_iter().enumerate() {
                let deadline: Option<f64> = conn
                    .zscore(q.alive.as_str(), field.as_str())
                    .await
                    .map_err(|e| inner.error("zscore", &q.alive, e))?;
                queue.push(Waiter {
                    field,
                    position,
                    ticket: ticket as u64,
                    deadline_ms: deadline.map(|d| d as i64),
                });
            }
        }
        let mut holders: Vec<Holder> = fields
            .into_iter()
            .map(|(field, count)| Holder {
                layout: layout(&field),
                field,
                count,
            })
            .collect();
        holders.sort_by(|a, b| a.field.cmp(&b.field));
        Ok(LockStatus {
            name: keys.lock.clone(),
            pttl_ms: (pttl != -2).then_some(pttl),
            holders,
            counter,
            counter_pttl_ms: (counter_pttl != -2).then_some(counter_pttl),
            queue,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_layouts() {
        assert_eq!(
            layout("0b4c59d3-b59f-4456-be8d-1bdbb4722725:3600827011076526686"),
            OwnerLayout::Relock
        );
        assert_eq!(
            layout("0b4c59d3-b59f-4456-be8d-1bdbb4722725:57"),
            OwnerLayout::Redisson
        );
        assert_eq!(layout("whatever"), OwnerLayout::Unknown);
    }
}
