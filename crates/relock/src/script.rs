//! One embedded Lua script: its name, its source and the SHA1 that `EVALSHA` names it by.
//! Plain data, so that the hold room can say which script a kind's call runs; the client room
//! sends it (`client::scripts`, which also declares every script).

/// One embedded script.
#[derive(Debug)]
pub(crate) struct Script {
    /// Its file's name without `.lua`, for logs.
    pub(crate) name: &'static str,
    pub(crate) lua: std::borrow::Cow<'static, str>,
    /// The SHA1 in hex, as `EVALSHA` sends it: one shared buffer, so that a call's copy of it
    /// only counts a reference.
    pub(crate) sha1: fred::bytes::Bytes,
}

impl Script {
    pub(crate) fn new(name: &'static str, lua: &'static str) -> Self {
        let lua = crate::seam::lua(name, lua);
        let sha1 = fred::bytes::Bytes::from(fred::util::sha1_hash(&lua));
        Script { name, lua, sha1 }
    }
}

/// Fails unless `script` documents its keys, its arguments and its replies, as every script
/// must (`scripts!` runs it for each script it declares).
#[cfg(test)]
pub(crate) fn assert_documented(script: &Script) {
    let lua = &script.lua;
    assert!(
        lua.contains("KEYS[1]") || lua.contains("KEYS     "),
        "{}: no KEYS documented",
        script.name
    );
    assert!(
        lua.contains("ARGV[1]"),
        "{}: no ARGV documented",
        script.name
    );
    assert!(
        lua.contains("Returns"),
        "{}: no Returns documented",
        script.name
    );
    assert_eq!(script.sha1.len(), 40, "{}", script.name);
}
