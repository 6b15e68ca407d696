//! [`DistributedLock`]: what every lock kind offers, for code generic over the kind.

use std::time::Duration;

use async_trait::async_trait;

use crate::error::Result;
use crate::hold::guard::LockGuard;

/// The operations shared by every relock lock kind (the plain, fair and quorum locks), so that
/// code can be generic over the kind.
///
/// Like `tokio::sync::Mutex`, `lock()` waits for any other holder, including another future of
/// the calling task; it re-enters a hold only inside that hold's
/// [`LockGuard::scope`](crate::LockGuard::scope) (or an [`Owner::scope`](crate::Owner::scope),
/// or with the opt-in [`Reentrancy::PerTask`](crate::Reentrancy::PerTask)).
///
/// ```
/// use relock::{DistributedLock, Result};
/// async fn with_lock<L: DistributedLock>(lock: &L) -> Result<u64> {
///     let guard = lock.lock().await?;
///     Ok(guard.fencing_token())
/// }
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> relock::Result<()> {
/// # let Ok(url) = std::env::var("RELOCK_DOCTEST_URL") else { eprintln!("RELOCK_DOCTEST_URL is not set: doctest skipped"); return Ok(()) };
/// # let client = relock::Client::connect(&url).await?;
/// # assert!(with_lock(&client.lock("doctest:distributed_lock")).await? > 0);
/// # assert!(with_lock(&client.fair_lock("doctest:distributed_lock:fair")).await? > 0);
/// # client.shutdown().await; Ok(()) }
/// ```
#[async_trait]
pub trait DistributedLock: Send + Sync {
    /// Acquires, waiting as long as it takes. Cancel safe: see [`Lock::lock`](crate::Lock::lock).
    async fn lock(&self) -> Result<LockGuard>;
    /// Acquires if free (or re-enters inside the hold's scope); never waits. Cancel safe.
    async fn try_lock(&self) -> Result<Option<LockGuard>>;
    /// Acquires, waiting at most about `wait`. Cancel safe.
    async fn try_lock_for(&self, wait: Duration) -> Result<Option<LockGuard>>;
    /// Deletes the lock whoever holds it; returns whether it was held.
    async fn force_unlock(&self) -> Result<bool>;
    /// Whether anyone holds the lock. Cancel safe (read only).
    async fn is_locked(&self) -> Result<bool>;
    /// Where the lock's data lives and its name (`redis://host:port orders:42`; the server's
    /// URL without credentials, as the client was given it): what a
    /// [`MultiLock`](crate::MultiLock) orders its parts by, so that every process takes them
    /// in the same order. Two handles on the same data have the same resource.
    fn resource(&self) -> String;
    /// Every place the lock's data lives: its [`resource`](DistributedLock::resource), or for
    /// a quorum lock one per master (`redis://host:port name`), so that a quorum lock and a
    /// lock of the same name on one of its masters are seen to share data.
    fn resources(&self) -> Vec<String> {
        vec![self.resource()]
    }
}

/// The acquiring methods every lock kind offers, written once (as lock_api writes its guards
/// once over a raw lock): `lock`, `try_lock`, `try_lock_for` and `with`, on top of the kind's
/// own `async fn acquire(&self, wait: Option<Duration>) -> Result<Option<LockGuard>>`
/// (`None`: wait as long as it takes; `Some(ZERO)`: never wait). `$errors` documents the
/// errors of `lock`, and the kind's [`DistributedLock`] implementation comes with them.
/// `$make` is the hidden line of the doctests that connects `client` (from `url`, the
/// `RELOCK_DOCTEST_URL` they run against) and defines `make`, which makes a lock of the kind from a
/// name.
macro_rules! lock_methods {
    ($kind:ident, errors: $errors:literal, cancel: $cancel:literal, doc_make: $make:literal) => {
        impl $kind {
            /// Acquires the lock, waiting as long as it takes; inside the scope of a hold of
            /// this lock, re-enters it instead.
            ///
            /// # Errors
            #[doc = $errors]
            ///
            /// # Cancel safety
            #[doc = $cancel]
            pub async fn lock(&self) -> $crate::Result<$crate::LockGuard> {
                loop {
                    if let Some(g) = self.acquire(None).await? {
                        return Ok(g);
                    }
                }
            }

            /// Acquires the lock if it is free (or re-enters it inside its scope); never
            /// waits. `Ok(None)` means someone else holds it.
            ///
            /// # Errors
            #[doc = concat!("As [`lock`](", stringify!($kind), "::lock).")]
            ///
            /// # Cancel safety
            #[doc = concat!("As [`lock`](", stringify!($kind), "::lock).")]
            pub async fn try_lock(&self) -> $crate::Result<Option<$crate::LockGuard>> {
                self.acquire(Some(std::time::Duration::ZERO)).await
            }

            /// Acquires the lock, waiting at most about `wait`. `Ok(None)` means it was still
            /// held.
            ///
            /// # Errors
            #[doc = concat!("As [`lock`](", stringify!($kind), "::lock).")]
            ///
            /// # Cancel safety
            #[doc = concat!("As [`lock`](", stringify!($kind), "::lock).")]
            pub async fn try_lock_for(
                &self,
                wait: std::time::Duration,
            ) -> $crate::Result<Option<$crate::LockGuard>> {
                self.acquire(Some(wait)).await
            }

            /// Acquires the lock, runs `f` inside the hold's scope (so nested `lock()` calls on
            /// this lock re-enter it), and releases it before returning, also when `f` returns
            /// an error or panics (the panic is resumed after the release).
            ///
            /// ```
            #[doc = "# #[tokio::main(flavor = \"current_thread\")] async fn main() -> relock::Result<()> {"]
            #[doc = "# let Ok(url) = std::env::var(\"RELOCK_DOCTEST_URL\") else { eprintln!(\"RELOCK_DOCTEST_URL is not set: doctest skipped\"); return Ok(()) };"]
            #[doc = concat!("# ", $make)]
            #[doc = concat!("# let lock = make(\"doctest:", stringify!($kind), ":with\");")]
            /// let token = lock.with(async |guard| {
            ///     nested(&lock).await;        // re-enters instead of waiting for itself
            ///     guard.fencing_token()
            /// }).await?;
            /// # assert!(token > 0 && !lock.is_locked().await?);
            /// # client.shutdown().await; Ok(()) }
            #[doc = concat!("# async fn nested(lock: &relock::", stringify!($kind), ") { lock.lock().await.unwrap().unlock().await.unwrap(); }")]
            /// ```
            ///
            /// # Errors
            #[doc = concat!("As [`lock`](", stringify!($kind), "::lock); and [`Error::LockLost`](crate::Error::LockLost)")]
            /// (with `f`'s output dropped) if the hold was lost before the release: `f` may
            /// have overlapped another holder.
            ///
            /// # Cancel safety
            /// If dropped, `f` is dropped and the hold is released in the background.
            ///
            /// A fallible body returns its own `Result` inside relock's: the first `?` is the
            /// lock's, the second the body's ([`try_with`](Self::try_with) returns one).
            ///
            /// ```
            #[doc = "# #[tokio::main(flavor = \"current_thread\")] async fn main() -> Result<(), Box<dyn std::error::Error>> {"]
            #[doc = "# let Ok(url) = std::env::var(\"RELOCK_DOCTEST_URL\") else { eprintln!(\"RELOCK_DOCTEST_URL is not set: doctest skipped\"); return Ok(()) };"]
            #[doc = concat!("# ", $make)]
            #[doc = concat!("# let lock = make(\"doctest:", stringify!($kind), ":with_fallible\");")]
            /// let rows = lock.with(async |guard| write_rows(guard.fencing_token()).await).await??;
            /// # assert_eq!(rows, 1);
            /// # client.shutdown().await; Ok(()) }
            /// # async fn write_rows(_token: u64) -> std::io::Result<u64> { Ok(1) }
            /// ```
            pub async fn with<T>(
                &self,
                f: impl AsyncFnOnce(&$crate::LockGuard) -> T,
            ) -> $crate::Result<T> {
                $crate::hold::guard::run_within(self.lock().await?, f, |_| false).await
            }

            /// As [`with`](Self::with), for a body that returns `Result<T, E>` where `E` can
            /// hold relock's errors (`E: From<relock::Error>`, as `anyhow::Error`, a
            /// `Box<dyn Error>` or an application's error enum do): one `Result<T, E>` comes
            /// back, with the lock's error (if any) converted into `E`.
            ///
            /// ```
            #[doc = "# #[tokio::main(flavor = \"current_thread\")] async fn main() -> Result<(), AppError> {"]
            #[doc = "# let Ok(url) = std::env::var(\"RELOCK_DOCTEST_URL\") else { eprintln!(\"RELOCK_DOCTEST_URL is not set: doctest skipped\"); return Ok(()) };"]
            #[doc = concat!("# ", $make)]
            #[doc = concat!("# let lock = make(\"doctest:", stringify!($kind), ":try_with\");")]
            /// # assert_eq!(pay(&lock).await?, 1);
            /// # client.shutdown().await; Ok(()) }
            #[doc = concat!("async fn pay(lock: &relock::", stringify!($kind), ") -> Result<u64, AppError> {")]
            ///     lock.try_with(async |guard| {
            ///         let n = write_db(guard.fencing_token()).await?;
            ///         Ok(n)
            ///     })
            ///     .await
            /// }
            /// # #[derive(Debug)] enum AppError { Lock(relock::Error), Db(std::io::Error) }
            /// # impl From<relock::Error> for AppError { fn from(e: relock::Error) -> Self { AppError::Lock(e) } }
            /// # impl From<std::io::Error> for AppError { fn from(e: std::io::Error) -> Self { AppError::Db(e) } }
            /// # async fn write_db(_token: u64) -> std::io::Result<u64> { Ok(1) }
            /// ```
            ///
            /// As a function's last expression the call needs no annotation (`E` is the
            /// function's error type); elsewhere, name it: `Ok::<_, AppError>(n)`.
            ///
            /// # Errors
            #[doc = concat!("As [`with`](", stringify!($kind), "::with), converted into `E`; and the body's own, which wins over a failed release (that one is logged).")]
            ///
            /// # Cancel safety
            /// If dropped, `f` is dropped and the hold is released in the background.
            pub async fn try_with<T, E: From<$crate::Error>>(
                &self,
                f: impl AsyncFnOnce(&$crate::LockGuard) -> std::result::Result<T, E>,
            ) -> std::result::Result<T, E> {
                let guard = self.lock().await?;
                $crate::hold::guard::run_within(guard, f, |r| r.is_err()).await?
            }

            /// As [`with_until_lost`](Self::with_until_lost), for a body that returns
            /// `Result<T, E>` with `E: From<relock::Error>` (see [`try_with`](Self::try_with)).
            ///
            /// # Errors
            #[doc = concat!("As [`with_until_lost`](", stringify!($kind), "::with_until_lost), converted into `E`; and the body's own.")]
            ///
            /// # Cancel safety
            /// If dropped, `f` is dropped and the hold is released in the background.
            pub async fn try_with_until_lost<T, E: From<$crate::Error>>(
                &self,
                f: impl AsyncFnOnce(&$crate::LockGuard) -> std::result::Result<T, E>,
            ) -> std::result::Result<T, E> {
                let guard = self.lock().await?;
                $crate::hold::guard::run_while_held(guard, f, |r| r.is_err()).await?
            }

            /// As [`with`](Self::with), but the body runs only while the lock is held: if the
            /// hold is lost first (its lease ran out, renewals failed, or someone
            /// force-unlocked it), the body is dropped at the await it is parked on, as
            /// node-redlock's `using` aborts its routine, and the result is
            /// [`Error::LockLost`](crate::Error::LockLost). A body that must not stop half-way
            /// (it has no await point that may be cut) wants [`with`](Self::with) and
            /// [`LockGuard::lost`] instead.
            ///
            /// ```
            #[doc = "# #[tokio::main(flavor = \"current_thread\")] async fn main() -> relock::Result<()> {"]
            #[doc = "# let Ok(url) = std::env::var(\"RELOCK_DOCTEST_URL\") else { eprintln!(\"RELOCK_DOCTEST_URL is not set: doctest skipped\"); return Ok(()) };"]
            #[doc = concat!("# ", $make)]
            #[doc = concat!("# let lock = make(\"doctest:", stringify!($kind), ":with_until_lost\");")]
            /// match lock.with_until_lost(async |guard| copy_batches(guard.fencing_token()).await).await {
            ///     Err(relock::Error::LockLost { .. }) => eprintln!("lock lost: the copy stopped"),
            ///     other => other?,
            /// }
            /// # assert!(!lock.is_locked().await?);
            /// # client.shutdown().await; Ok(()) }
            /// # async fn copy_batches(_token: u64) {}
            /// ```
            ///
            /// # Errors
            #[doc = concat!("As [`with`](", stringify!($kind), "::with).")]
            ///
            /// # Cancel safety
            /// If dropped, `f` is dropped and the hold is released in the background.
            pub async fn with_until_lost<T>(
                &self,
                f: impl AsyncFnOnce(&$crate::LockGuard) -> T,
            ) -> $crate::Result<T> {
                $crate::hold::guard::run_while_held(self.lock().await?, f, |_| false).await
            }
        }

        #[async_trait::async_trait]
        impl $crate::DistributedLock for $kind {
            async fn lock(&self) -> $crate::Result<$crate::LockGuard> {
                $kind::lock(self).await
            }
            async fn try_lock(&self) -> $crate::Result<Option<$crate::LockGuard>> {
                $kind::try_lock(self).await
            }
            async fn try_lock_for(
                &self,
                wait: std::time::Duration,
            ) -> $crate::Result<Option<$crate::LockGuard>> {
                $kind::try_lock_for(self, wait).await
            }
            async fn force_unlock(&self) -> $crate::Result<bool> {
                $kind::force_unlock(self).await
            }
            async fn is_locked(&self) -> $crate::Result<bool> {
                $kind::is_locked(self).await
            }
            fn resource(&self) -> String {
                $kind::resource(self)
            }
            fn resources(&self) -> Vec<String> {
                $kind::resources(self)
            }
        }
    };
}
pub(crate) use lock_methods;
