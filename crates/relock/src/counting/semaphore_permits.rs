//! [`SemaphorePermits`](crate::SemaphorePermits): the permits one `acquire` of a
//! [`Semaphore`](crate::Semaphore) took, given back when dropped, as tokio's `SemaphorePermit`; and the permits
//! such guards of a client hold (`Outstanding`), given back by its shutdown.

use std::sync::Arc;

use dashmap::DashMap;

use crate::client::inner::{Inner, KindState, Round};
use crate::counting::add::{add, SEMAPHORE_ADD};
use crate::counting::names::Names;
use crate::counting::request::Request;
use crate::error::{Error, Result};
use crate::hold::detach;

/// `n` permits of a [`Semaphore`](crate::Semaphore), taken by [`acquire`](crate::Semaphore::acquire) (or a `try_`
/// form): given back when the guard is dropped (in the background), or by
/// [`release`](SemaphorePermits::release) to learn the outcome. An early `?` or a panic gives
/// them back too.
///
/// [`forget`](SemaphorePermits::forget) keeps them taken, as Redisson's `RSemaphore` does: any
/// handle, in any process, gives them back later with [`Semaphore::release`](crate::Semaphore::release).
///
/// A permit of a counting semaphore has no owner and no lease (Redisson's layout): permits of
/// a process that dies holding them are not given back by themselves. Where that matters, use
/// [`PermitSemaphore`](crate::PermitSemaphore), whose permits have leases.
/// [`Client::shutdown`](crate::Client::shutdown) gives back the permits of guards still alive.
#[must_use = "if unused the permits are given back at once"]
#[clippy::has_significant_drop]
pub struct SemaphorePermits {
    inner: Arc<Inner>,
    names: Arc<Names>,
    n: u64,
    /// Its entry in the client's `Outstanding`: its acquire's request key.
    key: String,
}

impl std::fmt::Debug for SemaphorePermits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemaphorePermits")
            .field("semaphore", &self.names.key)
            .field("permits", &self.n)
            .finish()
    }
}

/// The permits this client's acquires took and have not given back, by the acquire's request
/// key: recorded by the attempt's own (tracked) task as soon as the reply says they were
/// taken, so that shutdown sees them even while the caller's future has not been polled to
/// its guard. Whoever takes an entry out (the guard's release or drop, its `forget`, an
/// acquire cancelled after the grant, or shutdown) is the one that gives them back, once.
#[derive(Debug, Default)]
pub(crate) struct Outstanding {
    by_request: DashMap<String, (Arc<Names>, u64)>,
}

impl Outstanding {
    /// An attempt's reply says `n` permits were taken under `request`.
    pub(crate) fn record(&self, request: &str, names: Arc<Names>, n: u64) {
        self.by_request.insert(request.to_string(), (names, n));
    }

    /// Takes the entry out: true if it was there (the caller now gives them back).
    pub(crate) fn take(&self, request: &str) -> bool {
        self.by_request.remove(request).is_some()
    }
}

impl KindState for Outstanding {
    /// Gives back the permits of every guard still alive, in parallel; its drop then finds
    /// them given back. Permits whose give-back fails are lost, as a crashed holder's are.
    fn at_shutdown(&self, inner: &Arc<Inner>, work: &mut tokio::task::JoinSet<()>, _: Round) {
        let keys: Vec<String> = self.by_request.iter().map(|e| e.key().clone()).collect();
        for key in keys {
            let Some((_, (names, n))) = self.by_request.remove(&key) else {
                continue;
            };
            let inner = inner.clone();
            work.spawn(async move {
                let limit = inner.settings().command_timeout;
                let error = match tokio::time::timeout(limit, add(&inner, &names, n as i64)).await {
                    Ok(Ok(_)) => return,
                    Ok(Err(e)) => e.to_string(),
                    Err(_) => format!("no reply within {}", crate::error::Human(limit)),
                };
                tracing::warn!(semaphore = %names.key, permits = n, %error, "giving back semaphore permits at shutdown failed: they are lost");
            });
        }
    }
}

impl SemaphorePermits {
    /// The guard of the permits that `request`'s attempt took (and recorded); `None` if they
    /// are given back already (the client's shutdown did).
    pub(crate) fn claim(
        inner: &Arc<Inner>,
        names: Arc<Names>,
        n: u64,
        request: &str,
    ) -> Option<Self> {
        inner
            .state::<Outstanding>()
            .by_request
            .contains_key(request)
            .then(|| SemaphorePermits {
                inner: inner.clone(),
                names,
                n,
                key: request.to_string(),
            })
    }

    /// Takes this guard's entry out: true if it was still there (nobody gave the permits back
    /// or forgot them yet).
    fn settle(&self) -> bool {
        self.inner.state::<Outstanding>().take(&self.key)
    }

    /// How many permits it holds.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// The semaphore's name.
    pub fn semaphore(&self) -> &str {
        &self.names.key
    }

    /// Keeps the permits taken without a guard, as Redisson's `acquire` does: give them back
    /// later with [`Semaphore::release`](crate::Semaphore::release), from any handle or
    /// process. Returns how many it kept: 0 if the client's shutdown gave them back already
    /// (release nothing then, or permits are created).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
    /// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
    /// # let client = relock::Client::connect(&url).await?;
    /// # let sem = client.semaphore("doctest:semaphore:forget");
    /// # sem.try_set_permits(2).await?;
    /// let n = sem.acquire(2).await?.forget();
    /// # assert_eq!((n, sem.available().await?), (2, 0));
    /// // ... elsewhere, later:
    /// sem.release(n).await?;
    /// # client.shutdown().await;
    /// # let check = relock::Client::connect(&url).await?;
    /// # assert_eq!(check.semaphore("doctest:semaphore:forget").available().await?, 2);
    /// # { use relock::fred::interfaces::KeysInterface; let _: i64 = check.pool().del(vec!["doctest:semaphore:forget"]).await.unwrap(); }
    /// # check.shutdown().await; Ok(()) }
    /// ```
    pub fn forget(self) -> u64 {
        // Settled here, the guard's drop finds nothing to give back (settling is once).
        if self.settle() {
            self.n
        } else {
            0
        }
    }

    /// Gives the permits back and reports how that went.
    ///
    /// # Errors
    /// As [`Semaphore::release`](crate::Semaphore::release); [`Error::Shutdown`] if the client's shutdown gave them
    /// back already.
    ///
    /// # Cancel safety
    /// As [`Semaphore::release`](crate::Semaphore::release): once first polled, the release runs to its end.
    pub async fn release(self) -> Result<()> {
        let mine = self.settle();
        let (inner, names, n) = (self.inner.clone(), self.names.clone(), self.n);
        // Settled above, the guard's drop gives nothing back; dropped, not forgotten, so that
        // its client, names and request key are freed.
        drop(self);
        if !mine {
            return Err(Error::Shutdown);
        }
        // A tracked task: shutdown waits for it, and a dropped future does not stop it. No
        // running check: permits taken before shutdown are given back during it too.
        let tracker = inner.shared().tracker.clone();
        tracker
            .spawn(async move { add(&inner, &names, n as i64).await.map(drop) })
            .await
            .map_err(|_| Error::Shutdown)?
    }
}

impl Drop for SemaphorePermits {
    fn drop(&mut self) {
        if !self.settle() {
            return;
        }
        let work = GiveBack {
            inner: self.inner.clone(),
            names: self.names.clone(),
            n: self.n,
            request: Request::new(&self.inner, &self.names.key),
            done: false,
        }
        .run();
        // If the client's runtime is gone, `work` is dropped unrun and `GiveBack` says the
        // permits are lost.
        let inner = &self.inner;
        detach::spawn(&inner.shared().tracker, Some(inner.runtime()), work);
    }
}

/// A dropped guard's give-back. A counting semaphore's permits have no lease to fall back on:
/// if the give-back is dropped before it ends (its runtime shut down first: a guard dropped
/// as `main` returns, without `Client::shutdown`), it says so.
struct GiveBack {
    inner: Arc<Inner>,
    names: Arc<Names>,
    n: u64,
    /// Its request id: the give-back at exit sends the same one, so that a give-back that
    /// already ran (its reply lost with the runtime) adds nothing the second time.
    request: Request,
    done: bool,
}

impl GiveBack {
    async fn run(mut self) {
        let added = self
            .names
            .run_publishing_as::<Vec<i64>>(
                &self.inner,
                (&SEMAPHORE_ADD, "semaphore add"),
                &[],
                vec![self.n.to_string()],
                Some(&self.request),
            )
            .await;
        if let Err(e) = added {
            tracing::warn!(semaphore = %self.names.key, permits = self.n, error = %e, "giving back dropped semaphore permits failed: they are lost");
        }
        self.done = true;
    }
}

impl Drop for GiveBack {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        // Its runtime ended first (`main` returned without `Client::shutdown`): the client's
        // connections are gone with it, but the process can still send the give-back.
        match give_back_at_exit(&self.inner, &self.names, self.n, &self.request) {
            Ok(()) => {
                tracing::debug!(semaphore = %self.names.key, permits = self.n, "semaphore permits dropped as their runtime ended were given back on a connection of their own")
            }
            Err(e) => {
                tracing::warn!(semaphore = %self.names.key, permits = self.n, error = %e, "semaphore permits dropped as their runtime ended could not be given back: they are lost (call Client::shutdown before the runtime ends)")
            }
        }
    }
}

/// The give-back of `n` permits when the client's runtime has ended: `semaphore_add.lua` on a
/// connection of its own, from a thread with a runtime of its own, bounded by the connect and
/// command timeouts. It blocks the dropping thread for that long at most (at exit, where the
/// alternative is permits lost for ever).
fn give_back_at_exit(
    inner: &Inner,
    names: &Names,
    n: u64,
    request: &Request,
) -> std::result::Result<(), String> {
    use fred::interfaces::ClientLike;
    // One deadline for every give-back of the process's exit: they run one after another
    // (each blocks its dropping thread), so N of them must not take N timeouts.
    let limit = exit_budget(inner.settings().connect_timeout + inner.settings().command_timeout)
        .ok_or_else(|| "the exit's time for give-backs ran out".to_string())?;
    let config = inner.conn().client_config();
    let keys = vec![names.key.clone(), request.key.clone()];
    let args = vec![
        n.to_string(),
        inner.publish_cmd().to_string(),
        request.ttl_ms.clone(),
        names.channel.clone(),
    ];
    let work = move || -> std::result::Result<(), String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(async move {
            let send = async move {
                let client = fred::types::Builder::from_config(config)
                    .build()
                    .map_err(|e| e.to_string())?;
                client.init().await.map_err(|e| e.to_string())?;
                let r: std::result::Result<Vec<i64>, _> =
                    SEMAPHORE_ADD.run(&client, keys, args).await;
                let _ = client.quit().await;
                r.map(|_| ()).map_err(|e| e.to_string())
            };
            tokio::time::timeout(limit, send)
                .await
                .map_err(|_| format!("no reply within {}", crate::error::Human(limit)))?
        })
    };
    std::thread::spawn(work)
        .join()
        .map_err(|_| "the give-back's thread panicked".to_string())?
}

/// What is left of the time for give-backs of one runtime's end: the first of a burst opens
/// a window of `limit`, later ones get what is left of it, and those that come right after it
/// closed get nothing (`None`), so N give-backs that each block take `limit` in all, not N of
/// them. A window opens again once one `limit` has passed since the last one closed.
fn exit_budget(limit: std::time::Duration) -> Option<std::time::Duration> {
    static UNTIL: std::sync::Mutex<Option<std::time::Instant>> = std::sync::Mutex::new(None);
    let mut until = UNTIL.lock().unwrap_or_else(|e| e.into_inner());
    let now = std::time::Instant::now();
    match *until {
        Some(u) if now < u => Some(u - now),
        Some(u) if now < u + limit => None,
        _ => {
            *until = Some(now + limit);
            Some(limit)
        }
    }
}
