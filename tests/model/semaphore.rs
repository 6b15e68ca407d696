//! The semaphore's scripts against its model (Redisson's `RSemaphore`: the available count in a
//! string under the name, new counts published on `redisson_sc:{name}`): acquire under a
//! request key that makes every copy of one acquire take its permits once, the give-back of
//! what a request took ("return"), try-set, drain and add, on a key that other programs may
//! write over or give a time to live.

use proptest::prelude::*;

use crate::mutants::{mutant, survivors};
use crate::run::{check, Call, Clock, Expected, Model, Scripts};
use crate::shape::lease;
use crate::world::{World, R, V};

const SEM: &str = "sem";
const CHANNEL: &str = "redisson_sc:{sem}";

/// The most a count may reach (the scripts compare counts as Lua numbers).
pub const MAX_COUNT: i64 = 1_000_000_000_000_000;

/// The request key of request `i` of one kind of call (`tag`): the library's is
/// `relock_request:{<name>}:<uuid>`, one per call, the same for every copy of it.
fn request(name: &str, tag: &str, i: usize) -> String {
    format!("relock_request:{{{name}}}:{tag}{i}")
}

#[derive(Debug, Clone)]
pub enum Op {
    /// An attempt of acquire request `req` (0-2) for `n` permits: a later attempt of the same
    /// request is a copy (a retry after a lost reply, or a pool's resend).
    Acquire {
        req: usize,
        n: i64,
        ttl: i64,
    },
    /// The give-back of request `req` ("return"), for the permits its last attempt wanted.
    GiveBack {
        req: usize,
        ttl: i64,
    },
    Set {
        n: i64,
    },
    /// `add_permits(n)` / `release(n)` under request `req`.
    Add {
        req: usize,
        n: i64,
        ttl: i64,
    },
    Drain {
        req: usize,
        ttl: i64,
    },
    Written(Written),
}

/// What another program writes under a count's name.
#[derive(Debug, Clone, Copy)]
pub enum Written {
    /// A string that is not an integer.
    Text,
    /// A hash.
    Hash,
    /// A count of its own (Redisson's `addPermits(-n)`, a count near the limit).
    Count(i64),
    /// A time to live for whatever is there (Redisson's `expire`).
    Expire(i64),
}

pub fn written() -> impl Strategy<Value = Written> {
    prop_oneof![
        1 => Just(Written::Text),
        1 => Just(Written::Hash),
        // Near the limit, where an add is refused.
        2 => prop_oneof![1 => Just(-1i64), 1 => Just(-2), 2 => Just(MAX_COUNT - 1)]
            .prop_map(Written::Count),
        2 => lease().prop_map(Written::Expire),
    ]
}

impl Written {
    pub fn call(self, key: &str) -> Call {
        let lua = "if ARGV[1] == 'expire' then return redis.call('pexpire', KEYS[1], ARGV[2]) end \
                   redis.call('del', KEYS[1]) \
                   if ARGV[1] == 'hash' then return redis.call('hset', KEYS[1], 'status', 'paid') end \
                   redis.call('set', KEYS[1], ARGV[2]) \
                   return 1";
        let args = match self {
            Written::Text => vec!["set".to_owned(), "x".to_owned()],
            Written::Hash => vec!["hash".to_owned()],
            Written::Count(c) => vec!["set".to_owned(), c.to_string()],
            Written::Expire(ms) => vec!["expire".to_owned(), ms.to_string()],
        };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Call::script(lua.into(), &[key], &args)
    }

    pub fn expect(self, world: &mut World, key: &str) -> R {
        if let Written::Expire(ms) = self {
            let there = world.exists(key);
            world.pexpire(key, ms);
            return R::Int(there as i64);
        }
        world.del(key);
        match self {
            Written::Text => world.set(key, V::str("x"), None, false),
            Written::Hash => world.hset(key, "status", V::str("paid")),
            Written::Count(c) => world.set(key, V::int(c), None, false),
            Written::Expire(_) => unreachable!(),
        }
        R::Int(1)
    }
}

/// Whether `s` is an integer as the scripts take one (`^-?%d+$`).
fn is_integer(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The count under `key`: None for a missing key; WRONGTYPE for another type or a string that
/// is not an integer.
pub fn count(world: &World, key: &str) -> Result<Option<i64>, R> {
    match world.get(key)? {
        None => Ok(None),
        Some(v) => match v.as_str() {
            Some(s) if is_integer(s) => Ok(Some(s.parse().expect("a count in range"))),
            _ => Err(R::Err("WRONGTYPE")),
        },
    }
}

/// Sets the count to `c`, keeping its time to live (INCRBY, DECRBY).
fn put(world: &mut World, key: &str, c: i64) {
    world.set(key, V::int(c), None, true);
}

/// `try_set_permits(n)`: the count only if there is none (any string counts as one).
pub fn set(world: &mut World, key: &str, channel: &str, n: i64) -> Expected {
    match world.get(key) {
        Err(e) => Expected::reply(e),
        Ok(Some(_)) => Expected::reply(R::Int(0)),
        Ok(None) => {
            world.set(key, V::int(n), None, false);
            if n > 0 {
                Expected::publishing(R::Int(1), channel, &n.to_string())
            } else {
                Expected::reply(R::Int(1))
            }
        }
    }
}

/// `add_permits(n)` under request key `req`: once per request; refused past the limit.
pub fn add(world: &mut World, key: &str, channel: &str, req: &str, n: i64, ttl: i64) -> Expected {
    match world.get(req) {
        Ok(Some(seen)) => {
            let seen = seen.as_int().expect("a request key holds a number");
            return Expected::reply(R::Array(vec![R::Int(1), R::Int(seen)]));
        }
        Ok(None) => {}
        Err(_) => panic!("model bug: a request key of another type"),
    }
    let current = match count(world, key) {
        Err(e) => return Expected::reply(e),
        Ok(c) => c.unwrap_or(0),
    };
    if current + n > MAX_COUNT {
        return Expected::reply(R::Array(vec![R::Int(0), R::Int(current)]));
    }
    let available = current + n;
    put(world, key, available);
    world.set(req, V::int(available), Some(ttl), false);
    let reply = R::Array(vec![R::Int(1), R::Int(available)]);
    if available > 0 {
        Expected::publishing(reply, channel, &available.to_string())
    } else {
        Expected::reply(reply)
    }
}

#[derive(Debug, Default)]
pub struct Semaphore {
    /// The permits each acquire request's last attempt wanted: its give-back returns as many.
    wants: [i64; 3],
}

impl Model for Semaphore {
    type Op = Op;

    fn op() -> BoxedStrategy<Op> {
        // Two acquire requests, so that a give-back often finds what its request took.
        let req = 0usize..2;
        let n = prop_oneof![2 => Just(1i64), 1 => 2i64..5];
        let added = prop_oneof![3 => 1i64..4, 3 => -3i64..0, 1 => Just(MAX_COUNT)];
        prop_oneof![
            5 => (req.clone(), n, lease()).prop_map(|(req, n, ttl)| Op::Acquire { req, n, ttl }),
            3 => (req, lease()).prop_map(|(req, ttl)| Op::GiveBack { req, ttl }),
            3 => prop_oneof![3 => 1i64..4, 1 => Just(0)].prop_map(|n| Op::Set { n }),
            4 => (0usize..3, added, lease()).prop_map(|(req, n, ttl)| Op::Add { req, n, ttl }),
            1 => (0usize..3, lease()).prop_map(|(req, ttl)| Op::Drain { req, ttl }),
            2 => written().prop_map(Op::Written),
        ]
        .boxed()
    }

    fn call(&mut self, scripts: &Scripts, op: &Op) -> Call {
        use relock::lua;
        match op {
            Op::Acquire { req, n, ttl } => {
                self.wants[*req] = *n;
                Call::script(
                    scripts.get("SEMAPHORE_ACQUIRE", lua::SEMAPHORE_ACQUIRE),
                    &[SEM, &request(SEM, "a", *req)],
                    &[&n.to_string(), &ttl.to_string()],
                )
            }
            Op::GiveBack { req, ttl } => Call::script(
                scripts.get("SEMAPHORE_ACQUIRE", lua::SEMAPHORE_ACQUIRE),
                &[SEM, &request(SEM, "a", *req)],
                &[
                    &self.n(*req).to_string(),
                    &ttl.to_string(),
                    "return",
                    "publish",
                    CHANNEL,
                ],
            ),
            Op::Set { n } => Call::script(
                scripts.get("SEMAPHORE_SET", lua::SEMAPHORE_SET),
                &[SEM],
                &[&n.to_string(), "publish", CHANNEL],
            ),
            Op::Add { req, n, ttl } => Call::script(
                scripts.get("SEMAPHORE_ADD", lua::SEMAPHORE_ADD),
                &[SEM, &request(SEM, "r", *req)],
                &[&n.to_string(), "publish", &ttl.to_string(), CHANNEL],
            ),
            Op::Drain { req, ttl } => Call::script(
                scripts.get("SEMAPHORE_DRAIN", lua::SEMAPHORE_DRAIN),
                &[SEM, &request(SEM, "d", *req)],
                &["publish", &ttl.to_string(), CHANNEL],
            ),
            Op::Written(w) => w.call(SEM),
        }
    }

    fn expect(&mut self, world: &mut World, _clock: Clock, op: &Op) -> Expected {
        match op {
            Op::Acquire { req, n, ttl } => {
                Expected::reply(acquire(world, &request(SEM, "a", *req), *n, *ttl))
            }
            Op::GiveBack { req, ttl } => {
                give_back(world, &request(SEM, "a", *req), self.n(*req), *ttl)
            }
            Op::Set { n } => set(world, SEM, CHANNEL, *n),
            Op::Add { req, n, ttl } => add(world, SEM, CHANNEL, &request(SEM, "r", *req), *n, *ttl),
            Op::Drain { req, ttl } => Expected::reply(drain(world, &request(SEM, "d", *req), *ttl)),
            Op::Written(w) => Expected::reply(w.expect(world, SEM)),
        }
    }
}

impl Semaphore {
    /// The permits request `req` wants (its last attempt's; 1 before any).
    fn n(&self, req: usize) -> i64 {
        self.wants[req].max(1)
    }
}

/// What request key `req` says: "1" the request holds what it took, "0" it gave it back or
/// gave up.
fn seen(world: &World, req: &str) -> Option<String> {
    match world.get(req) {
        Ok(v) => v.map(|v| v.as_str().expect("a request key is known").to_owned()),
        Err(_) => panic!("model bug: a request key of another type"),
    }
}

/// One attempt of an acquire request: takes `n` if that many are available and the request
/// has taken nothing yet, recording that it has.
fn acquire(world: &mut World, req: &str, n: i64, ttl: i64) -> R {
    let seen = seen(world, req);
    if seen.as_deref() == Some("1") {
        return R::Array(vec![R::Int(1), R::Int(-1)]);
    }
    // Given back: a copy landing now takes nothing. A string that is not an integer is read as
    // 0 here, not refused (a key of another type still is).
    if seen.is_some() {
        let available = match world.get(SEM) {
            Err(e) => return e,
            Ok(v) => v.and_then(V::as_int).unwrap_or(0),
        };
        return R::Array(vec![R::Int(0), R::Int(available)]);
    }
    let available = match count(world, SEM) {
        Err(e) => return e,
        Ok(c) => c,
    };
    let Some(available) = available else {
        return R::Array(vec![R::Int(0), R::Int(0)]);
    };
    if available < n {
        return R::Array(vec![R::Int(0), R::Int(available)]);
    }
    world.set(req, V::int(1), Some(ttl), false);
    put(world, SEM, available - n);
    R::Array(vec![R::Int(1), R::Int(available - n)])
}

/// "return": gives back the `n` permits the request took, once; marks it given back either way.
fn give_back(world: &mut World, req: &str, n: i64, ttl: i64) -> Expected {
    let seen = seen(world, req);
    world.set(req, V::int(0), Some(ttl), false);
    if seen.as_deref() != Some("1") {
        return Expected::reply(R::Array(vec![R::Int(0), R::Int(0)]));
    }
    let current = match count(world, SEM) {
        // A string that is not an integer fails INCRBY's ERR (the request is marked given
        // back first).
        Err(_) if matches!(world.get(SEM), Ok(Some(_))) => return Expected::reply(R::Err("ERR")),
        Err(e) => return Expected::reply(e),
        Ok(c) => c.unwrap_or(0),
    };
    let available = current + n;
    put(world, SEM, available);
    let reply = R::Array(vec![R::Int(2), R::Int(available)]);
    if available > 0 {
        Expected::publishing(reply, CHANNEL, &available.to_string())
    } else {
        Expected::reply(reply)
    }
}

/// Takes every available permit, once per request; the key is left holding 0.
fn drain(world: &mut World, req: &str, ttl: i64) -> R {
    if let Some(seen) = seen(world, req) {
        return R::Int(seen.parse().expect("a request key holds a number"));
    }
    let available = match count(world, SEM) {
        Err(e) => return e,
        Ok(c) => c,
    };
    // Recorded on a missing key too: a copy landing after permits were added takes nothing.
    let Some(available) = available else {
        world.set(req, V::int(0), Some(ttl), false);
        return R::Int(0);
    };
    let taken = available.max(0);
    // A plain SET: whatever time to live the key had is gone.
    world.set(SEM, V::int(0), None, false);
    world.set(req, V::int(taken), Some(ttl), false);
    R::Int(taken)
}

#[test]
fn the_semaphores_scripts_do_what_its_model_does() {
    let bench = crate::bench::Bench::start();
    let cases = crate::run::cases(64);
    if let Err(e) = check::<Semaphore>(&bench, &Scripts::default(), cases, 24, 2000) {
        panic!("{e}");
    }
}

#[test]
fn the_semaphores_mutants_are_caught() {
    use relock::lua::*;
    let bench = crate::bench::Bench::start();
    let mutants = [
        mutant(
            "SEMAPHORE_ACQUIRE",
            SEMAPHORE_ACQUIRE,
            "if available >= tonumber(ARGV[1])",
            "if available > tonumber(ARGV[1])",
        ),
        mutant(
            "SEMAPHORE_ACQUIRE",
            SEMAPHORE_ACQUIRE,
            "if seen == '1' then",
            "if seen ~= '1' then",
        ),
        mutant(
            "SEMAPHORE_ACQUIRE",
            SEMAPHORE_ACQUIRE,
            "if seen ~= '1' then",
            "if seen == '1' then",
        ),
        mutant(
            "SEMAPHORE_ACQUIRE",
            SEMAPHORE_ACQUIRE,
            "if available > 0 then",
            "if available < 0 then",
        ),
        mutant(
            "SEMAPHORE_ACQUIRE",
            SEMAPHORE_ACQUIRE,
            "redis.call('set', KEYS[2], 1, 'px', ARGV[2])",
            "redis.call('set', KEYS[2], 1, 'px', ARGV[2] + 5000)",
        ),
        mutant(
            "SEMAPHORE_SET",
            SEMAPHORE_SET,
            "tonumber(ARGV[1]) > 0",
            "tonumber(ARGV[1]) >= 0",
        ),
        mutant(
            "SEMAPHORE_DRAIN",
            SEMAPHORE_DRAIN,
            "math.max(available, 0)",
            "math.max(available, 1)",
        ),
        mutant(
            "SEMAPHORE_DRAIN",
            SEMAPHORE_DRAIN,
            "'px', ARGV[2]",
            "'px', ARGV[2] + 5000",
        ),
        mutant(
            "SEMAPHORE_ADD",
            SEMAPHORE_ADD,
            "current + tonumber(ARGV[1]) > 1e15",
            "current + tonumber(ARGV[1]) >= 1e15",
        ),
        mutant(
            "SEMAPHORE_ADD",
            SEMAPHORE_ADD,
            "if available > 0 then",
            "if available >= 0 then",
        ),
        mutant(
            "SEMAPHORE_ADD",
            SEMAPHORE_ADD,
            "'px', ARGV[3]",
            "'px', ARGV[3] + 5000",
        ),
    ];
    let alive = survivors::<Semaphore>(&bench, &mutants);
    assert!(
        alive.is_empty(),
        "mutants the model test did not catch: {alive:#?}"
    );
}
