//! The Redis names of one semaphore or latch ([`Names`]), and the calls on them: scripts
//! that publish the count's changes, and the count's read.

use fred::interfaces::KeysInterface;
use fred::types::FromValue;

use crate::client::inner::Inner;
use crate::client::scripts::Script;
use crate::counting::counts::parse_count;
use crate::counting::request::{retrying, Request};
use crate::error::Result;

/// The Redis names of one semaphore or latch: the string holding the count (the kind's name
/// itself) and the channel its changes are published on.
#[derive(Debug)]
pub(crate) struct Names {
    pub(crate) key: String,
    pub(crate) channel: String,
}

impl Names {
    /// Runs `script` with KEYS `[key, more…]` and ARGV `args` followed by the publish command
    /// (`publish`, or `spublish` on a Cluster). With `once` (a call that must take effect
    /// once), KEYS also gets a [`Request`] key, and ARGV its lifetime. The channel comes last
    /// in ARGV: never a key, so that an ACL user needs a channel grant for it, not a key grant.
    pub(crate) async fn run_publishing<R: FromValue>(
        &self,
        inner: &Inner,
        call: (&Script, &'static str),
        more: &[&str],
        args: Vec<String>,
        once: bool,
    ) -> Result<R> {
        let request = once.then(|| Request::new(inner, &self.key));
        self.run_publishing_as(inner, call, more, args, request.as_ref())
            .await
    }

    /// [`run_publishing`](Self::run_publishing) under a request the caller made (and may send
    /// again itself: a copy under the same request takes effect once).
    pub(crate) async fn run_publishing_as<R: FromValue>(
        &self,
        inner: &Inner,
        (script, operation): (&Script, &'static str),
        more: &[&str],
        mut args: Vec<String>,
        request: Option<&Request>,
    ) -> Result<R> {
        args.push(inner.publish_cmd().into());
        let mut keys = vec![self.key.clone()];
        keys.extend(more.iter().map(|k| k.to_string()));
        if let Some(r) = request {
            keys.push(r.key.clone());
            args.push(r.ttl_ms.clone());
        }
        args.push(self.channel.clone());
        let once = || async {
            script
                .run(inner.conn(), keys.clone(), args.clone())
                .await
                .map_err(|e| inner.error(operation, &self.key, e))
        };
        // A call with a request id is sent again after a transient error (a connection cut
        // off, a command not routed during a reconnect, no answer in time): whichever copies
        // run, it takes effect once. Without this a release failed on a blip, and its caller
        // could not tell whether the permit was given back.
        match request {
            Some(request) => request.send(inner, once).await,
            None => once().await,
        }
    }

    /// The count (`GET`): missing = 0, negative = 0; not an integer is `WrongType`.
    /// The count (`GET`), read again after a transient error (see [`retrying`]).
    pub(crate) async fn read(&self, inner: &Inner) -> Result<u64> {
        let value: Option<String> = retrying(inner, || async {
            inner
                .pool()
                .next()
                .get(self.key.as_str())
                .await
                .map_err(|e| inner.error("get", &self.key, e))
        })
        .await?;
        parse_count(value, &self.key)
    }
}
