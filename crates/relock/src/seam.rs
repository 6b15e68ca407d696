//! The one seam where the chaos harness's deliberately broken variants (`relock::mutant`, the
//! `chaos-mutants` feature) reach the core: every hook is a function here, the identity (or
//! `false`) in a normal build. Core files call these and carry no `cfg` of their own.

use std::borrow::Cow;

/// The Lua body the script `name` runs as.
pub(crate) fn lua(name: &str, lua: &'static str) -> Cow<'static, str> {
    #[cfg(feature = "chaos-mutants")]
    return crate::mutant::lua(name, lua);
    #[cfg(not(feature = "chaos-mutants"))]
    {
        let _ = name;
        Cow::Borrowed(lua)
    }
}

/// The channel a waiter subscribes to for `channel`'s releases.
pub(crate) fn channel(channel: &str) -> Cow<'_, str> {
    #[cfg(feature = "chaos-mutants")]
    return crate::mutant::channel(channel).into();
    #[cfg(not(feature = "chaos-mutants"))]
    channel.into()
}

/// The fencing token a new hold carries, given the script's.
pub(crate) fn token(token: u64) -> u64 {
    #[cfg(feature = "chaos-mutants")]
    return crate::mutant::token(token);
    #[cfg(not(feature = "chaos-mutants"))]
    token
}

/// Whether holds believe renewals whatever the local deadline (only "gone" ends a hold).
pub(crate) fn renewals_outlive_the_deadline() -> bool {
    #[cfg(feature = "chaos-mutants")]
    return crate::mutant::is(crate::mutant::Mutant::RenewalRecreatesExpiredLock);
    #[cfg(not(feature = "chaos-mutants"))]
    false
}
