//! **The client room: one Redis deployment (a server, a Cluster or Sentinel) and its wire.**
//!
//! - `handle`: [`Client`](crate::Client), the public handle, and its `shutdown`, which runs
//!   the shutdown step each kind registered (`KindState`) and names no kind.
//! - `inner`: `Inner`, what every clone of a client shares (the pool, the subscriber, the
//!   settings, the holds), the kinds' per-client state (`KindState`), `park`, the release
//!   call, and what a Redis error means for the caller.
//! - `settings`, `builder`, `connect`: what a client is configured with, checked, and how fred
//!   is started (its unsafe defaults replaced); `refusal`, `redact`, `tls`: what a Redis or
//!   connection error means for the caller, with credentials never shown.
//! - `scripts`: `scripts!` (each module declares its own scripts once), EVALSHA with
//!   NOSCRIPT fallback (told to a `Tracker`, for a caller that orders other calls after a
//!   script's); `lock_scripts`: the lock layout's scripts that the shared code sends.
//! - `pubsub`: one subscriber per client, refcounted subscriptions, the dispatcher (which
//!   hands each message to the format the subscribing kind gave, and knows none itself);
//!   `pubsub_health`: re-subscribing after a reconnect or a cluster topology change, and the
//!   keep-alive.
//! - `batch`: coalescing of plain acquires and releases into one script call.
//! - `inner_backend`: `Inner` as the one-server [`Backend`](crate::hold::backend::Backend) (release with
//!   retries, batch renewal).
//! - `retry`: the one background retry of an undo whose outcome was unknown (a release, a
//!   clean-up, a give-back), with shutdown's last chance.
//! - `identity`: who holds a field ([`OwnerInfo`](crate::OwnerInfo), from `CLIENT LIST`);
//!   `guarded`: a guarded write's script call and its reply.
//! - `hold_watch`: a live hold listens on its channel so `lost()` fires within a round trip
//!   of a force-unlock (and `Watched`, for what a kind holds under a lease of its own).
//!
//! It uses the hold room and the crate root, never a kind: the kinds (`exclusive`,
//! `counting`) and the quorum sit above it.

pub(crate) mod batch;
pub(crate) mod builder;
pub(crate) mod connect;
#[cfg(test)]
pub(crate) mod decode_prop;
pub(crate) mod guarded;
pub(crate) mod handle;
pub(crate) mod hold_watch;
pub(crate) mod identity;
pub(crate) mod inner;
pub(crate) mod inner_backend;
pub(crate) mod lock_scripts;
#[cfg(test)]
mod parsers_prop;
pub(crate) mod pubsub;
pub(crate) mod pubsub_health;
pub(crate) mod redact;
pub(crate) mod refusal;
pub(crate) mod retry;
pub(crate) mod scripts;
pub(crate) mod settings;
pub(crate) mod tls;
