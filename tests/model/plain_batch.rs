//! The plain lock's batch and settle scripts against the plain lock's model: a batch runs
//! several acquires and releases on two locks in one call, each exactly as `acquire.lua` or
//! `release.lua` alone (the plain lock's model of each, in turn), an error staying the
//! operation's own; a settle sets a hold's lease keys to its watchdog lease, shorter or not.
//! Holds re-enter, and other programs write over the locks.

use std::collections::BTreeMap;

use proptest::prelude::*;

use crate::mutants::{mutant, survivors};
use crate::plain_lock::{acquire, release};
use crate::run::{check, Call, Clock, Expected, Model, Scripts};
use crate::shape::{clobber, extend, lease, Clobber};
use crate::world::{Data, World, R, V};

/// Each lock's hash, counter, channel, and another key of its holds' lease (a read hold's
/// timeout key, say), which a settle sets with the hash.
const LOCKS: [[&str; 4]; 2] = [
    [
        "{b1}",
        "redisson_lock_token:{b1}",
        "redisson_lock__channel:{b1}",
        "lease_key:{b1}",
    ],
    [
        "{b2}",
        "redisson_lock_token:{b2}",
        "redisson_lock__channel:{b2}",
        "lease_key:{b2}",
    ],
];

#[derive(Debug, Clone)]
pub enum Item {
    /// A fresh hold of `lock` (0-1) for holder `who` (0-2).
    Acquire {
        lock: usize,
        who: usize,
        lease: i64,
        counter_ttl: i64,
    },
    Release {
        lock: usize,
        who: usize,
        all: bool,
    },
}

#[derive(Debug, Clone)]
pub enum Op {
    /// `batch.lua` with these operations, in order.
    Batch(Vec<Item>),
    /// `settle.lua` for `who`'s hold of `lock`, with the lock's other lease key or without.
    Settle {
        lock: usize,
        who: usize,
        lease: i64,
        both: bool,
    },
    /// The other lease key is written with a lease of its own.
    LeaseKey {
        lock: usize,
        lease: i64,
    },
    Reenter {
        lock: usize,
        who: usize,
        lease: i64,
    },
    Clobber {
        lock: usize,
        clobber: Clobber,
    },
}

#[derive(Debug, Default)]
pub struct PlainBatch {
    /// Each (lock, holder)'s current field number; numbers come from one sequence.
    fields: BTreeMap<(usize, usize), u32>,
    next: u32,
    /// The fields of the batch being run, operation by operation.
    batch: Vec<String>,
}

impl PlainBatch {
    fn field(&self, lock: usize, who: usize) -> String {
        format!("c{who}:{}", self.fields.get(&(lock, who)).unwrap_or(&0))
    }
}

fn item() -> impl Strategy<Value = Item> {
    prop_oneof![
        (
            0usize..2,
            0usize..3,
            lease(),
            prop_oneof![Just(0i64), Just(600_000i64)]
        )
            .prop_map(|(lock, who, lease, counter_ttl)| Item::Acquire {
                lock,
                who,
                lease,
                counter_ttl
            }),
        (0usize..2, 0usize..3, any::<bool>()).prop_map(|(lock, who, all)| Item::Release {
            lock,
            who,
            all
        }),
    ]
}

impl Model for PlainBatch {
    type Op = Op;

    fn op() -> BoxedStrategy<Op> {
        prop_oneof![
            8 => proptest::collection::vec(item(), 1..6).prop_map(Op::Batch),
            3 => (0usize..2, 0usize..3, lease(), any::<bool>())
                .prop_map(|(lock, who, lease, both)| Op::Settle { lock, who, lease, both }),
            1 => (0usize..2, lease()).prop_map(|(lock, lease)| Op::LeaseKey { lock, lease }),
            2 => (0usize..2, 0usize..3, lease())
                .prop_map(|(lock, who, lease)| Op::Reenter { lock, who, lease }),
            1 => (0usize..2, clobber()).prop_map(|(lock, clobber)| Op::Clobber { lock, clobber }),
        ]
        .boxed()
    }

    fn call(&mut self, scripts: &Scripts, op: &Op) -> Call {
        use relock::lua;
        match op {
            Op::Batch(items) => {
                // As batch.rs encodes them: each operation's keys in turn, and its letter
                // followed by the arguments its own script takes.
                let (mut keys, mut args) = (Vec::new(), Vec::new());
                self.batch.clear();
                for it in items {
                    match it {
                        Item::Acquire {
                            lock,
                            who,
                            lease,
                            counter_ttl,
                        } => {
                            self.next += 1;
                            self.fields.insert((*lock, *who), self.next);
                            let f = self.field(*lock, *who);
                            keys.extend([LOCKS[*lock][0], LOCKS[*lock][1]]);
                            args.extend([
                                "a".to_string(),
                                lease.to_string(),
                                f.clone(),
                                counter_ttl.to_string(),
                            ]);
                            self.batch.push(f);
                        }
                        Item::Release { lock, who, all } => {
                            let f = self.field(*lock, *who);
                            keys.push(LOCKS[*lock][0]);
                            args.extend([
                                "r".to_string(),
                                f.clone(),
                                if *all { "all" } else { "1" }.to_string(),
                                "publish".to_string(),
                                LOCKS[*lock][2].to_string(),
                            ]);
                            self.batch.push(f);
                        }
                    }
                }
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                Call::script(scripts.get("BATCH", lua::BATCH), &keys, &args)
            }
            Op::Settle {
                lock,
                who,
                lease,
                both,
            } => {
                let keys: &[&str] = if *both {
                    &[LOCKS[*lock][0], LOCKS[*lock][3]]
                } else {
                    &[LOCKS[*lock][0]]
                };
                Call::script(
                    scripts.get("SETTLE", lua::SETTLE),
                    keys,
                    &[&lease.to_string(), &self.field(*lock, *who)],
                )
            }
            Op::LeaseKey { lock, lease } => Call::script(
                "redis.call('set', KEYS[1], 'x', 'px', ARGV[1]) return 1".into(),
                &[LOCKS[*lock][3]],
                &[&lease.to_string()],
            ),
            Op::Reenter { lock, who, lease } => Call::script(
                scripts.get("REENTER", lua::REENTER),
                &[LOCKS[*lock][0]],
                &[&lease.to_string(), &self.field(*lock, *who)],
            ),
            Op::Clobber { lock, clobber } => clobber.call(LOCKS[*lock][0]),
        }
    }

    fn expect(&mut self, world: &mut World, clock: Clock, op: &Op) -> Expected {
        match op {
            Op::Batch(items) => {
                let mut replies = Vec::new();
                let mut messages = Vec::new();
                for (it, f) in items.iter().zip(&self.batch) {
                    let reply = match it {
                        Item::Acquire {
                            lock,
                            lease,
                            counter_ttl,
                            ..
                        } => {
                            let [l, c, ..] = LOCKS[*lock];
                            match acquire(world, [l, c], f, *lease, *counter_ttl, clock) {
                                Ok(R::Array(r)) => ok(r),
                                Ok(other) => panic!("model bug: acquire replied {other:?}"),
                                Err(e) => err(world, l, e),
                            }
                        }
                        Item::Release { lock, all, .. } => {
                            let [l, _, ch, _] = LOCKS[*lock];
                            let e = release(world, [l, ch], f, *all);
                            messages.extend(e.messages);
                            match e.reply {
                                R::Nil => ok(vec![R::Int(-1)]),
                                R::Err(code) => err(world, l, R::Err(code)),
                                r => ok(vec![r]),
                            }
                        }
                    };
                    replies.push(reply);
                }
                Expected {
                    reply: R::Array(replies),
                    messages,
                    optional: Vec::new(),
                }
            }
            Op::Settle {
                lock,
                who,
                lease,
                both,
            } => {
                let [l, _, _, side] = LOCKS[*lock];
                Expected::reply(match world.hget(l, &self.field(*lock, *who)) {
                    Err(e) => e,
                    Ok(None) => R::Int(0),
                    Ok(Some(_)) => {
                        world.pexpire(l, *lease);
                        if *both {
                            world.pexpire(side, *lease);
                        }
                        R::Int(1)
                    }
                })
            }
            Op::LeaseKey { lock, lease } => {
                world.set(LOCKS[*lock][3], V::str("x"), Some(*lease), false);
                Expected::reply(R::Int(1))
            }
            Op::Reenter { lock, who, lease } => {
                let (l, f) = (LOCKS[*lock][0], self.field(*lock, *who));
                Expected::reply(match world.hget(l, &f) {
                    Err(e) => e,
                    Ok(None) => R::Nil,
                    Ok(Some(v)) => {
                        let count = v.as_int().unwrap() + 1;
                        world.hset(l, &f, V::int(count));
                        extend(world, l, *lease);
                        R::Int(count)
                    }
                })
            }
            Op::Clobber { lock, clobber } => {
                Expected::reply(clobber.expect(world, LOCKS[*lock][0]))
            }
        }
    }
}

/// An operation's reply in a batch: `{"ok", reply...}`.
fn ok(reply: Vec<R>) -> R {
    let mut r = vec![R::Str("ok".into())];
    r.extend(reply);
    R::Array(r)
}

/// An operation's error in a batch: `{"err", message}`, the message as its own script would
/// have failed with (lib/shape.lua says what a NOTALOCK names; the keys written over here have
/// one field).
fn err(world: &World, lock: &str, e: R) -> R {
    let message = match e {
        R::Err("WRONGTYPE") => {
            "WRONGTYPE Operation against a key holding the wrong kind of value".to_owned()
        }
        R::Err("NOTALOCK") => {
            let Some(Data::Hash(h)) = world.keys.get(lock).map(|k| &k.data) else {
                panic!("model bug: NOTALOCK for {lock}, not a hash");
            };
            let (f, v) = h.iter().next().expect("a hash has a field");
            let found = if world.left(lock).is_none() {
                "a hash without a time to live".to_owned()
            } else if !f.contains(':') {
                format!("a hash with field `{f}`, which is not a lock owner's (<id>:<n> or <uuid>:<uuid>)")
            } else {
                assert_eq!(
                    v,
                    &V::str("0"),
                    "model bug: the keys written over are these"
                );
                format!("a hash whose field `{f}` does not hold a positive hold count")
            };
            format!("NOTALOCK {found}")
        }
        other => panic!("model bug: an error {other:?}"),
    };
    R::Array(vec![R::Str("err".into()), R::Str(message)])
}

#[test]
fn the_plain_batch_scripts_do_what_its_model_does() {
    let bench = crate::bench::Bench::start();
    let cases = crate::run::cases(64);
    if let Err(e) = check::<PlainBatch>(&bench, &Scripts::default(), cases, 24, 2000) {
        panic!("{e}");
    }
}

#[test]
fn the_plain_batch_mutants_are_caught() {
    use relock::lua::*;
    let bench = crate::bench::Bench::start();
    let mutants = [
        mutant("BATCH", BATCH, "if op == 'a' then", "if op ~= 'a' then"),
        mutant("BATCH", BATCH, "if not ok then", "if ok then"),
        // Not `type(r) == 'table'`: the Redis these tests run hands pcall's caller every error
        // as a string, so that comparison has no effect here.
        mutant("BATCH", BATCH, "k, a = k + 2, a + 4", "k, a = k + 1, a + 4"),
        // The batch's acquire and release are the library's: their own comparisons and the
        // lease, as the batch runs them.
        mutant(
            "BATCH",
            BATCH,
            "redis.call('exists', lock) == 0",
            "redis.call('exists', lock) == 1",
        ),
        mutant(
            "BATCH",
            BATCH,
            "redis.call('hincrby', lock, field, -1) > 0",
            "redis.call('hincrby', lock, field, -1) >= 0",
        ),
        mutant(
            "BATCH",
            BATCH,
            "redis.call('pexpire', lock, lease)",
            "redis.call('pexpire', lock, lease + 5000)",
        ),
        mutant(
            "SETTLE",
            SETTLE,
            "redis.call('hexists', KEYS[1], ARGV[2]) == 0",
            "redis.call('hexists', KEYS[1], ARGV[2]) == 1",
        ),
        mutant(
            "SETTLE",
            SETTLE,
            "for i = 1, #KEYS do",
            "for i = 2, #KEYS do",
        ),
        mutant(
            "SETTLE",
            SETTLE,
            "redis.call('pexpire', KEYS[i], ARGV[1])",
            "redis.call('pexpire', KEYS[i], ARGV[1] + 5000)",
        ),
    ];
    let alive = survivors::<PlainBatch>(&bench, &mutants);
    assert!(
        alive.is_empty(),
        "mutants the model test did not catch: {alive:#?}"
    );
}
