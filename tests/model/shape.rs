//! What every kind's model shares about the keys a lock keeps: the rule for a hash that is a
//! lock (docs/data-layout.md, "Keys that are not locks"), the fencing counter's tokens, the
//! lease rule "lengthen, never shorten", and keys written by hand under a lock's name.

use proptest::prelude::*;

use crate::run::{Call, Clock};
use crate::world::{Data, World, R, V};

/// Whether `o` (a field without its `:write`) reads as an owner `<id>:<number>`.
fn is_owner(f: &str) -> bool {
    let o = f.strip_suffix(":write").unwrap_or(f);
    let Some(colon) = o.rfind(':') else {
        return false;
    };
    let n = o[colon + 1..].strip_prefix('-').unwrap_or(&o[colon + 1..]);
    colon >= 1 && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
}

fn is_count(v: &V) -> bool {
    v.as_str().is_some_and(|s| {
        s.bytes().next().is_some_and(|b| (b'1'..=b'9').contains(&b))
            && s.bytes().all(|b| b.is_ascii_digit())
    })
}

/// `Err` with the error reply a script gives before it writes to `key`: WRONGTYPE for a key of
/// another type, NOTALOCK for a hash that is not a lock's; `Ok` for a lock or no key.
pub fn ensure_lock(world: &World, key: &str) -> Result<(), R> {
    let Some(h) = world.hash(key)? else {
        return Ok(());
    };
    if world.left(key).is_none() {
        return Err(R::Err("NOTALOCK"));
    }
    let mut owners = 0;
    for (f, v) in h {
        if f == "mode" {
            if v.as_str() != Some("read") && v.as_str() != Some("write") {
                return Err(R::Err("NOTALOCK"));
            }
        } else if !is_owner(f) || !is_count(v) {
            return Err(R::Err("NOTALOCK"));
        } else {
            owners += 1;
        }
    }
    if owners == 0 {
        return Err(R::Err("NOTALOCK"));
    }
    Ok(())
}

/// The next fencing token from `counter` (lib/mint.lua): the count plus one, or, below 10^15
/// (new, or counted from 1 by Redisson), the server's clock in µs, seeded with a life of
/// `counter_ttl` ms if the count is new (0: none), keeping the key's life otherwise.
pub fn mint(world: &mut World, counter: &str, counter_ttl: i64, clock: Clock) -> Result<R, R> {
    let count = match world.keys.get(counter).map(|k| &k.data) {
        None => 0,
        // Seeded earlier in the same script (several acquires in one call): a clock value,
        // so above 10^15, and it counts on within the same bounds.
        Some(&Data::Str(V::Within(lo, hi))) => {
            world.set(counter, V::Within(lo + 1, hi + 1), None, true);
            return Ok(R::Within(lo + 1, hi + 1));
        }
        Some(Data::Str(v)) => v
            .as_int()
            .expect("the model pins a counter before it counts on"),
        Some(_) => return Err(R::Err("WRONGTYPE")),
    };
    let token = count + 1;
    if token >= 1_000_000_000_000_000 {
        world.set(counter, V::int(token), None, true);
        return Ok(R::Int(token));
    }
    let seed = V::Within(clock.before_us, clock.after_us);
    if token == 1 && counter_ttl > 0 {
        world.set(counter, seed, Some(counter_ttl), false);
    } else if token == 1 {
        world.set(counter, seed, None, false);
    } else {
        world.set(counter, seed, None, true);
    }
    Ok(R::Within(clock.before_us, clock.after_us))
}

/// Lengthens `key`'s life to `ms` if it has less; never shortens it, never gives one to a key
/// without (lib/extend.lua).
pub fn extend(world: &mut World, key: &str, ms: i64) {
    if world.left(key).is_some_and(|left| left < ms) {
        world.pexpire(key, ms);
    }
}

/// A lease the models draw: whole seconds from 3 s to 2 min, so that leases that differ
/// differ by more than the TTL slack.
pub fn lease() -> impl Strategy<Value = i64> {
    (3i64..120).prop_map(|s| s * 1000)
}

/// A key another program writes under a lock's name.
#[derive(Debug, Clone, Copy)]
pub enum Clobber {
    /// A string.
    Text,
    /// A data hash with a TTL (`status` -> `paid`).
    DataHash,
    /// An owner's field without a TTL.
    NoTtl,
    /// An owner's field with a count of 0.
    ZeroCount,
}

pub fn clobber() -> impl Strategy<Value = Clobber> {
    prop_oneof![
        Just(Clobber::Text),
        Just(Clobber::DataHash),
        Just(Clobber::NoTtl),
        Just(Clobber::ZeroCount),
    ]
}

impl Clobber {
    /// The command that writes it over `key` (deleting what was there first).
    pub fn call(self, key: &str) -> Call {
        let lua = "redis.call('del', KEYS[1]) \
                   if ARGV[1] == 'text' then return redis.call('set', KEYS[1], 'x') end \
                   redis.call('hset', KEYS[1], ARGV[2], ARGV[3]) \
                   if ARGV[1] == 'ttl' then redis.call('pexpire', KEYS[1], 60000) end \
                   return 1";
        let args: &[&str] = match self {
            Clobber::Text => &["text"],
            Clobber::DataHash => &["ttl", "status", "paid"],
            Clobber::NoTtl => &["none", "c9:1", "1"],
            Clobber::ZeroCount => &["ttl", "c9:1", "0"],
        };
        Call::script(lua.into(), &[key], args)
    }

    pub fn expect(self, world: &mut World, key: &str) -> R {
        world.del(key);
        match self {
            Clobber::Text => {
                world.set(key, V::str("x"), None, false);
                return R::Str("OK".into());
            }
            Clobber::DataHash => world.hset(key, "status", V::str("paid")),
            Clobber::NoTtl => world.hset(key, "c9:1", V::str("1")),
            Clobber::ZeroCount => world.hset(key, "c9:1", V::str("0")),
        }
        if matches!(self, Clobber::DataHash | Clobber::ZeroCount) {
            world.pexpire(key, 60_000);
        }
        R::Int(1)
    }
}

#[test]
fn owners_are_told_from_data_fields() {
    for f in ["c0:1", "a:b:12", "x:-1", "::12", "c0:1:write"] {
        assert!(is_owner(f), "{f}");
    }
    for f in [":12", "status", "x:1-2", "x:", "sku:AB-7", "c0:1:read"] {
        assert!(!is_owner(f), "{f}");
    }
}
