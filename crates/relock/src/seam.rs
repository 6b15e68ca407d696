//! The one seam where the chaos harness's deliberately broken variants reach the core. Every
//! hook is a function here: the identity (or `false`) in a normal build. With the `chaos-seams`
//! feature a program may install [`Seams`] once, before its first lock; the broken variants
//! themselves live in the chaos harness (`relock-chaos`'s `mutant` module), not in this crate.
//! Core files call these functions and carry no `cfg` of their own.

use std::borrow::Cow;

/// What a chaos build may change, each method defaulting to what relock does. Not an API:
/// hidden, unstable, and only compiled with the `chaos-seams` feature.
#[cfg(feature = "chaos-seams")]
pub trait Seams: Send + Sync + 'static {
    /// The Lua body the script `name` runs as, given relock's.
    fn lua(&self, name: &str, lua: &'static str) -> Cow<'static, str> {
        let _ = name;
        Cow::Borrowed(lua)
    }
    /// The arguments the script `name` is sent with, given relock's.
    fn args(&self, name: &str, args: Vec<String>) -> Vec<String> {
        let _ = name;
        args
    }
    /// The channel a waiter subscribes to for `channel`'s releases.
    fn channel(&self, channel: &str) -> String {
        channel.to_owned()
    }
    /// The fencing token a new hold carries, given the script's.
    fn token(&self, token: u64) -> u64 {
        token
    }
    /// Whether lock holds believe renewals whatever the local deadline.
    fn renewals_outlive_the_deadline(&self) -> bool {
        false
    }
    /// Whether a guarded write is sent even when the hold is known lost here.
    fn guarded_writes_ignore_a_lost_hold(&self) -> bool {
        false
    }
}

#[cfg(feature = "chaos-seams")]
static INSTALLED: std::sync::OnceLock<Box<dyn Seams>> = std::sync::OnceLock::new();

/// Installs `seams` for this process: call it once, before the first lock (scripts are
/// prepared once). Returns false if seams were already installed.
#[cfg(feature = "chaos-seams")]
pub fn install(seams: Box<dyn Seams>) -> bool {
    INSTALLED.set(seams).is_ok()
}

/// The Lua body the script `name` runs as.
pub(crate) fn lua(name: &str, lua: &'static str) -> Cow<'static, str> {
    #[cfg(feature = "chaos-seams")]
    if let Some(s) = INSTALLED.get() {
        return s.lua(name, lua);
    }
    let _ = name;
    Cow::Borrowed(lua)
}

/// The arguments the script `name` is sent with (every call of a script goes through here).
pub(crate) fn args(name: &str, args: Vec<String>) -> Vec<String> {
    #[cfg(feature = "chaos-seams")]
    if let Some(s) = INSTALLED.get() {
        return s.args(name, args);
    }
    let _ = name;
    args
}

/// The channel a waiter subscribes to for `channel`'s releases.
pub(crate) fn channel(channel: &str) -> Cow<'_, str> {
    #[cfg(feature = "chaos-seams")]
    if let Some(s) = INSTALLED.get() {
        return s.channel(channel).into();
    }
    channel.into()
}

/// The fencing token a new hold carries, given the script's.
pub(crate) fn token(token: u64) -> u64 {
    #[cfg(feature = "chaos-seams")]
    if let Some(s) = INSTALLED.get() {
        return s.token(token);
    }
    token
}

/// Whether lock holds believe renewals whatever the local deadline (only "gone" ends a hold).
pub(crate) fn renewals_outlive_the_deadline() -> bool {
    #[cfg(feature = "chaos-seams")]
    if let Some(s) = INSTALLED.get() {
        return s.renewals_outlive_the_deadline();
    }
    false
}

/// Whether a guarded write is sent even when the hold is known lost here (the server's check
/// is then all that stands between a stale holder and the data).
pub(crate) fn guarded_writes_ignore_a_lost_hold() -> bool {
    #[cfg(feature = "chaos-seams")]
    if let Some(s) = INSTALLED.get() {
        return s.guarded_writes_ignore_a_lost_hold();
    }
    false
}
