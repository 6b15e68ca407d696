//! **The hold room: what a client holds, and nothing that talks to Redis.**
//!
//! A *hold* is one fresh acquisition of a lock: its own server field, its guards, its fencing
//! token, its local lease deadline and its `lost()` signal. Everything here works over the
//! [`Backend`](backend::Backend) trait, so the one-server client and the quorum share it, and
//! no file here names a lock kind or a deployment.
//!
//! - `acquire`: the acquire every kind shares (running check, keys, lease check, the kind's
//!   plan, the spans and their record), over the kind's re-entry and fresh wait.
//! - `holds`: the client's record of its holds ([`Hold`](holds::Hold), `Holds`,
//!   `FieldMaker` for never-reused fields).
//! - `lease`: [`Lease`](lease::Lease), the rules of anything held under a lease (its local
//!   end, its loss, a late renewal): a hold keeps one, and so does a semaphore's permit.
//! - `backend`: the [`Backend`](backend::Backend) trait (release, renewal batches and
//!   rounds) and `Shared`, what every backend keeps (client id, holds, task tracker).
//! - `guard`: [`LockGuard`](crate::LockGuard), written once over any backend.
//! - `commands`: [`Commands`](crate::Commands), a batch for a guarded write, and its checks.
//! - `guarded`: the guard's guarded writes and reads, which the backend runs only while the
//!   hold is on its lock.
//! - `watchdog`: the one renewal loop per client, over any backend; a round renews the holds
//!   and what the backend adds (`Backend::other_renewals`: on one server, the permits).
//! - `reentry` and `owner`: which hold a `lock()` re-enters; [`Owner`](crate::Owner).
//! - `detach`: work that must run to its end whatever its caller does.
//! - `every`: the one periodic loop (the watchdog, heartbeats, keep-alive, reconnects), which
//!   ends with its owner or at shutdown.
//! - `distributed_lock`: [`DistributedLock`](crate::DistributedLock) and `lock_methods!`, the acquiring
//!   methods written once for every kind.
//! - `kind`: [`HoldKind`](kind::HoldKind), what a lock kind tells the shared code about its
//!   holds (its release and renewal calls, its wake-ups, its re-entry).
//! - `wake`: [`Format`](wake::Format) and [`Waking`](wake::Waking), how a kind's channel
//!   messages wake its waiters (the kind supplies them; the client's dispatcher applies them).
//! - `any`: `AsAny`, for a kind to find its own type behind a shared trait object.
//! - `keys`: the names of a lock's keys and channel (Redisson's `{name}` rule).
//! - `meter`: counters and span fields for benchmarks and traces.
//!
//! Rooms above may use this one; this one uses only the crate root (`error`, `seam`).

pub(crate) mod acquire;
pub(crate) mod any;
pub(crate) mod backend;
pub(crate) mod commands;
pub(crate) mod detach;
pub(crate) mod distributed_lock;
pub(crate) mod every;
pub(crate) mod guard;
pub(crate) mod guarded;
pub(crate) mod holds;
pub(crate) mod keys;
pub(crate) mod kind;
pub(crate) mod lease;
pub(crate) mod meter;
pub(crate) mod owner;
pub(crate) mod reentry;
pub(crate) mod wake;
pub(crate) mod watchdog;
