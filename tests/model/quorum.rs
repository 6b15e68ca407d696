//! The quorum lock's scripts on one node against their model: the token write-back (fence),
//! the release that raises the node's counter to the hold's token, the batch renewal that
//! reports where the lock is free, and the put-back of holds on such a node. Holds are taken
//! with the plain acquire (a vote), the counter may be Redisson's (no expiry, counting from
//! 1), and other programs write over the locks.
//!
//! The counter rule (lib/fence.lua, docs/data-layout.md "The quorum lock"): after a fence the
//! counter is at least the token; a raised counter lives the grace from then (a missing one
//! too), one that never expired keeps no expiry; one that is not raised lives at least the
//! grace, lengthened only if it already has an expiry; a grace of 0 touches no expiry.

use proptest::prelude::*;

use crate::mutants::{mutant, survivors};
use crate::plain_lock::{acquire, release};
use crate::run::{check, Call, Clock, Expected, Model, Scripts};
use crate::shape::{clobber, extend, lease, Clobber};
use crate::world::{Data, World, R, V};

/// Each lock's hash, counter and channel on the node.
const LOCKS: [[&str; 3]; 2] = [
    [
        "{q1}",
        "redisson_lock_token:{q1}",
        "redisson_lock__channel:{q1}",
    ],
    [
        "{q2}",
        "redisson_lock_token:{q2}",
        "redisson_lock__channel:{q2}",
    ],
];

/// A token a call carries.
#[derive(Debug, Clone, Copy)]
pub enum Token {
    /// No token (a clean-up's release, the renewal of a hold the client knows only by field).
    Zero,
    /// A count of Redisson's, from 1.
    Small(i64),
    /// A token minted from a clock: this many ms from the case's start, so that it falls
    /// below, on, or above the counters this node seeds from its own clock meanwhile, and on
    /// other calls' tokens.
    Clock(i64),
}

fn token() -> impl Strategy<Value = Token> {
    prop_oneof![
        2 => Just(Token::Zero),
        1 => (1i64..6).prop_map(Token::Small),
        4 => (-2i64..6).prop_map(|k| Token::Clock(k * 50)),
    ]
}

/// A grace: none (counters that never expire) or some seconds.
fn grace() -> impl Strategy<Value = i64> {
    prop_oneof![Just(0i64), lease()]
}

/// A hold in a renewal or a put-back: `who`'s current hold of `lock`, with its token.
#[derive(Debug, Clone, Copy)]
pub struct Hold {
    lock: usize,
    who: usize,
    token: Token,
}

fn holds() -> impl Strategy<Value = Vec<Hold>> {
    proptest::collection::vec(
        (0usize..2, 0usize..3, token()).prop_map(|(lock, who, token)| Hold { lock, who, token }),
        1..4,
    )
}

#[derive(Debug, Clone)]
pub enum Op {
    /// A vote: `acquire.lua` for a fresh hold of `who` (0-2).
    Acquire {
        lock: usize,
        who: usize,
        lease: i64,
        counter_ttl: i64,
    },
    Fence {
        lock: usize,
        token: Token,
        grace: i64,
    },
    Release {
        lock: usize,
        who: usize,
        all: bool,
        token: Token,
        grace: i64,
    },
    Renew {
        holds: Vec<Hold>,
        lease: i64,
        grace: i64,
    },
    Putback {
        holds: Vec<Hold>,
        lease: i64,
        grace: i64,
    },
    /// Redisson's `RFencedLock` counts on the counter: a small count, no expiry.
    Redisson {
        lock: usize,
        count: i64,
    },
    Clobber {
        lock: usize,
        clobber: Clobber,
    },
}

#[derive(Debug)]
pub struct QuorumNode {
    /// Each (lock, holder)'s current field number, from one sequence.
    fields: [[u32; 3]; 2],
    next: u32,
    /// The case's start on the clock, in µs: clock tokens are counted from it.
    start_us: i64,
}

impl Default for QuorumNode {
    fn default() -> QuorumNode {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        QuorumNode {
            fields: [[0; 3]; 2],
            next: 0,
            start_us: now.as_micros() as i64,
        }
    }
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

impl QuorumNode {
    fn field(&self, lock: usize, who: usize) -> String {
        format!("c{who}:{}", self.fields[lock][who])
    }

    fn token(&self, t: Token) -> i64 {
        match t {
            Token::Zero => 0,
            Token::Small(n) => n,
            Token::Clock(ms) => self.start_us + ms * 1000,
        }
    }

    /// The keys and arguments of a renewal or a put-back, as renewal.rs sends them.
    fn batch(&self, holds: &[Hold], lease: i64, grace: i64) -> (Vec<&'static str>, Vec<String>) {
        let mut keys = Vec::new();
        let mut args = vec![lease.to_string(), grace.to_string()];
        for h in holds {
            keys.extend([LOCKS[h.lock][0], LOCKS[h.lock][1]]);
            args.extend([self.field(h.lock, h.who), self.token(h.token).to_string()]);
        }
        (keys, args)
    }
}

impl Model for QuorumNode {
    type Op = Op;

    fn op() -> BoxedStrategy<Op> {
        let (lock, who) = (0usize..2, 0usize..3);
        prop_oneof![
            // Counters seeded with lives as long as the graces, so that a fence finds them
            // shorter or longer.
            4 => (lock.clone(), who.clone(), lease(), grace())
                .prop_map(|(lock, who, lease, counter_ttl)| Op::Acquire { lock, who, lease, counter_ttl }),
            3 => (lock.clone(), token(), grace())
                .prop_map(|(lock, token, grace)| Op::Fence { lock, token, grace }),
            3 => (lock.clone(), who, any::<bool>(), token(), grace()).prop_map(
                |(lock, who, all, token, grace)| Op::Release { lock, who, all, token, grace }
            ),
            3 => (holds(), lease(), grace())
                .prop_map(|(holds, lease, grace)| Op::Renew { holds, lease, grace }),
            3 => (holds(), lease(), grace())
                .prop_map(|(holds, lease, grace)| Op::Putback { holds, lease, grace }),
            1 => (lock.clone(), 1i64..6).prop_map(|(lock, count)| Op::Redisson { lock, count }),
            1 => (lock, clobber()).prop_map(|(lock, clobber)| Op::Clobber { lock, clobber }),
        ]
        .boxed()
    }

    fn call(&mut self, scripts: &Scripts, op: &Op) -> Call {
        use relock::lua;
        match op {
            Op::Acquire {
                lock,
                who,
                lease,
                counter_ttl,
            } => {
                self.next += 1;
                self.fields[*lock][*who] = self.next;
                Call::script(
                    scripts.get("ACQUIRE", lua::ACQUIRE),
                    &[LOCKS[*lock][0], LOCKS[*lock][1]],
                    &[
                        &lease.to_string(),
                        &self.field(*lock, *who),
                        &counter_ttl.to_string(),
                    ],
                )
            }
            Op::Fence { lock, token, grace } => Call::script(
                scripts.get("QUORUM_FENCE", lua::QUORUM_FENCE),
                &[LOCKS[*lock][1]],
                &[&self.token(*token).to_string(), &grace.to_string()],
            ),
            Op::Release {
                lock,
                who,
                all,
                token,
                grace,
            } => Call::script(
                scripts.get("QUORUM_RELEASE", lua::QUORUM_RELEASE),
                &[LOCKS[*lock][0], LOCKS[*lock][1]],
                &[
                    &self.field(*lock, *who),
                    if *all { "all" } else { "1" },
                    "publish",
                    LOCKS[*lock][2],
                    &self.token(*token).to_string(),
                    &grace.to_string(),
                ],
            ),
            Op::Renew {
                holds,
                lease,
                grace,
            } => {
                let (keys, args) = self.batch(holds, *lease, *grace);
                Call::script(
                    scripts.get("QUORUM_RENEW", lua::QUORUM_RENEW),
                    &keys,
                    &strs(&args),
                )
            }
            Op::Putback {
                holds,
                lease,
                grace,
            } => {
                let (keys, args) = self.batch(holds, *lease, *grace);
                Call::script(
                    scripts.get("QUORUM_PUTBACK", lua::QUORUM_PUTBACK),
                    &keys,
                    &strs(&args),
                )
            }
            Op::Redisson { lock, count } => Call::script(
                "redis.call('set', KEYS[1], ARGV[1]) return 1".into(),
                &[LOCKS[*lock][1]],
                &[&count.to_string()],
            ),
            Op::Clobber { lock, clobber } => clobber.call(LOCKS[*lock][0]),
        }
    }

    fn expect(&mut self, world: &mut World, clock: Clock, op: &Op) -> Expected {
        match op {
            Op::Acquire {
                lock,
                who,
                lease,
                counter_ttl,
            } => {
                let [l, c, _] = LOCKS[*lock];
                let f = self.field(*lock, *who);
                Expected::reply(
                    acquire(world, [l, c], &f, *lease, *counter_ttl, clock).unwrap_or_else(|e| e),
                )
            }
            Op::Fence { lock, token, grace } => {
                fence(world, LOCKS[*lock][1], self.token(*token), *grace);
                Expected::reply(R::Int(1))
            }
            Op::Release {
                lock,
                who,
                all,
                token,
                grace,
            } => {
                let [l, c, ch] = LOCKS[*lock];
                let released = release(world, [l, ch], &self.field(*lock, *who), *all);
                // An error ends the script before the raise.
                if !matches!(released.reply, R::Err(_)) && self.token(*token) > 0 {
                    fence(world, c, self.token(*token), *grace);
                }
                released
            }
            Op::Renew {
                holds,
                lease,
                grace,
            } => {
                let mut replies = Vec::new();
                for h in holds {
                    let [l, c, _] = LOCKS[h.lock];
                    let here = matches!(world.hget(l, &self.field(h.lock, h.who)), Ok(Some(_)));
                    replies.push(R::Int(if here {
                        extend(world, l, *lease);
                        fence(world, c, self.token(h.token), *grace);
                        1
                    } else if !world.exists(l) {
                        2
                    } else {
                        0
                    }));
                }
                Expected::reply(R::Array(replies))
            }
            Op::Putback {
                holds,
                lease,
                grace,
            } => {
                let mut replies = Vec::new();
                for h in holds {
                    let [l, c, _] = LOCKS[h.lock];
                    replies.push(R::Int(if world.exists(l) {
                        0
                    } else {
                        world.hset(l, &self.field(h.lock, h.who), V::int(1));
                        world.pexpire(l, *lease);
                        fence(world, c, self.token(h.token), *grace);
                        1
                    }));
                }
                Expected::reply(R::Array(replies))
            }
            Op::Redisson { lock, count } => {
                world.set(LOCKS[*lock][1], V::int(*count), None, false);
                Expected::reply(R::Int(1))
            }
            Op::Clobber { lock, clobber } => {
                Expected::reply(clobber.expect(world, LOCKS[*lock][0]))
            }
        }
    }
}

/// The counter at least `token` afterwards. Raised, it lives `grace` from now, unless it had
/// no expiry (or the grace is 0), when it keeps what it had; not raised, it lives at least
/// `grace` if it expires at all.
fn fence(world: &mut World, counter: &str, token: i64, grace: i64) {
    let (current, expires) = match world.keys.get(counter) {
        None => (0, true),
        Some(k) => match &k.data {
            Data::Str(v) => (
                v.as_int()
                    .expect("the model pins a counter before it is compared"),
                k.ttl.left().is_some(),
            ),
            other => panic!("model bug: a counter {other:?}"),
        },
    };
    if current < token {
        if grace > 0 && expires {
            world.set(counter, V::int(token), Some(grace), false);
        } else {
            world.set(counter, V::int(token), None, true);
        }
    } else if grace > 0 && world.left(counter).is_some_and(|left| left < grace) {
        world.pexpire(counter, grace);
    }
}

#[test]
fn the_quorum_nodes_scripts_do_what_its_model_does() {
    let bench = crate::bench::Bench::start();
    let cases = crate::run::cases(64);
    if let Err(e) = check::<QuorumNode>(&bench, &Scripts::default(), cases, 24, 2000) {
        panic!("{e}");
    }
}

#[test]
fn the_quorum_nodes_mutants_are_caught() {
    use relock::lua::*;
    let bench = crate::bench::Bench::start();
    let mutants = [
        mutant(
            "QUORUM_FENCE",
            QUORUM_FENCE,
            "if current < token then",
            "if current <= token then",
        ),
        mutant(
            "QUORUM_FENCE",
            QUORUM_FENCE,
            "ttl > 0 and pttl ~= -1",
            "ttl > 0 and pttl == -1",
        ),
        mutant(
            "QUORUM_FENCE",
            QUORUM_FENCE,
            "pttl >= 0 and pttl < ttl",
            "pttl >= 0 and pttl > ttl",
        ),
        mutant(
            "QUORUM_FENCE",
            QUORUM_FENCE,
            "'px', ttl)",
            "'px', ttl + 5000)",
        ),
        mutant(
            "QUORUM_RELEASE",
            QUORUM_RELEASE,
            "if token > 0 then",
            "if token >= 0 then",
        ),
        mutant(
            "QUORUM_RENEW",
            QUORUM_RENEW,
            "redis.pcall('hexists', lock, ARGV[1 + 2 * i]) == 1",
            "redis.pcall('hexists', lock, ARGV[1 + 2 * i]) == 0",
        ),
        mutant(
            "QUORUM_RENEW",
            QUORUM_RENEW,
            "elseif redis.call('exists', lock) == 0",
            "elseif redis.call('exists', lock) == 1",
        ),
        mutant(
            "QUORUM_PUTBACK",
            QUORUM_PUTBACK,
            "redis.call('exists', lock) ~= 0",
            "redis.call('exists', lock) == 0",
        ),
        mutant(
            "QUORUM_PUTBACK",
            QUORUM_PUTBACK,
            "redis.call('pexpire', lock, lease)",
            "redis.call('pexpire', lock, lease + 5000)",
        ),
    ];
    let alive = survivors::<QuorumNode>(&bench, &mutants);
    assert!(
        alive.is_empty(),
        "mutants the model test did not catch: {alive:#?}"
    );
}
