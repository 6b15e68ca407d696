//! The count-down latch's scripts against its model (Redisson's `RCountDownLatch`: the count in
//! a string under the name, missing = open; `1` published when a count is set, `0` when the
//! latch opens): try-set, count-down under a request key that makes every copy of one count
//! down count once, and delete, on a key that other programs may write over or give a time to
//! live.

use proptest::prelude::*;

use crate::mutants::{mutant, survivors};
use crate::run::{check, Call, Clock, Expected, Model, Scripts};
use crate::semaphore::{count, written, Written};
use crate::shape::lease;
use crate::world::{World, R, V};

const LATCH: &str = "latch";
/// Redisson's latch channel wraps the whole name in braces.
const CHANNEL: &str = "redisson_countdownlatch__channel__{latch}";

/// The request key of count-down `i`: the same for every copy of one call.
fn request(i: usize) -> String {
    format!("relock_request:{{{LATCH}}}:c{i}")
}

#[derive(Debug, Clone)]
pub enum Op {
    Set {
        n: i64,
    },
    /// Count-down request `req` (0-2): a later one with the same request is a copy.
    CountDown {
        req: usize,
        ttl: i64,
    },
    Delete,
    Written(Written),
}

#[derive(Debug, Default)]
pub struct Latch;

impl Model for Latch {
    type Op = Op;

    fn op() -> BoxedStrategy<Op> {
        prop_oneof![
            3 => (1i64..4).prop_map(|n| Op::Set { n }),
            6 => (0usize..3, lease()).prop_map(|(req, ttl)| Op::CountDown { req, ttl }),
            1 => Just(Op::Delete),
            2 => written().prop_map(Op::Written),
        ]
        .boxed()
    }

    fn call(&mut self, scripts: &Scripts, op: &Op) -> Call {
        use relock::lua;
        match op {
            Op::Set { n } => Call::script(
                scripts.get("LATCH_SET", lua::LATCH_SET),
                &[LATCH],
                &[&n.to_string(), "publish", CHANNEL],
            ),
            Op::CountDown { req, ttl } => Call::script(
                scripts.get("LATCH_COUNT_DOWN", lua::LATCH_COUNT_DOWN),
                &[LATCH, &request(*req)],
                &["publish", &ttl.to_string(), CHANNEL],
            ),
            Op::Delete => Call::script(
                scripts.get("LATCH_DELETE", lua::LATCH_DELETE),
                &[LATCH],
                &["publish", CHANNEL],
            ),
            Op::Written(w) => w.call(LATCH),
        }
    }

    fn expect(&mut self, world: &mut World, _clock: Clock, op: &Op) -> Expected {
        match op {
            Op::Set { n } => match world.get(LATCH) {
                Err(e) => Expected::reply(e),
                // Any string is a count already: nothing changes.
                Ok(Some(_)) => Expected::reply(R::Int(0)),
                Ok(None) => {
                    world.set(LATCH, V::int(*n), None, false);
                    Expected::publishing(R::Int(1), CHANNEL, "1")
                }
            },
            Op::CountDown { req, ttl } => count_down(world, &request(*req), *ttl),
            Op::Delete => match count(world, LATCH) {
                Err(e) => Expected::reply(e),
                Ok(None) => Expected::reply(R::Int(0)),
                Ok(Some(_)) => {
                    world.del(LATCH);
                    Expected::publishing(R::Int(1), CHANNEL, "0")
                }
            },
            Op::Written(w) => Expected::reply(w.expect(world, LATCH)),
        }
    }
}

/// One off the count, once per request; the latch opens (the key goes, `0` is published) when
/// it reaches 0, and an open latch stays open (no key, no message).
fn count_down(world: &mut World, req: &str, ttl: i64) -> Expected {
    match world.get(req) {
        Ok(Some(seen)) => {
            let seen = seen.as_int().expect("a request key holds a number");
            return Expected::reply(R::Int(seen));
        }
        Ok(None) => {}
        Err(_) => panic!("model bug: a request key of another type"),
    }
    let left = match count(world, LATCH) {
        Err(e) => return Expected::reply(e),
        Ok(c) => c.unwrap_or(0) - 1,
    };
    world.set(req, V::int(left), Some(ttl), false);
    if left > 0 {
        // DECR keeps the key's time to live.
        world.set(LATCH, V::int(left), None, true);
        return Expected::reply(R::Int(left));
    }
    world.del(LATCH);
    if left == 0 {
        Expected::publishing(R::Int(0), CHANNEL, "0")
    } else {
        Expected::reply(R::Int(left))
    }
}

#[test]
fn the_latchs_scripts_do_what_its_model_does() {
    let bench = crate::bench::Bench::start();
    let cases = crate::run::cases(64);
    if let Err(e) = check::<Latch>(&bench, &Scripts::default(), cases, 24, 2000) {
        panic!("{e}");
    }
}

#[test]
fn the_latchs_mutants_are_caught() {
    use relock::lua::*;
    let bench = crate::bench::Bench::start();
    let mutants = [
        // latch_set has no comparison: its test is whether a count is there.
        mutant(
            "LATCH_SET",
            LATCH_SET,
            "if redis.call('get', KEYS[1]) then",
            "if not redis.call('get', KEYS[1]) then",
        ),
        mutant(
            "LATCH_COUNT_DOWN",
            LATCH_COUNT_DOWN,
            "if count <= 0 then",
            "if count < 0 then",
        ),
        mutant(
            "LATCH_COUNT_DOWN",
            LATCH_COUNT_DOWN,
            "if count == 0 then",
            "if count ~= 0 then",
        ),
        mutant(
            "LATCH_COUNT_DOWN",
            LATCH_COUNT_DOWN,
            "'px', ARGV[2]",
            "'px', ARGV[2] + 5000",
        ),
        mutant(
            "LATCH_DELETE",
            LATCH_DELETE,
            "if not value then",
            "if value then",
        ),
    ];
    let alive = survivors::<Latch>(&bench, &mutants);
    assert!(
        alive.is_empty(),
        "mutants the model test did not catch: {alive:#?}"
    );
}
