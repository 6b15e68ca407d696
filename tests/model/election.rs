//! The leader election's scripts against their model: a leader states its value (at the start
//! of its term, or a proclaim), keeps its record alive with its lock, resigns, and anyone reads
//! the leader; the election's lock is taken and released by holders, and other programs may
//! write over the lock and the record.
//!
//! The record (`relock_election:{name}`, docs/data-layout.md, "Leader election") is written only
//! by the hold that holds the lock: a begin needs the lock, a proclaim, a renewal and a
//! resignation need the record to be the caller's own. It lives a watchdog lease from the
//! begin, is only ever lengthened by a renewal, and after a resignation keeps the ended term
//! for the time the resignation asks.

use proptest::prelude::*;

use crate::mutants::{mutant, survivors};
use crate::plain_lock::{acquire, release};
use crate::run::{check, Call, Clock, Expected, Model, Scripts};
use crate::shape::{clobber, extend, lease, Clobber};
use crate::world::{World, R, V};

const LOCK: &str = "{el}";
const COUNTER: &str = "redisson_lock_token:{el}";
const LOCK_CHANNEL: &str = "redisson_lock__channel:{el}";
const RECORD: &str = "relock_election:{el}";
const CHANNEL: &str = "relock_election_channel:{el}";

/// The values leaders state: the empty one too, which the leader's read gives back as it is.
const VALUES: [&str; 3] = ["10.0.0.7:8080", "", "b"];

#[derive(Debug, Clone)]
pub enum Op {
    /// Holder `who` (0-1) takes the election's lock under a fresh field (a new term), if free.
    /// The other operations name a holder as 0-1, or as 2: the holder whose take last
    /// succeeded, so that a leader often begins, renews and resigns its own term.
    Take {
        who: usize,
        lease: i64,
        counter_ttl: i64,
    },
    /// Its hold is released (the lock's last step of a resignation).
    Drop {
        who: usize,
    },
    /// `election_begin.lua`: `elected` at the start of a term, or a proclaim (`value`).
    Begin {
        who: usize,
        value: usize,
        proclaim: bool,
        lease: i64,
    },
    /// The watchdog's renewal of the lock (`renew.lua`), in the same round as the record's.
    RenewLock {
        who: usize,
        lease: i64,
    },
    /// `election_renew.lua`, in the watchdog's round.
    Renew {
        who: usize,
        lease: i64,
    },
    /// `election_resign.lua`, keeping the ended term's mark for `keep` ms.
    Resign {
        who: usize,
        keep: i64,
    },
    Leader,
    ClobberLock(Clobber),
    ClobberRecord(Clobber),
}

#[derive(Debug, Default)]
pub struct Election {
    /// Each holder's hold: the field number of its last take that succeeded (a take that
    /// finds the lock held leaves its holder's hold as it was). Numbers come from one sequence.
    fields: [u32; 2],
    next: u32,
    /// The holder whose take last succeeded.
    taker: usize,
}

impl Election {
    fn holder(&self, who: usize) -> usize {
        if who < 2 {
            who
        } else {
            self.taker
        }
    }

    fn field(&self, who: usize) -> String {
        let who = self.holder(who);
        format!("c{who}:{}", self.fields[who])
    }

    /// A hold's term: its fencing token in the library; any number that grows with the holds
    /// here, since the scripts only store and publish it.
    fn term(&self, who: usize) -> String {
        (1000 + self.fields[self.holder(who)]).to_string()
    }
}

impl Model for Election {
    type Op = Op;

    fn op() -> BoxedStrategy<Op> {
        // Mostly the last taker, so that a leader often begins, renews and resigns its own term.
        let who = prop_oneof![2 => Just(2usize), 1 => 0usize..2];
        prop_oneof![
            5 => (0usize..2, lease(), prop_oneof![Just(0i64), Just(600_000i64)])
                .prop_map(|(who, lease, counter_ttl)| Op::Take { who, lease, counter_ttl }),
            1 => who.clone().prop_map(|who| Op::Drop { who }),
            6 => (who.clone(), 0..VALUES.len(), prop::bool::weighted(0.3), lease())
                .prop_map(|(who, value, proclaim, lease)| Op::Begin { who, value, proclaim, lease }),
            2 => (who.clone(), lease()).prop_map(|(who, lease)| Op::RenewLock { who, lease }),
            4 => (who.clone(), lease()).prop_map(|(who, lease)| Op::Renew { who, lease }),
            3 => (who.clone(), lease()).prop_map(|(who, keep)| Op::Resign { who, keep }),
            2 => Just(Op::Leader),
            1 => clobber().prop_map(Op::ClobberLock),
            1 => clobber().prop_map(Op::ClobberRecord),
        ]
        .boxed()
    }

    fn call(&mut self, scripts: &Scripts, op: &Op) -> Call {
        use relock::lua;
        match op {
            Op::Take {
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
            Op::Drop { who } => Call::script(
                scripts.get("RELEASE", lua::RELEASE),
                &[LOCK],
                &[&self.field(*who), "all", "publish", LOCK_CHANNEL],
            ),
            Op::Begin {
                who,
                value,
                proclaim,
                lease,
            } => Call::script(
                scripts.get("ELECTION_BEGIN", lua::ELECTION_BEGIN),
                &[LOCK, RECORD],
                &[
                    &self.field(*who),
                    &self.term(*who),
                    VALUES[*value],
                    "publish",
                    CHANNEL,
                    if *proclaim { "value" } else { "elected" },
                    &lease.to_string(),
                ],
            ),
            Op::RenewLock { who, lease } => Call::script(
                scripts.get("RENEW", lua::RENEW),
                &[LOCK],
                &[&lease.to_string(), &self.field(*who)],
            ),
            Op::Renew { who, lease } => Call::script(
                scripts.get("ELECTION_RENEW", lua::ELECTION_RENEW),
                &[LOCK, RECORD],
                &[&lease.to_string(), &self.field(*who)],
            ),
            Op::Resign { who, keep } => Call::script(
                scripts.get("ELECTION_RESIGN", lua::ELECTION_RESIGN),
                &[RECORD],
                &[
                    &self.field(*who),
                    &self.term(*who),
                    "publish",
                    CHANNEL,
                    &keep.to_string(),
                ],
            ),
            Op::Leader => Call::script(
                scripts.get("ELECTION_LEADER", lua::ELECTION_LEADER),
                &[LOCK, RECORD],
                &[],
            ),
            Op::ClobberLock(c) => c.call(LOCK),
            Op::ClobberRecord(c) => c.call(RECORD),
        }
    }

    fn expect(&mut self, world: &mut World, clock: Clock, op: &Op) -> Expected {
        match op {
            Op::Take {
                who,
                lease,
                counter_ttl,
            } => {
                let f = format!("c{who}:{}", self.next);
                let r = acquire(world, [LOCK, COUNTER], &f, *lease, *counter_ttl, clock)
                    .unwrap_or_else(|e| e);
                if matches!(&r, R::Array(a) if a[0] == R::Int(1)) {
                    self.fields[*who] = self.next;
                    self.taker = *who;
                }
                Expected::reply(r)
            }
            Op::Drop { who } => release(world, [LOCK, LOCK_CHANNEL], &self.field(*who), true),
            Op::Begin {
                who,
                value,
                proclaim,
                lease,
            } => begin(
                world,
                &self.field(*who),
                &self.term(*who),
                VALUES[*value],
                *proclaim,
                *lease,
            )
            .unwrap_or_else(Expected::reply),
            Op::RenewLock { who, lease } => {
                let held = matches!(world.hget(LOCK, &self.field(*who)), Ok(Some(_)));
                if held {
                    extend(world, LOCK, *lease);
                }
                Expected::reply(R::Array(vec![R::Int(held as i64)]))
            }
            Op::Renew { who, lease } => {
                Expected::reply(renew(world, &self.field(*who), *lease).unwrap_or_else(|e| e))
            }
            Op::Resign { who, keep } => resign(world, &self.field(*who), &self.term(*who), *keep)
                .unwrap_or_else(Expected::reply),
            Op::Leader => Expected::reply(leader(world).unwrap_or_else(|e| e)),
            Op::ClobberLock(c) => Expected::reply(c.expect(world, LOCK)),
            Op::ClobberRecord(c) => Expected::reply(c.expect(world, RECORD)),
        }
    }
}

/// Whether `field` holds the lock: an error for a lock key that is not a hash.
fn holds(world: &World, field: &str) -> Result<bool, R> {
    Ok(world.hget(LOCK, field)?.is_some())
}

/// Whether the record is `field`'s own: an error for a record that is not a hash.
fn owns(world: &World, field: &str) -> Result<bool, R> {
    Ok(world.hget(RECORD, "owner")?.and_then(V::as_str) == Some(field))
}

/// A holder of the lock records its term and value (a proclaim only on its own record),
/// beside whatever else the record holds, for a watchdog lease from now, and says so.
fn begin(
    world: &mut World,
    field: &str,
    term: &str,
    value: &str,
    proclaim: bool,
    lease: i64,
) -> Result<Expected, R> {
    if !holds(world, field)? || (proclaim && !owns(world, field)?) {
        return Ok(Expected::reply(R::Int(0)));
    }
    world.hash(RECORD)?;
    world.hset(RECORD, "term", V::str(term));
    world.hset(RECORD, "owner", V::str(field));
    world.hset(RECORD, "value", V::str(value));
    world.pexpire(RECORD, lease);
    let kind = if proclaim { "value" } else { "elected" };
    Ok(Expected::publishing(
        R::Int(1),
        CHANNEL,
        &format!("{kind}\n{term}\n{field}\n{value}"),
    ))
}

/// The leader's record lives at least `lease` more, while the leader holds the lock; 2 when
/// it holds the lock but the record is not its own.
fn renew(world: &mut World, field: &str, lease: i64) -> Result<R, R> {
    if !holds(world, field)? {
        return Ok(R::Int(0));
    }
    if !owns(world, field)? {
        return Ok(R::Int(2));
    }
    extend(world, RECORD, lease);
    Ok(R::Int(1))
}

/// The leader's own record says its term ended by a resignation, kept `keep` ms; observers
/// are told. Nothing else of the record is touched.
fn resign(world: &mut World, field: &str, term: &str, keep: i64) -> Result<Expected, R> {
    if !owns(world, field)? {
        return Ok(Expected::reply(R::Int(0)));
    }
    for f in ["owner", "value", "term"] {
        world.hdel(RECORD, f);
    }
    world.hset(RECORD, "ended_term", V::str(term));
    world.hset(RECORD, "ended_how", V::str("resigned"));
    world.pexpire(RECORD, keep);
    Ok(Expected::publishing(
        R::Int(1),
        CHANNEL,
        &format!("resigned\n{term}\n{field}\n"),
    ))
}

/// The leader (the record's owner, while it holds the lock), the lock's PTTL and the last
/// resignation, every one as a string.
fn leader(world: &World) -> Result<R, R> {
    let owner = world.hget(RECORD, "owner")?.cloned();
    let text = |f: &str| {
        R::Str(
            world
                .hget(RECORD, f)
                .ok()
                .flatten()
                .and_then(V::as_str)
                .unwrap_or("")
                .to_owned(),
        )
    };
    // The lock's PTTL, whatever the lock key is.
    let pttl = match R::pttl(world, LOCK) {
        R::Int(i) => R::Str(i.to_string()),
        r => r,
    };
    // A lock key of another type is no holder (the script asks it under pcall).
    let led = owner
        .as_ref()
        .and_then(V::as_str)
        .filter(|o| matches!(world.hget(LOCK, o), Ok(Some(_))));
    Ok(R::Array(match led {
        Some(o) => vec![
            R::Str("1".into()),
            text("term"),
            R::Str(o.to_owned()),
            text("value"),
            pttl,
            text("ended_term"),
            text("ended_how"),
        ],
        None => vec![
            R::Str("0".into()),
            R::Str(String::new()),
            R::Str(String::new()),
            R::Str(String::new()),
            pttl,
            text("ended_term"),
            text("ended_how"),
        ],
    }))
}

#[test]
fn the_elections_scripts_do_what_its_model_does() {
    let bench = crate::bench::Bench::start();
    let cases = crate::run::cases(64);
    if let Err(e) = check::<Election>(&bench, &Scripts::default(), cases, 24, 2000) {
        panic!("{e}");
    }
}

#[test]
fn the_elections_mutants_are_caught() {
    use relock::lua::*;
    let bench = crate::bench::Bench::start();
    let mutants = [
        mutant(
            "ELECTION_BEGIN",
            ELECTION_BEGIN,
            "redis.call('hexists', KEYS[1], ARGV[1]) == 0",
            "redis.call('hexists', KEYS[1], ARGV[1]) == 1",
        ),
        mutant(
            "ELECTION_BEGIN",
            ELECTION_BEGIN,
            "redis.call('hget', KEYS[2], 'owner') ~= ARGV[1]",
            "redis.call('hget', KEYS[2], 'owner') == ARGV[1]",
        ),
        mutant(
            "ELECTION_BEGIN",
            ELECTION_BEGIN,
            "redis.call('pexpire', KEYS[2], ARGV[7])",
            "redis.call('pexpire', KEYS[2], ARGV[7] + 5000)",
        ),
        mutant(
            "ELECTION_RENEW",
            ELECTION_RENEW,
            "redis.call('hexists', KEYS[1], ARGV[2]) == 0",
            "redis.call('hexists', KEYS[1], ARGV[2]) == 1",
        ),
        mutant(
            "ELECTION_RENEW",
            ELECTION_RENEW,
            "redis.call('hget', KEYS[2], 'owner') ~= ARGV[2]",
            "redis.call('hget', KEYS[2], 'owner') == ARGV[2]",
        ),
        mutant(
            "ELECTION_RENEW",
            ELECTION_RENEW,
            "pttl < tonumber(ARGV[1])",
            "pttl > tonumber(ARGV[1])",
        ),
        mutant(
            "ELECTION_RESIGN",
            ELECTION_RESIGN,
            "redis.call('hget', KEYS[1], 'owner') ~= ARGV[1]",
            "redis.call('hget', KEYS[1], 'owner') == ARGV[1]",
        ),
        mutant(
            "ELECTION_RESIGN",
            ELECTION_RESIGN,
            "redis.call('pexpire', KEYS[1], ARGV[5])",
            "redis.call('pexpire', KEYS[1], ARGV[5] + 5000)",
        ),
        mutant(
            "ELECTION_LEADER",
            ELECTION_LEADER,
            "redis.pcall('hexists', KEYS[1], owner) == 1",
            "redis.pcall('hexists', KEYS[1], owner) == 0",
        ),
    ];
    let alive = survivors::<Election>(&bench, &mutants);
    assert!(
        alive.is_empty(),
        "mutants the model test did not catch: {alive:#?}"
    );
}
