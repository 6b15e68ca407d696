//! The run-at-most-once job's script against its model: a run (a plain hold with the at-most
//! lease) that finished before its at-least time keeps the lock for what is left of it. Runs
//! start, re-enter (a late re-entry), keep, release, and are force-unlocked, on a lock that
//! other programs may write over.
//!
//! Kept (docs/data-layout.md, "Run-at-most-once jobs"): only the run's own hold, only while it
//! has one count; it moves to a fresh field of the same client with count 1, the lock's TTL
//! becomes what is left (shorter or not), and `1` on the release channel wakes every waiter.
//! Nothing is ever created: a hold that is gone stays gone.

use proptest::prelude::*;

use crate::mutants::{mutant, survivors};
use crate::plain_lock::{acquire, release};
use crate::run::{check, Call, Clock, Expected, Model, Scripts};
use crate::shape::{clobber, ensure_lock, extend, lease, Clobber};
use crate::world::{World, R, V};

const LOCK: &str = "{job}";
const COUNTER: &str = "redisson_lock_token:{job}";
const CHANNEL: &str = "redisson_lock__channel:{job}";

#[derive(Debug, Clone)]
pub enum Op {
    /// A run of client `who` (0-2) takes the lock under a fresh field, for the at-most lease.
    Run {
        who: usize,
        lease: i64,
        counter_ttl: i64,
    },
    /// A re-entry of the run's hold lands (one more count).
    Reenter {
        who: usize,
        lease: i64,
    },
    /// `job_keep.lua`: the run finished with `left` ms of its at-least time to go.
    Keep {
        who: usize,
        left: i64,
    },
    Release {
        who: usize,
        all: bool,
    },
    ForceUnlock,
    Clobber(Clobber),
}

#[derive(Debug, Default)]
pub struct Job {
    /// Each client's last run that took the lock, by its field number (a run that finds the
    /// lock taken does not run, and leaves its client's last one as it was). Numbers come from
    /// one sequence, so a kept hold's fresh field is no run's.
    fields: [u32; 3],
    next: u32,
    /// The fresh field of the last keep.
    fresh: String,
}

impl Job {
    fn field(&self, who: usize) -> String {
        format!("c{who}:{}", self.fields[who])
    }
}

impl Model for Job {
    type Op = Op;

    fn op() -> BoxedStrategy<Op> {
        let who = 0usize..3;
        prop_oneof![
            4 => (who.clone(), lease(), prop_oneof![Just(0i64), Just(600_000i64)])
                .prop_map(|(who, lease, counter_ttl)| Op::Run { who, lease, counter_ttl }),
            2 => (who.clone(), lease()).prop_map(|(who, lease)| Op::Reenter { who, lease }),
            5 => (who.clone(), lease()).prop_map(|(who, left)| Op::Keep { who, left }),
            2 => (who.clone(), any::<bool>()).prop_map(|(who, all)| Op::Release { who, all }),
            1 => Just(Op::ForceUnlock),
            1 => clobber().prop_map(Op::Clobber),
        ]
        .boxed()
    }

    fn call(&mut self, scripts: &Scripts, op: &Op) -> Call {
        use relock::lua;
        match op {
            Op::Run {
                who,
                lease,
                counter_ttl,
            } => {
                self.next += 1;
                Call::script(
                    scripts.get("ACQUIRE", lua::ACQUIRE),
                    &[LOCK, COUNTER],
                    &[
                        &lease.to_string(),
                        &format!("c{who}:{}", self.next),
                        &counter_ttl.to_string(),
                    ],
                )
            }
            Op::Reenter { who, lease } => Call::script(
                scripts.get("REENTER", lua::REENTER),
                &[LOCK],
                &[&lease.to_string(), &self.field(*who)],
            ),
            Op::Keep { who, left } => {
                self.next += 1;
                self.fresh = format!("c{who}:{}", self.next);
                Call::script(
                    scripts.get("JOB_KEEP", lua::JOB_KEEP),
                    &[LOCK],
                    &[
                        &self.field(*who),
                        &left.to_string(),
                        &self.fresh,
                        "publish",
                        CHANNEL,
                    ],
                )
            }
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
            Op::Run {
                who,
                lease,
                counter_ttl,
            } => {
                let f = format!("c{who}:{}", self.next);
                let r = acquire(world, [LOCK, COUNTER], &f, *lease, *counter_ttl, clock)
                    .unwrap_or_else(|e| e);
                if matches!(&r, R::Array(a) if a[0] == R::Int(1)) {
                    self.fields[*who] = self.next;
                }
                Expected::reply(r)
            }
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
            Op::Keep { who, left } => keep(world, &self.field(*who), *left, &self.fresh),
            Op::Release { who, all } => release(world, [LOCK, CHANNEL], &self.field(*who), *all),
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

/// The run's hold, alone with one count, moves to `fresh` and ends in `left` ms, or when its
/// lease (the at-most time) ends if that is sooner; waiters are woken with `1`. 2: more counts
/// (nothing changed); 0: no such hold (nothing created).
fn keep(world: &mut World, field: &str, left: i64, fresh: &str) -> Expected {
    let count = match world.hget(LOCK, field) {
        Err(e) => return Expected::reply(e),
        Ok(None) => return Expected::reply(R::Int(0)),
        Ok(Some(v)) => v.as_int().unwrap(),
    };
    if count != 1 {
        return Expected::reply(R::Int(2));
    }
    world.hset(LOCK, fresh, V::int(1));
    world.hdel(LOCK, field);
    if world.left(LOCK).is_none_or(|lease| left < lease) {
        world.pexpire(LOCK, left);
    }
    Expected::publishing(R::Int(1), CHANNEL, "1")
}

#[test]
fn the_jobs_scripts_do_what_its_model_does() {
    let bench = crate::bench::Bench::start();
    let cases = crate::run::cases(64);
    if let Err(e) = check::<Job>(&bench, &Scripts::default(), cases, 24, 2000) {
        panic!("{e}");
    }
}

#[test]
fn the_jobs_mutants_are_caught() {
    use relock::lua::*;
    let bench = crate::bench::Bench::start();
    let mutants = [
        mutant("JOB_KEEP", JOB_KEEP, "if not count then", "if count then"),
        mutant(
            "JOB_KEEP",
            JOB_KEEP,
            "if count ~= '1' then",
            "if count == '1' then",
        ),
        mutant(
            "JOB_KEEP",
            JOB_KEEP,
            "redis.call('pexpire', KEYS[1], ARGV[2])",
            "redis.call('pexpire', KEYS[1], ARGV[2] + 5000)",
        ),
        mutant(
            "JOB_KEEP",
            JOB_KEEP,
            "redis.call(ARGV[4], ARGV[5], '1')",
            "redis.call(ARGV[4], ARGV[5], '0')",
        ),
    ];
    let alive = survivors::<Job>(&bench, &mutants);
    assert!(
        alive.is_empty(),
        "mutants the model test did not catch: {alive:#?}"
    );
}
