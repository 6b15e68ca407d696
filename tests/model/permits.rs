//! The permit-expirable semaphore's scripts against its model (Redisson's
//! `RPermitExpirableSemaphore`: the available count in a string under the name, the held
//! permits' ids in the sorted set `{name}:timeout` scored by the end of their lease on the
//! server's clock, new counts published on `redisson_sc:{name}`): acquire under an id (after
//! reclaiming the permits whose lease ended), release by id (bare, once under a request key, or
//! as the give-back of an acquire whose reply never came), the batch renewal, the count, and
//! try-set and add; with leases ending as time passes, Redisson's permits without a lease, and
//! keys that other programs write over or give a time to live.

use proptest::prelude::*;

use crate::bench::Bench;
use crate::mutants::{mutant, survivors};
use crate::run::{check, Call, Clock, Expected, Model, Scripts};
use crate::semaphore::{add, count, set, written, Written};
use crate::shape::lease;
use crate::world::{Data, Key, World, R, V};

const COUNT: &str = "perm";
const TIMEOUTS: &str = "{perm}:timeout";
const CHANNEL: &str = "redisson_sc:{perm}";

/// Redisson's score of a permit without a lease: it never ends.
const NEVER: i64 = 922_337_203_685_477;

/// Permit `i`'s id as stored (16 bytes; printable, so that the bench reads them as text).
fn member(i: usize) -> String {
    format!("permit-{i:09}")
}

/// Its id as the API shows it and the scripts take it: the 32 hex digits of those bytes.
fn hex(i: usize) -> String {
    member(i).bytes().map(|b| format!("{b:02x}")).collect()
}

/// The id's own request key: a give-back of an acquire without a reply records itself there.
fn request_of(i: usize) -> String {
    format!("relock_request:{{{COUNT}}}:{}", hex(i))
}

/// The request key of release request `req` of permit `i` (the library's is a fresh uuid per
/// release, the same for every copy of it).
fn release_request(i: usize, req: usize) -> String {
    format!("relock_request:{{{COUNT}}}:q{i}-{req}")
}

fn add_request(req: usize) -> String {
    format!("relock_request:{{{COUNT}}}:r{req}")
}

#[derive(Debug, Clone, Copy)]
pub enum Release {
    /// No request key (shutdown's give-back).
    Bare,
    /// Under release request `req` (0-1): a later one with the same request is a copy.
    Once { req: usize, ttl: i64 },
    /// The give-back of an acquire whose reply never came: recorded under the id's own key
    /// even when it finds nothing ("forget").
    Forget { ttl: i64 },
}

#[derive(Debug, Clone)]
pub enum Op {
    /// An acquire of permit `id` (0-3): a later one of the same id is a copy.
    Acquire {
        id: usize,
        lease: i64,
    },
    Release {
        id: usize,
        how: Release,
    },
    Renew {
        ids: Vec<usize>,
        lease: i64,
    },
    Count,
    Set {
        n: i64,
    },
    Add {
        req: usize,
        n: i64,
        ttl: i64,
    },
    /// Redisson takes permit `id` without a lease.
    Forever {
        id: usize,
    },
    /// Another program writes over the count, or over the timeouts.
    Written {
        timeouts: bool,
        w: Written,
    },
}

/// When a script ran, in ms on the server's clock.
#[derive(Debug, Clone, Copy)]
struct Now {
    lo: i64,
    hi: i64,
}

impl Now {
    fn of(clock: Clock) -> Now {
        Now {
            lo: clock.before_us / 1000,
            hi: clock.after_us / 1000,
        }
    }

    /// Whether a lease ending at `score` had ended (no step runs near a deadline, so any
    /// instant of the script says the same).
    fn ended(self, score: i64) -> bool {
        score <= self.lo
    }

    /// `score` = now + `ms`, within what the script's clock may have read.
    fn plus(self, ms: i64) -> V {
        V::Within(self.lo + ms, self.hi + ms)
    }
}

/// A score the model knows (the runner pins every score after a step).
fn score(v: &V) -> i64 {
    v.as_int().expect("a score known to the model")
}

#[derive(Debug, Default)]
pub struct Permits;

impl Model for Permits {
    type Op = Op;

    fn op() -> BoxedStrategy<Op> {
        let id = 0usize..4;
        // Mostly short leases: among the soonest deadlines, so that time passing ends them
        // often, and the scripts reclaim them.
        let short = prop_oneof![3 => (3i64..20).prop_map(|s| s * 1000), 1 => lease()];
        let how = prop_oneof![
            1 => Just(Release::Bare),
            2 => (0usize..2, lease()).prop_map(|(req, ttl)| Release::Once { req, ttl }),
            1 => lease().prop_map(|ttl| Release::Forget { ttl }),
        ];
        prop_oneof![
            6 => (id.clone(), short).prop_map(|(id, lease)| Op::Acquire { id, lease }),
            4 => (id.clone(), how).prop_map(|(id, how)| Op::Release { id, how }),
            3 => (proptest::collection::vec(id.clone(), 1..4), lease())
                .prop_map(|(ids, lease)| Op::Renew { ids, lease }),
            3 => Just(Op::Count),
            2 => prop_oneof![3 => 1i64..4, 1 => Just(0)].prop_map(|n| Op::Set { n }),
            3 => (0usize..3, prop_oneof![1i64..3, -2i64..0], lease())
                .prop_map(|(req, n, ttl)| Op::Add { req, n, ttl }),
            1 => id.prop_map(|id| Op::Forever { id }),
            1 => (any::<bool>(), written()).prop_map(|(timeouts, w)| Op::Written { timeouts, w }),
            // Redisson's `expire` on the semaphore: the timeouts then live as long as the count.
            3 => lease().prop_map(|ms| Op::Written { timeouts: false, w: Written::Expire(ms) }),
        ]
        .boxed()
    }

    fn call(&mut self, scripts: &Scripts, op: &Op) -> Call {
        use relock::lua;
        match op {
            Op::Acquire { id, lease } => Call::script(
                scripts.get("PERMITS_ACQUIRE", lua::PERMITS_ACQUIRE),
                &[COUNT, TIMEOUTS, &request_of(*id)],
                &[&hex(*id), &lease.to_string(), "publish", CHANNEL],
            ),
            Op::Release { id, how } => {
                let lua = scripts.get("PERMITS_RELEASE", lua::PERMITS_RELEASE);
                let base = [hex(*id), "publish".to_owned(), CHANNEL.to_owned()];
                let base: Vec<&str> = base.iter().map(String::as_str).collect();
                match how {
                    Release::Bare => Call::script(lua, &[COUNT, TIMEOUTS], &base),
                    Release::Once { req, ttl } => {
                        let key = release_request(*id, *req);
                        let ttl = ttl.to_string();
                        Call::script(
                            lua,
                            &[COUNT, TIMEOUTS, &key],
                            &[&base[..], &[&ttl]].concat(),
                        )
                    }
                    Release::Forget { ttl } => {
                        let ttl = ttl.to_string();
                        Call::script(
                            lua,
                            &[COUNT, TIMEOUTS, &request_of(*id)],
                            &[&base[..], &[&ttl, "forget"]].concat(),
                        )
                    }
                }
            }
            Op::Renew { ids, lease } => {
                let keys = vec![TIMEOUTS; ids.len()];
                let mut args = vec![lease.to_string()];
                args.extend(ids.iter().map(|i| hex(*i)));
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                Call::script(
                    scripts.get("PERMITS_RENEW", lua::PERMITS_RENEW),
                    &keys,
                    &args,
                )
            }
            Op::Count => Call::script(
                scripts.get("PERMITS_COUNT", lua::PERMITS_COUNT),
                &[COUNT, TIMEOUTS],
                &["publish", CHANNEL],
            ),
            Op::Set { n } => Call::script(
                scripts.get("SEMAPHORE_SET", lua::SEMAPHORE_SET),
                &[COUNT],
                &[&n.to_string(), "publish", CHANNEL],
            ),
            Op::Add { req, n, ttl } => Call::script(
                scripts.get("SEMAPHORE_ADD", lua::SEMAPHORE_ADD),
                &[COUNT, &add_request(*req)],
                &[&n.to_string(), "publish", &ttl.to_string(), CHANNEL],
            ),
            Op::Forever { id } => Call::script(
                "return redis.call('zadd', KEYS[1], ARGV[1], ARGV[2])".into(),
                &[TIMEOUTS],
                &[&NEVER.to_string(), &member(*id)],
            ),
            Op::Written { timeouts, w } => w.call(if *timeouts { TIMEOUTS } else { COUNT }),
        }
    }

    fn expect(&mut self, world: &mut World, clock: Clock, op: &Op) -> Expected {
        let now = Now::of(clock);
        let result = match op {
            Op::Acquire { id, lease } => acquire(world, now, *id, *lease),
            Op::Release { id, how } => release(world, now, *id, *how),
            Op::Renew { ids, lease } => Ok(renew(world, now, ids, *lease)),
            Op::Count => count_permits(world, now),
            Op::Set { n } => Ok(set(world, COUNT, CHANNEL, *n)),
            Op::Add { req, n, ttl } => Ok(add(world, COUNT, CHANNEL, &add_request(*req), *n, *ttl)),
            Op::Forever { id } => world
                .zset(TIMEOUTS)
                .map(|z| !z.is_some_and(|z| z.contains_key(&member(*id))))
                .map(|added| {
                    world.zadd(TIMEOUTS, &member(*id), V::int(NEVER));
                    Expected::reply(R::Int(added as i64))
                }),
            Op::Written { timeouts, w } => Ok(Expected::reply(
                w.expect(world, if *timeouts { TIMEOUTS } else { COUNT }),
            )),
        };
        result.unwrap_or_else(Expected::reply)
    }

    /// The ends of the leases still running (those that ended stay ended: time only moves on).
    fn deadlines(&self, world: &World, now_ms: i64) -> Vec<i64> {
        let Ok(Some(z)) = world.zset(TIMEOUTS) else {
            return Vec::new();
        };
        z.values()
            .map(score)
            .filter(|&s| s < NEVER && s > now_ms)
            .map(|s| s - now_ms)
            .collect()
    }

    /// Every lease's end `ms` closer (not a permit without a lease's), on both sides.
    fn age_values(&mut self, world: &mut World, bench: &Bench, ms: i64) {
        let lua = "if redis.call('type', KEYS[1]).ok ~= 'zset' then return 0 end \
                   local all = redis.call('zrangebyscore', KEYS[1], '-inf', '(' .. ARGV[2], 'withscores') \
                   for i = 1, #all, 2 do \
                     redis.call('zadd', KEYS[1], 'xx', tonumber(all[i + 1]) - tonumber(ARGV[1]), all[i]) \
                   end \
                   return 1";
        bench.eval(
            lua,
            &[TIMEOUTS.to_owned()],
            &[ms.to_string(), NEVER.to_string()],
        );
        if let Some(Key {
            data: Data::ZSet(z),
            ..
        }) = world.keys.get_mut(TIMEOUTS)
        {
            for v in z.values_mut() {
                let s = score(v);
                if s < NEVER {
                    *v = V::int(s - ms);
                }
            }
        }
    }
}

/// The count's and the timeouts' types are checked before anything is written; `Err` is the
/// error reply.
fn available(world: &World) -> Result<i64, R> {
    Ok(count(world, COUNT)?.unwrap_or(0))
}

/// Gives the permits whose lease has ended back to the count, publishing the new count if it is
/// above 0.
fn reclaim(world: &mut World, now: Now, messages: &mut Vec<(String, String)>) -> Result<(), R> {
    let ended: Vec<String> = match world.zset(TIMEOUTS)? {
        None => return Ok(()),
        Some(z) => z
            .iter()
            .filter(|(_, v)| now.ended(score(v)))
            .map(|(m, _)| m.clone())
            .collect(),
    };
    if ended.is_empty() {
        return Ok(());
    }
    for m in &ended {
        world.zrem(TIMEOUTS, m);
    }
    let count = available(world)? + ended.len() as i64;
    world.set(COUNT, V::int(count), None, true);
    if count > 0 {
        messages.push((CHANNEL.to_owned(), count.to_string()));
    }
    Ok(())
}

fn acquire(world: &mut World, now: Now, id: usize, lease: i64) -> Result<Expected, R> {
    let before = available(world)?;
    // A copy of an acquire that ran: the id holds its permit.
    if world
        .zset(TIMEOUTS)?
        .is_some_and(|z| z.contains_key(&member(id)))
    {
        return Ok(Expected::reply(R::Array(vec![R::Int(1), R::Int(before)])));
    }
    // Given back before this copy landed.
    if world.exists(&request_of(id)) {
        return Ok(Expected::reply(R::Array(vec![R::Int(0), R::Int(-1)])));
    }
    let mut messages = Vec::new();
    reclaim(world, now, &mut messages)?;
    let there = available(world)?;
    let reply = if there >= 1 {
        world.set(COUNT, V::int(there - 1), None, true);
        world.zadd(TIMEOUTS, &member(id), now.plus(lease));
        // The timeouts live as long as the count, if it has a time to live.
        let ttl = world.keys[COUNT].ttl;
        if world.left(COUNT).is_some() {
            world.keys.get_mut(TIMEOUTS).expect("just added").ttl = ttl;
        }
        R::Array(vec![R::Int(1), R::Int(there - 1)])
    } else {
        let first = world
            .zset(TIMEOUTS)?
            .and_then(|z| z.values().map(score).min())
            .filter(|&s| s < NEVER);
        match first {
            Some(s) => R::Array(vec![
                R::Int(0),
                R::Within((s - now.hi).max(1), (s - now.lo).max(1)),
            ]),
            None => R::Array(vec![R::Int(0), R::Int(-1)]),
        }
    };
    Ok(Expected {
        reply,
        messages,
        optional: Vec::new(),
    })
}

fn release(world: &mut World, now: Now, id: usize, how: Release) -> Result<Expected, R> {
    available(world)?;
    let record = match how {
        Release::Bare => None,
        Release::Once { req, ttl } => Some((release_request(id, req), ttl)),
        Release::Forget { ttl } => Some((request_of(id), ttl)),
    };
    if let Some((key, _)) = &record {
        if let Some(earlier) = world.get(key).expect("a request key is a string") {
            let earlier = earlier.as_int().expect("a request key holds a number");
            return Ok(Expected::reply(R::Int(earlier)));
        }
    }
    let ends = world
        .zset(TIMEOUTS)?
        .and_then(|z| z.get(&member(id)))
        .map(score);
    let Some(ends) = ends else {
        // Recorded so that the acquire it gives back, landing later, takes nothing.
        if let (Release::Forget { .. }, Some((key, ttl))) = (how, &record) {
            world.set(key, V::int(0), Some(*ttl), false);
        }
        return Ok(Expected::reply(R::Int(0)));
    };
    world.zrem(TIMEOUTS, &member(id));
    let count = available(world)? + 1;
    world.set(COUNT, V::int(count), None, true);
    let released = if now.ended(ends) { 2 } else { 1 };
    if let Some((key, ttl)) = &record {
        world.set(key, V::int(released), Some(*ttl), false);
    }
    Ok(if count > 0 {
        Expected::publishing(R::Int(released), CHANNEL, &count.to_string())
    } else {
        Expected::reply(R::Int(released))
    })
}

/// Each permit whose lease is still running ends `lease` ms from now, or later if it already
/// did; one whose lease ended, or that is gone, is not brought back.
fn renew(world: &mut World, now: Now, ids: &[usize], lease: i64) -> Expected {
    let mut replies = Vec::new();
    for id in ids {
        let current = match world.zset(TIMEOUTS) {
            Ok(Some(z)) => z.get(&member(*id)).cloned(),
            // A key of another type reads as gone.
            _ => None,
        };
        let renewed = match current {
            None => false,
            // Renewed earlier in this call: it ends now + lease.
            Some(V::Within(..)) => true,
            Some(V::Tagged(..)) => panic!("model bug: a permit's timeout is a number"),
            Some(V::Is(s)) => {
                let s: i64 = s.parse().expect("a score");
                if now.ended(s) {
                    false
                } else {
                    let (lo, hi) = (now.lo + lease, now.hi + lease);
                    if s < hi {
                        world.zadd(TIMEOUTS, &member(*id), V::Within(lo.max(s), hi));
                    }
                    true
                }
            }
        };
        replies.push(R::Int(renewed as i64));
    }
    Expected::reply(R::Array(replies))
}

fn count_permits(world: &mut World, now: Now) -> Result<Expected, R> {
    available(world)?;
    let mut messages = Vec::new();
    reclaim(world, now, &mut messages)?;
    let held = world.zset(TIMEOUTS)?.map_or(0, |z| z.len()) as i64;
    Ok(Expected {
        reply: R::Array(vec![R::Int(available(world)?), R::Int(held)]),
        messages,
        optional: Vec::new(),
    })
}

#[test]
fn the_permit_semaphores_scripts_do_what_its_model_does() {
    let bench = crate::bench::Bench::start();
    let cases = crate::run::cases(64);
    if let Err(e) = check::<Permits>(&bench, &Scripts::default(), cases, 24, 2000) {
        panic!("{e}");
    }
}

#[test]
fn the_permit_semaphores_mutants_are_caught() {
    use relock::lua::*;
    let bench = crate::bench::Bench::start();
    let mutants = [
        mutant(
            "PERMITS_ACQUIRE",
            PERMITS_ACQUIRE,
            "if available >= 1 then",
            "if available > 1 then",
        ),
        mutant(
            "PERMITS_ACQUIRE",
            PERMITS_ACQUIRE,
            "redis.call('exists', KEYS[3]) == 1",
            "redis.call('exists', KEYS[3]) == 0",
        ),
        mutant(
            "PERMITS_ACQUIRE",
            PERMITS_ACQUIRE,
            "tonumber(first[2]) < NEVER",
            "tonumber(first[2]) <= NEVER",
        ),
        mutant(
            "PERMITS_ACQUIRE",
            PERMITS_ACQUIRE,
            "if ttl > 0",
            "if ttl < 0",
        ),
        mutant(
            "PERMITS_ACQUIRE",
            PERMITS_ACQUIRE,
            "redis.call('pexpire', KEYS[2], ttl)",
            "redis.call('pexpire', KEYS[2], ttl + 5000)",
        ),
        // The reclaim (lib/reclaim.lua) as the count runs it.
        mutant(
            "PERMITS_COUNT",
            PERMITS_COUNT,
            "if n == 0 then",
            "if n ~= 0 then",
        ),
        // The reclaim's publish, as the acquire runs it.
        mutant(
            "PERMITS_ACQUIRE",
            PERMITS_ACQUIRE,
            "if available > 0 then",
            "if available < 0 then",
        ),
        mutant(
            "PERMITS_RELEASE",
            PERMITS_RELEASE,
            "if tonumber(ends) <= server_ms()",
            "if tonumber(ends) >= server_ms()",
        ),
        mutant(
            "PERMITS_RELEASE",
            PERMITS_RELEASE,
            "if ARGV[5] == 'forget'",
            "if ARGV[5] ~= 'forget'",
        ),
        // The release's own publish (the first `available > 0` is the reclaim's, which the
        // release does not run).
        mutant(
            "PERMITS_RELEASE",
            PERMITS_RELEASE,
            "if available > 0 then\n  redis.call(ARGV[2]",
            "if available < 0 then\n  redis.call(ARGV[2]",
        ),
        mutant(
            "PERMITS_RELEASE",
            PERMITS_RELEASE,
            "redis.call('set', KEYS[3], released, 'px', ARGV[4])",
            "redis.call('set', KEYS[3], released, 'px', ARGV[4] + 5000)",
        ),
        mutant(
            "PERMITS_RENEW",
            PERMITS_RENEW,
            "tonumber(current) > now",
            "tonumber(current) < now",
        ),
        mutant(
            "PERMITS_RENEW",
            PERMITS_RENEW,
            "tonumber(current) < ends",
            "tonumber(current) > ends",
        ),
    ];
    let alive = survivors::<Permits>(&bench, &mutants);
    assert!(
        alive.is_empty(),
        "mutants the model test did not catch: {alive:#?}"
    );
}
