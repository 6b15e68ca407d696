//! The fair lock's scripts against their earlier versions, on two servers: the sources as they
//! were are kept as text, each script and the lib files it was built from, in
//! `fixtures/fair_before/` (before the release's handoff path was cut to fewer commands),
//! `fixtures/fair_before_join/` (before the join's) and `fixtures/fair_before_rank/` (before the
//! release's `PTTL` and the join's `ZRANK` went), each of the later sets only the files that
//! differ from the earlier ones. The same random sequences of the fair model's operations (with
//! time passing, empty restarts and keys written over) run through one version on one server
//! and the next on the other, and after every step the replies, the messages published and
//! every key (value and time to live) must be the same on both. Nothing is excused but what the
//! clock gives each server (a value seeded from it, a fencing token or a ticket, within 10 s; a
//! time to live, a heartbeat deadline or a lease read some ms apart within 250 ms) and, between
//! two versions, what `Changes` lists.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

use crate::bench::{Actual, Bench, Reply, Stored};
use crate::fair_lock::{FairLock, Op};
use crate::run::{Model, Scripts, Step, MARGIN_MS};
use crate::world::World;

const LOCK: &str = "{fl}";
const ALIVE: &str = "relock_fair_alive:{fl}";

/// An earlier script as it was sent: the files it was built from, the lib files it used, then
/// its own, each a path under `fixtures/`.
macro_rules! fixture {
    ($($file:literal),+ $(,)?) => {
        concat!($(include_str!(concat!("fixtures/", $file))),+)
    };
}

/// One fixture set's five fair scripts, by their names in `relock::lua`, each built as its
/// version was: the lib files it used, then its own, every file from the folder given for it.
/// The release's own lib files are listed with it: its version before the release was cut also
/// used `lib/handoff.lua`.
macro_rules! fair_set {
    (
        mint: $mint:literal, shape: $shape:literal, queue: $queue:literal,
        handoff: $handoff:literal, release_lib: $release_lib:literal,
        acquire: $acquire:literal, release: [$($release:literal),+],
        heartbeat: $heartbeat:literal, leave: $leave:literal, force_unlock: $force:literal $(,)?
    ) => {
        Scripts::default()
            .with("FAIR_ACQUIRE", fixture!($mint, $shape, $queue, $handoff, $acquire))
            .with("FAIR_RELEASE", fixture!($release_lib, $mint, $queue, $($release),+))
            .with("FAIR_HEARTBEAT", fixture!($mint, $queue, $handoff, $heartbeat))
            .with("FAIR_LEAVE", fixture!($mint, $queue, $handoff, $leave))
            .with("FAIR_FORCE_UNLOCK", fixture!($shape, $queue, $force))
    };
}

/// The fair scripts before the release's handoff path was cut.
fn before_release() -> Scripts {
    fair_set!(
        mint: "fair_before/lib/mint.lua",
        shape: "fair_before/lib/shape.lua",
        queue: "fair_before/lib/queue.lua",
        handoff: "fair_before/lib/handoff.lua",
        release_lib: "fair_before/lib/release.lua",
        acquire: "fair_before/fair_acquire.lua",
        release: ["fair_before/lib/handoff.lua", "fair_before/fair_release.lua"],
        heartbeat: "fair_before/fair_heartbeat.lua",
        leave: "fair_before/fair_leave.lua",
        force_unlock: "fair_before/fair_force_unlock.lua",
    )
}

/// The fair scripts before the join was cut (after the release was): `fixtures/fair_before_join/`
/// holds the files that changed with the release's cut, the others are as in `fair_before/`.
fn before_join() -> Scripts {
    fair_set!(
        mint: "fair_before/lib/mint.lua",
        shape: "fair_before/lib/shape.lua",
        queue: "fair_before_join/lib/queue.lua",
        handoff: "fair_before_join/lib/handoff.lua",
        release_lib: "fair_before/lib/release.lua",
        acquire: "fair_before/fair_acquire.lua",
        release: ["fair_before_join/fair_release.lua"],
        heartbeat: "fair_before/fair_heartbeat.lua",
        leave: "fair_before/fair_leave.lua",
        force_unlock: "fair_before/fair_force_unlock.lua",
    )
}

/// The fair scripts before the release's `PTTL` and the join's `ZRANK` were cut (after the
/// join was): `fixtures/fair_before_rank/` holds the files that changed with the join's cut,
/// the others are as in the earlier sets.
fn before_rank() -> Scripts {
    fair_set!(
        mint: "fair_before/lib/mint.lua",
        shape: "fair_before_rank/lib/shape.lua",
        queue: "fair_before_rank/lib/queue.lua",
        handoff: "fair_before_rank/lib/handoff.lua",
        release_lib: "fair_before/lib/release.lua",
        acquire: "fair_before_rank/fair_acquire.lua",
        release: ["fair_before_rank/fair_release.lua"],
        heartbeat: "fair_before/fair_heartbeat.lua",
        leave: "fair_before/fair_leave.lua",
        force_unlock: "fair_before/fair_force_unlock.lua",
    )
}

/// What a later version does differently from the earlier one it is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Changes {
    /// Nothing: the same replies, messages and keys.
    None,
    /// The cut join and release: dead waiters are evicted only once the first waiter is dead
    /// (by a release, or an acquire that finds the lock free), or by a heartbeat or a leave,
    /// where the earlier version evicted them on every acquire and release. So that the
    /// sequences go on from the same keys, before every step both servers evict every dead
    /// waiter except in the one state in which both versions evict them all in their next
    /// script: the lock free and its first waiter dead.
    Join,
    /// The join without `ZRANK`: a waiter in line is told so (`0` in the reply's fourth place),
    /// not its place in line (which the earlier version gave there, `0` for the first).
    Rank,
}

/// The eviction both servers get before every step under `Changes::Join` (see there).
/// KEYS: the lock, the queue, the heartbeats, the sequence, the handoff hash.
const EVICT_UNLESS_FIRST_DEAD: &str = "\
    local t = redis.call('time') \
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) \
    local dead = redis.call('zrangebyscore', KEYS[3], '-inf', now) \
    if #dead == 0 then return 0 end \
    if redis.call('exists', KEYS[1]) == 0 then \
      local first = redis.call('zrange', KEYS[2], 0, 0)[1] \
      local deadline = first and redis.call('zscore', KEYS[3], first) \
      if deadline and tonumber(deadline) <= now then return 0 end \
    end \
    for _, owner in ipairs(dead) do \
      redis.call('zrem', KEYS[2], owner) \
      redis.call('hdel', KEYS[5], owner) \
    end \
    redis.call('zremrangebyscore', KEYS[3], '-inf', now) \
    if redis.call('zcard', KEYS[2]) == 0 then redis.call('del', KEYS[3], KEYS[4]) end \
    return #dead";

fn evict_unless_first_dead(sides: &[Side; 2]) {
    let keys: Vec<String> = [
        LOCK,
        "relock_fair_queue:{fl}",
        ALIVE,
        "relock_fair_seq:{fl}",
        "relock_fair_handoff:{fl}",
    ]
    .iter()
    .map(|k| k.to_string())
    .collect();
    for side in sides {
        if let Reply::Err(e) = side.bench.eval(EVICT_UNLESS_FIRST_DEAD, &keys, &[]) {
            panic!("the eviction between steps failed: {e}");
        }
    }
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

fn run_step(sides: &mut [Side; 2], s: &Step<Op>, changes: Changes) -> Result<(), String> {
    settle(sides);
    if changes == Changes::Join {
        evict_unless_first_dead(sides);
    }
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
            if changes == Changes::Rank && matches!(op, Op::Wait { .. }) {
                replies[0] = in_line_only(&replies[0]);
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

/// An earlier join's reply as the later version gives it (`Changes::Rank`): a place in line
/// (`0` or more) becomes `0`, in line.
fn in_line_only(reply: &Reply) -> Reply {
    match reply {
        Reply::Array(a) if a.len() == 5 && a[0] == Reply::Int(0) => {
            let mut a = a.clone();
            if matches!(a[3], Reply::Int(p) if p >= 0) {
                a[3] = Reply::Int(0);
            }
            Reply::Array(a)
        }
        other => other.clone(),
    }
}

fn step() -> impl Strategy<Value = Step<Op>> {
    prop_oneof![
        12 => FairLock::op().prop_map(Step::Op),
        3 => (0usize..4, any::<bool>()).prop_map(|(nth, past)| Step::Age { nth, past }),
        1 => Just(Step::Restart),
    ]
}

/// Runs the same random sequences through `earlier` on one server and `later` on another.
fn compare(earlier: Scripts, later: Scripts, changes: Changes) {
    let config = Config {
        cases: crate::run::cases(64),
        max_shrink_iters: 500,
        failure_persistence: None,
        ..Config::default()
    };
    let mut sides = [
        Side {
            bench: Bench::start(),
            scripts: earlier,
            callers: FairLock::default(),
        },
        Side {
            bench: Bench::start(),
            scripts: later,
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
            run_step(&mut sides, s, changes)
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

#[test]
fn the_fair_scripts_do_what_their_earlier_version_did() {
    compare(before_release(), before_join(), Changes::None);
}

#[test]
fn the_fair_scripts_do_what_they_did_before_the_join_was_cut() {
    compare(before_join(), before_rank(), Changes::Join);
}

#[test]
fn the_fair_scripts_do_what_they_did_before_the_rank_was_cut() {
    compare(before_rank(), Scripts::default(), Changes::Rank);
}
