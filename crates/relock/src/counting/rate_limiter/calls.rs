//! The rate limiter's scripts, its keys ([`RateKeys`], Redisson's five and relock's one) and its calls: each
//! script call with its reply read into a result or a typed refusal ([`Calls`]).

use std::time::Duration;

use crate::client::inner::Inner;
use crate::client::scripts::{self, Script};
use crate::counting::counts::unexpected;
use crate::counting::rate_limiter::config::{RateConfig, RateType};
use crate::counting::request::Request;
use crate::error::{Error, Result};
use crate::hold::keys::suffixed;

scripts::scripts! {
    /// Rate limiter: set the rate if the limiter has none (Redisson's `trySetRate`).
    RATE_TRY_SET = writes "rate_try_set.lua" ["rate"];
    /// Rate limiter: set the rate, starting the limit afresh (Redisson's `setRate`).
    RATE_SET = writes "rate_set.lua" ["rate"];
    /// Rate limiter: take permits, or say when the oldest record expires (`tryAcquire`).
    RATE_ACQUIRE = writes "rate_acquire.lua" ["rate"];
    /// Rate limiter: give permits back before their records expire (`release`).
    RATE_RELEASE = writes "rate_release.lua" ["rate"];
    /// Rate limiter: the permits available now (`availablePermits`), read only.
    RATE_AVAILABLE = read_only "rate_available.lua" ["rate"];
    /// Rate limiter: its config (`getConfig`), read only.
    RATE_CONFIG = read_only "rate_config.lua" ["rate"];
    /// Rate limiter: delete its config and state (`delete`).
    RATE_DELETE = writes "rate_delete.lua" ["rate"];
}

/// The five keys of Redisson's rate-limiter scripts, in their order, then relock's own: the
/// rate this client's `PerClient` value was last written under (another client's set changes
/// the rate without touching this client's state).
#[derive(Debug)]
pub(crate) struct RateKeys {
    /// The config hash, the name itself.
    pub(crate) config: String,
    keys: [String; 6],
}

impl RateKeys {
    /// `name`'s keys (name already prefixed), with `client_id`'s own for `PerClient`: the
    /// config hash `name`, `{name}:value`, `{name}:value:<client>`, `{name}:permits`,
    /// `{name}:permits:<client>` (Redisson's `suffixName`: a name with its own `{tag}` keeps
    /// it, so every key is in the name's cluster slot), and relock's `{name}:rate:<client>`.
    pub(crate) fn new(name: &str, client_id: &str) -> Self {
        let value = suffixed(name, "value");
        let permits = suffixed(name, "permits");
        let client_value = format!("{value}:{client_id}");
        let client_permits = format!("{permits}:{client_id}");
        let client_rate = format!("{}:{client_id}", suffixed(name, "rate"));
        RateKeys {
            config: name.to_string(),
            keys: [
                name.to_string(),
                value,
                client_value,
                permits,
                client_permits,
                client_rate,
            ],
        }
    }

    fn all(&self) -> Vec<String> {
        self.keys.to_vec()
    }
}

/// What one acquire script call found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grant {
    /// Taken.
    Taken,
    /// Not enough permits: the oldest record expires within this long.
    Wait(Duration),
}

/// One limiter's script calls on one client.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Calls<'a> {
    pub(crate) inner: &'a Inner,
    /// The limiter's name, for errors.
    pub(crate) name: &'a str,
    pub(crate) keys: &'a RateKeys,
}

impl Calls<'_> {
    /// The keys a script runs on: all six, or the config's alone.
    fn names(&self, config_only: bool) -> Vec<String> {
        if config_only {
            vec![self.keys.config.clone()]
        } else {
            self.keys.all()
        }
    }

    /// Runs a script that writes on the limiter's keys.
    async fn run(
        &self,
        (script, operation): (&Script, &'static str),
        config_only: bool,
        args: Vec<String>,
    ) -> Result<Vec<i64>> {
        let reply = script
            .run(self.inner.conn(), self.names(config_only), args)
            .await;
        reply.map_err(|e| self.inner.error(operation, &self.keys.config, e))
    }

    /// Runs a read-only script (`EVALSHA_RO`) on the limiter's keys.
    async fn read(
        &self,
        (script, operation): (&Script, &'static str),
        config_only: bool,
    ) -> Result<Vec<i64>> {
        let reply = script
            .run_read_only(self.inner.conn(), self.names(config_only), vec![])
            .await;
        reply.map_err(|e| self.inner.error(operation, &self.keys.config, e))
    }

    /// The typed error of a refusal reply (`{-1}`, `{-2, rate}`, `{-3, key}`), else a
    /// protocol error naming the reply.
    fn refused(&self, operation: &'static str, n: u64, reply: &[i64]) -> Error {
        match *reply {
            [-1, ..] => Error::RateNotSet {
                name: self.name.to_string(),
            },
            [-2, rate] => Error::invalid(
                "n",
                format!(
                    "{n} permits requested, but the rate is {rate}: requested permits amount \
                     cannot exceed defined rate"
                ),
            ),
            [-3, i] if (1..=6).contains(&i) => Error::WrongType {
                key: self.keys.keys[i as usize - 1].clone(),
            },
            _ => unexpected(operation, self.inner, reply),
        }
    }

    /// Sets `config` only if the limiter has none; whether it was set.
    pub(crate) async fn try_set(&self, config: RateConfig) -> Result<bool> {
        let args = config.args()?;
        let reply = self
            .run((&RATE_TRY_SET, "rate try set"), true, args)
            .await?;
        match *reply {
            [set @ (0 | 1)] => Ok(set == 1),
            _ => Err(self.refused("rate try set", 0, &reply)),
        }
    }

    /// Sets `config` whatever the limiter had, starting the limit afresh.
    pub(crate) async fn set(&self, config: RateConfig) -> Result<()> {
        let args = config.args()?;
        let reply = self.run((&RATE_SET, "rate set"), false, args).await?;
        match *reply {
            [1] => Ok(()),
            _ => Err(self.refused("rate set", 0, &reply)),
        }
    }

    /// One acquire script call for `n` permits (checked).
    pub(crate) async fn attempt(&self, n: u64) -> Result<Grant> {
        self.inner.check_running()?;
        // The record's id: 16 random bytes, as Redisson's, sent as hex (the script decodes
        // them) so that the record's bytes are Redisson's.
        let id = uuid::Uuid::new_v4().simple().to_string();
        let reply = self
            .run(
                (&RATE_ACQUIRE, "rate acquire"),
                false,
                vec![n.to_string(), id],
            )
            .await?;
        match *reply {
            [1, _now] => Ok(Grant::Taken),
            [0, delay] => Ok(Grant::Wait(Duration::from_millis(delay.max(1) as u64))),
            _ => Err(self.refused("rate acquire", n, &reply)),
        }
    }

    /// Gives `n` permits (checked) back, once: under a request id of its own, so that a copy
    /// of the call (sent again after a transient error, or resent by a pool after a
    /// reconnect) gives nothing back a second time.
    pub(crate) async fn release(&self, n: u64) -> Result<()> {
        let request = Request::new(self.inner, &self.keys.config);
        let mut names = self.keys.all();
        names.push(request.key.clone());
        let args = vec![n.to_string(), request.ttl_ms.clone()];
        let reply: Vec<i64> = request
            .send(self.inner, || async {
                RATE_RELEASE
                    .run(self.inner.conn(), names.clone(), args.clone())
                    .await
                    .map_err(|e| self.inner.error("rate release", &self.keys.config, e))
            })
            .await?;
        match *reply {
            [1, _] => Ok(()),
            _ => Err(self.refused("rate release", n, &reply)),
        }
    }

    /// The permits available now, read only.
    pub(crate) async fn available(&self) -> Result<u64> {
        let reply = self
            .read((&RATE_AVAILABLE, "rate available"), false)
            .await?;
        match *reply {
            [1, n] if n >= 0 => Ok(n as u64),
            _ => Err(self.refused("rate available", 0, &reply)),
        }
    }

    /// The limiter's config, `None` if it has no rate.
    pub(crate) async fn config(&self) -> Result<Option<RateConfig>> {
        let reply = self.read((&RATE_CONFIG, "rate config"), true).await?;
        match *reply {
            [-1] => Ok(None),
            [1, rate, interval, kind @ (0 | 1), keep] if rate >= 0 && interval >= 0 => {
                let rate_type = if kind == 1 {
                    RateType::PerClient
                } else {
                    RateType::Overall
                };
                let config = RateConfig::new(
                    rate_type,
                    rate as u64,
                    Duration::from_millis(interval as u64),
                )
                .with_keep_alive(Duration::from_millis(keep.max(0) as u64));
                Ok(Some(config))
            }
            _ => Err(self.refused("rate config", 0, &reply)),
        }
    }

    /// Deletes the config and the state of both types; whether there was anything. Refused
    /// (`WrongType`, nothing deleted) if a key holds something the limiter never keeps there.
    pub(crate) async fn delete(&self) -> Result<bool> {
        let reply = self
            .run((&RATE_DELETE, "rate delete"), false, vec![])
            .await?;
        match *reply {
            [1, deleted] => Ok(deleted > 0),
            _ => Err(self.refused("rate delete", 0, &reply)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_redissons_and_share_the_names_slot() {
        let k = RateKeys::new("api", "c1");
        assert_eq!(
            k.all(),
            [
                "api",
                "{api}:value",
                "{api}:value:c1",
                "{api}:permits",
                "{api}:permits:c1",
                "{api}:rate:c1"
            ]
        );
        let tagged = RateKeys::new("a{b}c", "c1");
        assert_eq!(tagged.keys[1], "a{b}c:value");
        assert_eq!(tagged.keys[4], "a{b}c:permits:c1");
        assert_eq!(tagged.keys[5], "a{b}c:rate:c1");
        for k in [&k, &tagged] {
            let slot = fred::util::redis_keyslot(k.config.as_bytes());
            for key in k.all() {
                assert_eq!(fred::util::redis_keyslot(key.as_bytes()), slot, "{key}");
            }
        }
    }
}
