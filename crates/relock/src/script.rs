//! One embedded Lua script: its name, its source and the SHA1 that `EVALSHA` names it by.
//! Plain data, so that the hold room can say which script a kind's call runs; the client room
//! sends it (`client::scripts`, which also declares every script).

/// One embedded script.
#[derive(Debug)]
pub(crate) struct Script {
    /// Its file's name without `.lua`, for logs.
    pub(crate) name: &'static str,
    pub(crate) lua: std::borrow::Cow<'static, str>,
    pub(crate) sha1: String,
}

impl Script {
    pub(crate) fn new(name: &'static str, lua: &'static str) -> Self {
        let lua = crate::seam::lua(name, lua);
        let sha1 = fred::util::sha1_hash(&lua);
        Script { name, lua, sha1 }
    }
}
