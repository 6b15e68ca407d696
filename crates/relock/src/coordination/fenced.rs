//! [`FencedKey`]: a value kept together with the highest fencing token it has accepted, for
//! data that is not on the lock's server (another Redis, another Cluster, a quorum lock's
//! data). A write under a lower token than one already accepted is refused: Kleppmann's
//! storage-side check, made for the user.

use std::sync::Arc;

use fred::types::Value;

use crate::client::handle::Client;
use crate::client::inner::Inner;
use crate::client::scripts;
use crate::error::{Error, Result};

scripts::scripts! {
    /// A fenced key's write, refused under a lower token than one accepted.
    FENCED_SET = writes "fenced_set.lua" [];
    /// A fenced key's value and token.
    FENCED_GET = read_only "fenced_get.lua" [];
}

/// A value that only a current holder can overwrite: each write carries the writer's fencing
/// token ([`LockGuard::fencing_token`](crate::LockGuard::fencing_token)), and the key refuses
/// a token lower than the highest it has accepted. A holder paused past its lease, whose lock
/// a later holder (with a higher token) has since taken and written under, is refused. Equal
/// tokens pass: the same holder may write again.
///
/// It lives on the client it was made from, which may be another Redis than the lock's: it is
/// the way to protect data that a guarded write ([`LockGuard::write`](crate::LockGuard::write))
/// cannot reach. The key is a hash of `value` and `fence` (the highest token accepted).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
/// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
/// # let client = relock::Client::connect(&url).await?;
/// # let store = client.clone(); // another Redis, in real use
/// let guard = client.lock("inventory:7").lock().await?;
/// let stock = store.fenced_key("stock:7");
/// stock.set(guard.fencing_token(), "12").await?;
/// // A writer whose token is older is refused, and told which tokens met.
/// match stock.set(guard.fencing_token() - 1, "99").await {
///     Err(relock::Error::StaleToken { token, highest, .. }) => assert!(token < highest),
///     other => panic!("{other:?}"),
/// }
/// assert_eq!(stock.get().await?, Some(("12".to_string(), guard.fencing_token())));
/// # guard.unlock().await?; relock::fred::interfaces::KeysInterface::del::<i64, _>(client.pool(), "stock:7").await.ok();
/// # client.shutdown().await; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct FencedKey {
    inner: Arc<Inner>,
    key: String,
}

impl Client {
    /// The fenced key `key` on this client's server (see [`FencedKey`]). Cheap: nothing is
    /// sent until it is read or written. The key is used as given (no key prefix).
    pub fn fenced_key(&self, key: impl Into<String>) -> FencedKey {
        FencedKey {
            inner: self.inner.clone(),
            key: key.into(),
        }
    }
}

impl FencedKey {
    /// The key's name.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Writes `value` under `token`, unless the key has accepted a higher token: one round
    /// trip, one script.
    ///
    /// # Errors
    /// [`Error::StaleToken`] when the key has accepted a higher token (nothing written);
    /// [`Error::WrongType`] if the key holds something else; [`Error::OutcomeUnknown`] when
    /// the write was sent and no reply came (written whole, once, or not at all);
    /// [`Error::Shutdown`] once the client's shutdown has begun (nothing was sent).
    ///
    /// # Cancel safety
    /// Once sent, a dropped future does not stop the write.
    pub async fn set(&self, token: u64, value: impl Into<String>) -> Result<()> {
        if token == 0 {
            return Err(Error::invalid(
                "token",
                "0 is not a fencing token: pass the guard's fencing_token()",
            ));
        }
        // Nothing is sent once shutdown has begun: that is `Shutdown`, not an unknown outcome.
        self.inner.check_running()?;
        let reply: Vec<Value> = FENCED_SET
            .run(
                self.inner.conn(),
                vec![self.key.clone()],
                vec![token.to_string(), value.into()],
            )
            .await
            .map_err(|e| {
                self.inner
                    .error("fenced set", &self.key, e)
                    .unconfirmed("fenced set", self.inner.server())
            })?;
        read_set(&reply, &self.key, token, || self.unexpected("fenced set"))
    }

    /// The value and the token it was written under; `None` if the key does not exist.
    ///
    /// # Errors
    /// [`Error::WrongType`] if the key holds something else; [`Error::InvalidArgument`] if
    /// its value is not UTF-8 (written by another tool); [`Error::Shutdown`]; connection and
    /// timeout errors.
    ///
    /// # Cancel safety
    /// Cancel safe (read only).
    pub async fn get(&self) -> Result<Option<(String, u64)>> {
        self.inner.check_running()?;
        let reply: Vec<Value> = FENCED_GET
            .run_read_only(self.inner.conn(), vec![self.key.clone()], vec![])
            .await
            .map_err(|e| self.inner.error("fenced get", &self.key, e))?;
        read_get(&reply, &self.key, || self.unexpected("fenced get"))
    }

    fn unexpected(&self, operation: &'static str) -> Error {
        Error::Redis {
            operation,
            server: self.inner.server(),
            source: fred::error::Error::new(
                fred::error::ErrorKind::Protocol,
                "unexpected reply from a fenced key's script",
            ),
        }
    }
}

/// Reads `fenced_set.lua`'s reply for a write of `key` under `token`: `[1, _]` written, `[_,
/// fence]` refused (the highest token accepted, `u64::MAX` if it cannot be read); any other
/// shape is `unexpected`.
pub(super) fn read_set(
    reply: &[Value],
    key: &str,
    token: u64,
    unexpected: impl FnOnce() -> Error,
) -> Result<()> {
    match reply {
        [ok, _] if ok.as_i64() == Some(1) => Ok(()),
        [_, fence] => Err(Error::StaleToken {
            key: key.to_owned(),
            token,
            highest: fence
                .as_string()
                .and_then(|s| s.parse().ok())
                .unwrap_or(u64::MAX),
        }),
        _ => Err(unexpected()),
    }
}

/// Reads `fenced_get.lua`'s reply for `key`: `[]` (no key) or `[value, fence]`. A fence that
/// is not a token is `WrongType`, a value that is not UTF-8 `InvalidArgument`; any other shape
/// is `unexpected`.
pub(super) fn read_get(
    reply: &[Value],
    key: &str,
    unexpected: impl FnOnce() -> Error,
) -> Result<Option<(String, u64)>> {
    let [value, fence] = reply else {
        return if reply.is_empty() {
            Ok(None)
        } else {
            Err(unexpected())
        };
    };
    let Some(fence) = fence.as_string().and_then(|s| s.parse().ok()) else {
        return Err(Error::WrongType {
            key: key.to_owned(),
        });
    };
    match value {
        Value::String(s) => Ok(Some((s.to_string(), fence))),
        Value::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) => Ok(Some((s.to_owned(), fence))),
            Err(_) => Err(Error::invalid(
                "value",
                format!(
                    "the fenced key `{key}` holds a value that is not UTF-8 (written by another tool); read it with HGET {key} value"
                ),
            )),
        },
        _ => Err(unexpected()),
    }
}
