//! The plain lock's scripts against its model: acquire (with the fencing counter), re-enter,
//! release (one count or all), the watchdog's batch renewal, the read-only check, and
//! force-unlock, on a lock that other programs may write over.

use proptest::prelude::*;

use crate::mutants::{mutant, survivors};
use crate::run::{check, Call, Clock, Expected, Model, Scripts};
use crate::shape::{clobber, ensure_lock, extend, lease, mint, Clobber};
use crate::world::{World, R, V};

const LOCK: &str = "{pl}";
const COUNTER: &str = "redisson_lock_token:{pl}";
const CHANNEL: &str = "redisson_lock__channel:{pl}";

#[derive(Debug, Clone)]
pub enum Op {
    /// A fresh hold for holder `who` (0-2), under a field no hold had.
    Acquire {
        who: usize,
        lease: i64,
        counter_ttl: i64,
    },
    Reenter {
        who: usize,
        lease: i64,
    },
    Release {
        who: usize,
        all: bool,
    },
    Renew {
        whos: Vec<usize>,
        lease: i64,
    },
    Check {
        who: usize,
    },
    ForceUnlock,
    Clobber(Clobber),
}

#[derive(Debug, Default)]
pub struct PlainLock {
    /// Each holder's current field number (its last acquire's).
    fields: [u32; 3],
}

impl PlainLock {
    fn field(&self, who: usize) -> String {
        format!("c{who}:{}", self.fields[who])
    }
}

impl Model for PlainLock {
    type Op = Op;

    fn op() -> BoxedStrategy<Op> {
        let who = 0usize..3;
        prop_oneof![
            4 => (who.clone(), lease(), prop_oneof![Just(0i64), Just(600_000i64)])
                .prop_map(|(who, lease, counter_ttl)| Op::Acquire { who, lease, counter_ttl }),
            2 => (who.clone(), lease()).prop_map(|(who, lease)| Op::Reenter { who, lease }),
            4 => (who.clone(), any::<bool>()).prop_map(|(who, all)| Op::Release { who, all }),
            2 => (proptest::collection::vec(who.clone(), 1..4), lease())
                .prop_map(|(whos, lease)| Op::Renew { whos, lease }),
            1 => who.prop_map(|who| Op::Check { who }),
            1 => Just(Op::ForceUnlock),
            1 => clobber().prop_map(Op::Clobber),
        ]
        .boxed()
    }

    fn call(&mut self, scripts: &Scripts, op: &Op) -> Call {
        use relock::lua;
        match op {
            Op::Acquire {
                who,
                lease,
                counter_ttl,
            } => {
                self.fields[*who] += 1;
                let f = self.field(*who);
                Call::script(
                    scripts.get("ACQUIRE", lua::ACQUIRE),
                    &[LOCK, COUNTER],
                    &[&lease.to_string(), &f, &counter_ttl.to_string()],
                )
            }
            Op::Reenter { who, lease } => Call::script(
                scripts.get("REENTER", lua::REENTER),
                &[LOCK],
                &[&lease.to_string(), &self.field(*who)],
            ),
            Op::Release { who, all } => Call::script(
                scripts.get("RELEASE", lua::RELEASE),
                &[LOCK],
                &[
                    &self.field(*who),
                    if *all { "all" } else { "1" },
                    "publish",
                    CHANNEL,
                ],
            ),
            Op::Renew { whos, lease } => {
                let keys = vec![LOCK; whos.len()];
                let mut args = vec![lease.to_string()];
                args.extend(whos.iter().map(|w| self.field(*w)));
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                Call::script(scripts.get("RENEW", lua::RENEW), &keys, &args)
            }
            Op::Check { who } => Call::script(
                scripts.get("CHECK", lua::CHECK),
                &[LOCK],
                &[&self.field(*who)],
            ),
            Op::ForceUnlock => Call::script(
                scripts.get("FORCE_UNLOCK", lua::FORCE_UNLOCK),
                &[LOCK],
                &["publish", "0", CHANNEL],
            ),
            Op::Clobber(c) => c.call(LOCK),
        }
    }

    fn expect(&mut self, world: &mut World, clock: Clock, op: &Op) -> Expected {
        match op {
            Op::Acquire {
                who,
                lease,
                counter_ttl,
            } => Expected::reply(
                acquire(
                    world,
                    [LOCK, COUNTER],
                    &self.field(*who),
                    *lease,
                    *counter_ttl,
                    clock,
                )
                .unwrap_or_else(|e| e),
            ),
            Op::Reenter { who, lease } => {
                let f = self.field(*who);
                Expected::reply(match world.hget(LOCK, &f) {
                    Err(e) => e,
                    Ok(None) => R::Nil,
                    Ok(Some(v)) => {
                        let count = v.as_int().unwrap() + 1;
                        world.hset(LOCK, &f, V::int(count));
                        extend(world, LOCK, *lease);
                        R::Int(count)
                    }
                })
            }
            Op::Release { who, all } => release(world, [LOCK, CHANNEL], &self.field(*who), *all),
            Op::Renew { whos, lease } => {
                let mut replies = Vec::new();
                for w in whos {
                    let held = matches!(world.hget(LOCK, &self.field(*w)), Ok(Some(_)));
                    if held {
                        extend(world, LOCK, *lease);
                    }
                    replies.push(R::Int(held as i64));
                }
                Expected::reply(R::Array(replies))
            }
            Op::Check { who } => Expected::reply(match ensure_lock(world, LOCK) {
                Err(e) => e,
                Ok(()) => {
                    let value = match world.hget(LOCK, &self.field(*who)).unwrap() {
                        Some(v) => R::Str(v.as_str().unwrap().to_owned()),
                        None => R::Nil,
                    };
                    R::Array(vec![
                        R::Int(world.exists(LOCK) as i64),
                        value,
                        R::pttl(world, LOCK),
                    ])
                }
            }),
            Op::ForceUnlock => {
                if !world.exists(LOCK) {
                    return Expected::reply(R::Int(0));
                }
                if let Err(e) = ensure_lock(world, LOCK) {
                    return Expected::reply(e);
                }
                world.del(LOCK);
                Expected::publishing(R::Int(1), CHANNEL, "0")
            }
            Op::Clobber(c) => Expected::reply(c.expect(world, LOCK)),
        }
    }
}

/// A fresh hold of `lock` (with its fencing `counter`) if the lock is free: `{1, token}`; else
/// `{0, pttl}`; an error for a key that is not a lock, with nothing written.
pub(crate) fn acquire(
    world: &mut World,
    [lock, counter]: [&str; 2],
    field: &str,
    lease: i64,
    counter_ttl: i64,
    clock: Clock,
) -> Result<R, R> {
    if world.exists(lock) {
        ensure_lock(world, lock)?;
        return Ok(R::Array(vec![R::Int(0), R::pttl(world, lock)]));
    }
    let token = mint(world, counter, counter_ttl, clock)?;
    world.hset(lock, field, V::int(1));
    world.pexpire(lock, lease);
    Ok(R::Array(vec![R::Int(1), token]))
}

/// One count, or the whole hold, of `lock`; Redisson's unlock message on its `channel` once
/// the field is gone.
pub(crate) fn release(
    world: &mut World,
    [lock, channel]: [&str; 2],
    field: &str,
    all: bool,
) -> Expected {
    let count = match world.hget(lock, field) {
        Err(e) => return Expected::reply(e),
        Ok(None) => return Expected::reply(R::Nil),
        Ok(Some(v)) => v.as_int().unwrap(),
    };
    if !all && count > 1 {
        world.hset(lock, field, V::int(count - 1));
        return Expected::reply(R::Int(0));
    }
    world.hdel(lock, field);
    Expected::publishing(R::Int(1), channel, "0")
}

#[test]
fn the_plain_locks_scripts_do_what_its_model_does() {
    let bench = crate::bench::Bench::start();
    let cases = crate::run::cases(64);
    if let Err(e) = check::<PlainLock>(&bench, &Scripts::default(), cases, 24, 2000) {
        panic!("{e}");
    }
}

#[test]
fn the_plain_locks_mutants_are_caught() {
    use relock::lua::*;
    let bench = crate::bench::Bench::start();
    let mutants = [
        mutant(
            "ACQUIRE",
            ACQUIRE,
            "redis.call('exists', lock) == 0",
            "redis.call('exists', lock) == 1",
        ),
        mutant(
            "ACQUIRE",
            ACQUIRE,
            "token < 1000000000000000",
            "token > 1000000000000000",
        ),
        mutant(
            "ACQUIRE",
            ACQUIRE,
            "if token == 1 and counter_ttl > 0",
            "if token == 1 and counter_ttl < 0",
        ),
        mutant(
            "ACQUIRE",
            ACQUIRE,
            "redis.call('pexpire', lock, lease)",
            "redis.call('pexpire', lock, lease + 5000)",
        ),
        mutant(
            "REENTER",
            REENTER,
            "redis.call('hexists', KEYS[1], ARGV[2]) == 0",
            "redis.call('hexists', KEYS[1], ARGV[2]) == 1",
        ),
        mutant(
            "REENTER",
            REENTER,
            "pttl >= 0 and pttl < ms",
            "pttl >= 0 and pttl > ms",
        ),
        mutant(
            "RELEASE",
            RELEASE,
            "redis.call('hincrby', lock, field, -1) > 0",
            "redis.call('hincrby', lock, field, -1) >= 0",
        ),
        mutant(
            "RELEASE",
            RELEASE,
            "if redis.call('hdel', lock, field) == 0",
            "if redis.call('hdel', lock, field) == 1",
        ),
        mutant("RENEW", RENEW, "ARGV[1 + i]) == 1", "ARGV[1 + i]) == 0"),
        mutant("CHECK", CHECK, "if pttl == -1 then", "if pttl == -2 then"),
        mutant("CHECK", CHECK, "if owners == 0", "if owners == 1"),
        mutant(
            "FORCE_UNLOCK",
            FORCE_UNLOCK,
            "redis.call('exists', KEYS[1]) == 0",
            "redis.call('exists', KEYS[1]) == 1",
        ),
    ];
    let alive = survivors::<PlainLock>(&bench, &mutants);
    assert!(
        alive.is_empty(),
        "mutants the model test did not catch: {alive:#?}"
    );
}
