//! The fair lock's scripts against their earlier version, on two servers: the sources as they
//! were before the release's handoff path was cut to fewer commands are kept as text in
//! `fixtures/fair_before/` (each script and the lib files it was built from). The same random
//! sequences of the fair model's operations (with time passing, empty restarts and keys written
//! over) run through the earlier scripts on one server and the current ones on the other, and
//! after every step the replies, the messages published and every key (value and time to live)
//! must be the same on both. Nothing is excused but what the clock gives each server: a value
//! seeded from it (a fencing token, a ticket) within 10 s, and a time to live, a heartbeat
//! deadline or a lease read some ms apart within 250 ms.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

use crate::bench::{Actual, Bench, Reply, Stored};
use crate::fair_lock::{FairLock, Op};
use crate::run::{Model, Scripts, Step, MARGIN_MS};
use crate::world::World;

const LOCK: &str = "{fl}";
const ALIVE: &str = "relock_fair_alive:{fl}";

/// An earlier script as it was sent: the lib files it used, then its own file.
macro_rules! before {
    ($file:literal $(, $lib:literal)*) => {
        concat!(
            $(include_str!(concat!("fixtures/fair_before/lib/", $lib, ".lua")),)*
            include_str!(concat!("fixtures/fair_before/", $file))
        )
    };
}

/// The fair scripts before the change, by their names in `relock::lua`.
fn before() -> Scripts {
    Scripts::default()
        .with(
            "FAIR_ACQUIRE",
            before!("fair_acquire.lua", "mint", "shape", "queue", "handoff"),
        )
        .with(
            "FAIR_RELEASE",
            before!("fair_release.lua", "release", "mint", "queue", "handoff"),
        )
        .with(
            "FAIR_HEARTBEAT",
            before!("fair_heartbeat.lua", "mint", "queue", "handoff"),
        )
        .with(
            "FAIR_LEAVE",
            before!("fair_leave.lua", "mint", "queue", "handoff"),
        )
        .with(
            "FAIR_FORCE_UNLOCK",
            before!("fair_force_unlock.lua", "shape", "queue"),
        )
}

/// One server, the scripts it runs, and the callers' view of it (their fields and tickets: a
/// ticket seeded from this server's clock is sent back to this server).
struct Side {
    bench: Bench,
    scripts: Scripts,
    callers: FairLock,
}

/// Values taken from a server's clock: µs since 1970 (tokens, tickets).
const CLOCK_US: i64 = 1_000_000_000_000_000;

/// Whether two numbers read on the two servers are the same: equal, or both from the clock
/// within 10 s, or both times (TTLs, deadlines and leases, at least 1 s in these sequences)
/// within 250 ms. Counts, positions and flags must be equal.
fn same_number(a: i64, b: i64) -> bool {
    a == b
        || (a >= CLOCK_US && b >= CLOCK_US && (a - b).abs() <= 10_000_000)
        || ((1000..CLOCK_US).contains(&a) && (1000..CLOCK_US).contains(&b) && (a - b).abs() <= 250)
}

fn same_text(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    if let (Ok(x), Ok(y)) = (a.parse::<i64>(), b.parse::<i64>()) {
        return same_number(x, y);
    }
    // A handoff message, `<field>=<token>`.
    match (a.split_once('='), b.split_once('=')) {
        (Some((fa, ta)), Some((fb, tb))) => fa == fb && same_text(ta, tb),
        _ => false,
    }
}

fn same_reply(a: &Reply, b: &Reply) -> bool {
    match (a, b) {
        (Reply::Int(x), Reply::Int(y)) => same_number(*x, *y),
        (Reply::Str(x), Reply::Str(y)) => same_text(x, y),
        (Reply::Array(x), Reply::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_reply(p, q))
        }
        _ => a == b,
    }
}

fn same_map(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((ka, va), (kb, vb))| ka == kb && same_text(va, vb))
}

fn same_key(a: &Actual, b: &Actual) -> bool {
    let data = match (&a.data, &b.data) {
        (Stored::Str(x), Stored::Str(y)) => same_text(x, y),
        (Stored::Hash(x), Stored::Hash(y)) | (Stored::ZSet(x), Stored::ZSet(y)) => same_map(x, y),
        (x, y) => x == y,
    };
    let ttl = a.pttl == b.pttl || (a.pttl >= 0 && b.pttl >= 0 && (a.pttl - b.pttl).abs() <= 250);
    data && ttl
}

/// Every deadline on `bench` (TTLs, and the heartbeat deadlines kept as scores), as ms from
/// its clock's now.
fn deadlines(bench: &Bench) -> Vec<i64> {
    let now = bench.now_us() / 1000;
    let keys = bench.snapshot();
    let mut all: Vec<i64> = keys.values().map(|k| k.pttl).filter(|p| *p >= 0).collect();
    if let Some(Actual {
        data: Stored::ZSet(z),
        ..
    }) = keys.get(ALIVE)
    {
        all.extend(
            z.values()
                .map(|s| s.parse::<i64>().unwrap() - now)
                .filter(|d| *d > 0),
        );
    }
    all.sort_unstable();
    all
}

fn both_deadlines(sides: &[Side; 2]) -> Vec<i64> {
    let mut all = deadlines(&sides[0].bench);
    all.extend(deadlines(&sides[1].bench));
    all.sort_unstable();
    all
}

/// Time passes `ms` on both servers, stopping clear of every deadline (as the model test's
/// runner does).
fn age(sides: &mut [Side; 2], ms: i64) {
    if ms <= 0 {
        return;
    }
    let mut ms = ms;
    for d in both_deadlines(sides) {
        if (d - ms).abs() < 100 {
            ms = d + 100;
        }
    }
    for s in sides.iter_mut() {
        s.bench.age_ttls(ms);
        s.callers.age_values(&mut World::default(), &s.bench, ms);
    }
}

/// Ages past every deadline within the margin, so that no step races one.
fn settle(sides: &mut [Side; 2]) {
    while let Some(&soon) = both_deadlines(sides).iter().find(|&&d| d < MARGIN_MS) {
        age(sides, soon.max(0) + MARGIN_MS);
    }
}

fn run_step(sides: &mut [Side; 2], s: &Step<Op>) -> Result<(), String> {
    settle(sides);
    match s {
        Step::Restart => {
            for side in sides.iter() {
                side.bench.wipe();
            }
        }
        Step::Age { nth, past } => {
            let all = deadlines(&sides[1].bench);
            if !all.is_empty() {
                let d = all[nth % all.len()];
                age(sides, if *past { d + MARGIN_MS } else { d - MARGIN_MS });
            }
        }
        Step::Op(op) => {
            let mut replies = Vec::new();
            for side in sides.iter_mut() {
                let call = side.callers.call(&side.scripts, op);
                replies.push(side.bench.eval(&call.lua, &call.keys, &call.args));
            }
            if !same_reply(&replies[0], &replies[1]) {
                return Err(format!(
                    "replies: before {:?}, now {:?}",
                    replies[0], replies[1]
                ));
            }
            let heard: Vec<_> = sides.iter().map(|s| s.bench.heard()).collect();
            let same_messages = heard[0].len() == heard[1].len()
                && heard[0]
                    .iter()
                    .zip(&heard[1])
                    .all(|(a, b)| a.0 == b.0 && same_text(&a.1, &b.1));
            if !same_messages {
                return Err(format!(
                    "messages: before {:?}, now {:?}",
                    heard[0], heard[1]
                ));
            }
            for (side, reply) in sides.iter_mut().zip(&replies) {
                side.callers.replied(op, reply);
            }
        }
    }
    let keys: Vec<_> = sides.iter().map(|s| s.bench.snapshot()).collect();
    let names = |k: &BTreeMap<String, Actual>| k.keys().cloned().collect::<Vec<_>>();
    if names(&keys[0]) != names(&keys[1])
        || keys[0]
            .iter()
            .zip(&keys[1])
            .any(|((_, a), (_, b))| !same_key(a, b))
    {
        return Err(format!("keys: before {:#?}\nnow {:#?}", keys[0], keys[1]));
    }
    // The holder a caller's client would know of, for the next release by the holder.
    for (side, k) in sides.iter_mut().zip(&keys) {
        let fields = match k.get(LOCK) {
            Some(Actual {
                data: Stored::Hash(h),
                ..
            }) => h.keys().cloned().collect(),
            _ => Vec::new(),
        };
        side.callers.saw_holds(&fields);
    }
    Ok(())
}

fn step() -> impl Strategy<Value = Step<Op>> {
    prop_oneof![
        12 => FairLock::op().prop_map(Step::Op),
        3 => (0usize..4, any::<bool>()).prop_map(|(nth, past)| Step::Age { nth, past }),
        1 => Just(Step::Restart),
    ]
}

#[test]
fn the_fair_scripts_do_what_their_earlier_version_did() {
    let config = Config {
        cases: crate::run::cases(64),
        max_shrink_iters: 500,
        failure_persistence: None,
        ..Config::default()
    };
    let mut sides = [
        Side {
            bench: Bench::start(),
            scripts: before(),
            callers: FairLock::default(),
        },
        Side {
            bench: Bench::start(),
            scripts: Scripts::default(),
            callers: FairLock::default(),
        },
    ];
    let sides = std::cell::RefCell::new(&mut sides);
    let mut runner = TestRunner::new(config);
    let result = runner.run(&proptest::collection::vec(step(), 1..40), |steps| {
        let mut sides = sides.borrow_mut();
        for side in sides.iter_mut() {
            side.bench.wipe();
            side.callers = FairLock::default();
        }
        for (i, s) in steps.iter().enumerate() {
            run_step(&mut sides, s)
                .map_err(|e| TestCaseError::fail(format!("step {i} ({s:?}): {e}")))?;
        }
        Ok(())
    });
    match result {
        Ok(()) => {}
        Err(TestError::Fail(reason, steps)) => panic!("{reason}\nthe sequence:\n{steps:#?}"),
        Err(e) => panic!("{e}"),
    }
}
