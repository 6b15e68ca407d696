//! The fair lock's scripts against their earlier versions, on two servers: the sources as they
//! were are kept as text, each script and the lib files it was built from, in
//! `fixtures/fair_before/` (before the release's handoff path was cut to fewer commands),
//! `fixtures/fair_before_join/` (before the join's), `fixtures/fair_before_rank/` (before the
//! release's `PTTL` and the join's `ZRANK` went) and `fixtures/fair_before_line/` (before the
//! line's four keys became one), each of the later sets only the files that differ from the
//! earlier ones. The same random sequences of the fair model's operations (with time passing,
//! empty restarts and keys written over) run through one version on one server and the next on
//! the other, and after every step the replies, the messages published and every key (value
//! and time to live) must be the same on both. Nothing is excused but what the clock gives each
//! server (a value seeded from it, a fencing token or a ticket, within 10 s; a time to live, a
//! heartbeat deadline or a lease read some ms apart within 250 ms) and, between two versions,
//! what `Changes` lists.
//!
//! The scripts on one line key (`relock_fair_line`, and the grant record `relock_fair_grant`)
//! keep what the four keys kept in other places, so that comparison reads each server's keys
//! as what both layouts keep (`Shared`): the lock (its hash and time to live), the fencing
//! counter, the line in order of tickets (each waiter's field, ticket, heartbeat deadline and
//! first lease), the line's time to live (the queue's, on four keys), and the token of the
//! grant that gave the holder the lock, if a handoff did. It leaves out, as the layout itself
//! changes them:
//! - the ticket sequence: one line key draws a ticket from the clock, or one past the last
//!   ticket in line, and keeps no sequence (the tickets are still compared, within the clock's
//!   bounds, and their order with them);
//! - the handoff hash's other entries (first leases kept under a field no longer in line, the
//!   last-grant pointer) and its time to live, and any grant record of a waiter that does not
//!   hold the lock now: on four keys a grant's record stayed until the hold was released, the
//!   next grant, or a script that found the field out of line; on one key the record lives
//!   the handoff's lease and a later grant replaces it, so that they differ only after that
//!   hold has ended (its lease ran out, or the lock was written over);
//! - a handed hold that was re-entered: a re-entry lengthens the lock's life, not the grant
//!   record's, so from the re-entry until that hold ends the holder's grant is left out, and
//!   an attempt under its field that the four keys answer with the grant (`{3, …}`) may be
//!   answered `ERR` (a hold without its grant record) once the handoff's lease has passed;
//! - the first lease of a waiter whose heartbeat deadline has passed (it is dead, and goes
//!   before any grant or wake-up looks past it): on four keys it lived in the handoff hash,
//!   which expired a second after the latest deadline a join or heartbeat wrote, and on one
//!   key it lives with the line. A waiter that comes back in time writes its first lease
//!   again at its next attempt if it asks for one: as a client's waiter does, each field
//!   here asks for a handoff at every attempt or at none (the model test draws that anew at
//!   each attempt).
//!
//! One step is not sent to either server: a release under a field that waits in line with a
//! first lease and holds nothing (no client sends one: a field waits until it is granted the
//! lock, and a hold's release names the field it was granted under). On four keys the first
//! lease and a grant's token record shared the field's entry in the handoff hash, so that
//! release dropped the waiter's first lease with the record it looked for; on one key the
//! first lease is the waiter's own member of the line, and stays.
//! Every key on each server must still be one of its layout's, and every member of the line
//! key a ticket, or the deadline or first lease of a field with a ticket, scored in its range.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

use crate::bench::{Actual, Bench, Reply, Stored};
use crate::fair_lock::{
    age_deadlines, FairLock, Layout, Op, ALIVE, GRANT, HANDOFF, LINE, QUEUE, SEQ,
};
use crate::run::{Model, Scripts, Step, MARGIN_MS};

const LOCK: &str = "{fl}";
const COUNTER: &str = "redisson_lock_token:{fl}";

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

/// The fair scripts before the line's four keys became one (after the rank was cut):
/// `fixtures/fair_before_line/` holds the files that changed with the rank's cut, the others
/// are as in the earlier sets.
fn before_line() -> Scripts {
    fair_set!(
        mint: "fair_before/lib/mint.lua",
        shape: "fair_before_rank/lib/shape.lua",
        queue: "fair_before_line/lib/queue.lua",
        handoff: "fair_before_rank/lib/handoff.lua",
        release_lib: "fair_before/lib/release.lua",
        acquire: "fair_before_line/fair_acquire.lua",
        release: ["fair_before_line/fair_release.lua"],
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
    /// The line on one key and the grant record: the keys are compared as what both layouts
    /// keep (`Shared`), and a handed hold that was re-entered may outlive its grant record (see
    /// the file's header).
    Line,
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
    let keys: Vec<String> = [LOCK, QUEUE, ALIVE, SEQ, HANDOFF]
        .iter()
        .map(|k| k.to_string())
        .collect();
    for side in sides {
        if let Reply::Err(e) = side.bench.eval(EVICT_UNLESS_FIRST_DEAD, &keys, &[]) {
            panic!("the eviction between steps failed: {e}");
        }
    }
}

/// One server, the scripts it runs, the keys they keep the line in, and the callers' view of it
/// (their fields and tickets: a ticket seeded from this server's clock is sent back to this
/// server).
struct Side {
    bench: Bench,
    scripts: Scripts,
    layout: Layout,
    callers: FairLock,
}

/// Values taken from a server's clock: µs since 1970 (tokens, tickets).
const CLOCK_US: i64 = 1_000_000_000_000_000;

/// Values taken from a server's clock in ms (heartbeat deadlines) are at least this; the first
/// leases a waiter asks for, below it.
const CLOCK_MS: i64 = 1_000_000_000_000;

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

/// The heartbeat deadlines of a line as `layout` keeps them, from a snapshot: on four keys the
/// heartbeats' scores, on one the scores of its `alive:` members.
fn heartbeats(keys: &BTreeMap<String, Actual>, layout: Layout) -> Vec<(String, i64)> {
    let (key, prefix) = match layout {
        Layout::Four => (ALIVE, ""),
        Layout::Line => (LINE, "alive:"),
    };
    match keys.get(key) {
        Some(Actual {
            data: Stored::ZSet(z),
            ..
        }) => z
            .iter()
            .filter_map(|(m, s)| Some((m.strip_prefix(prefix)?.to_owned(), s.parse().ok()?)))
            .collect(),
        _ => Vec::new(),
    }
}

/// Every deadline on `side`'s server (TTLs, and the heartbeat deadlines kept as scores), as ms
/// from its clock's now.
fn deadlines(side: &Side) -> Vec<i64> {
    let now = side.bench.now_us() / 1000;
    let keys = side.bench.snapshot();
    let mut all: Vec<i64> = keys.values().map(|k| k.pttl).filter(|p| *p >= 0).collect();
    all.extend(
        heartbeats(&keys, side.layout)
            .into_iter()
            .map(|(_, d)| d - now)
            .filter(|d| *d > 0),
    );
    all.sort_unstable();
    all
}

fn both_deadlines(sides: &[Side; 2]) -> Vec<i64> {
    let mut all = deadlines(&sides[0]);
    all.extend(deadlines(&sides[1]));
    all.sort_unstable();
    all
}

/// Time passes `ms` on both servers, stopping clear of every deadline (as the model test's
/// runner does): TTLs, and the heartbeat deadlines wherever each layout keeps them.
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
        age_deadlines(&s.bench, s.layout, ms);
    }
}

/// Ages past every deadline within the margin, so that no step races one.
fn settle(sides: &mut [Side; 2]) {
    while let Some(&soon) = both_deadlines(sides).iter().find(|&&d| d < MARGIN_MS) {
        age(sides, soon.max(0) + MARGIN_MS);
    }
}

/// One waiter in line, as both layouts keep it.
#[derive(Debug)]
struct Waiter {
    field: String,
    ticket: String,
    /// Its heartbeat deadline (server ms); none only on keys a script would mend (the first
    /// waiter without one goes when next looked for).
    deadline: Option<String>,
    /// Whether that deadline has passed (it is dead, and goes when next looked for).
    dead: bool,
    /// The first lease it asked for, if any.
    first_lease: Option<String>,
}

/// What both layouts keep (see the file's header), read from one server's keys.
#[derive(Debug)]
struct Shared {
    lock: Option<Actual>,
    counter: Option<Actual>,
    /// By ticket, then by field (ZRANGE's order).
    line: Vec<Waiter>,
    /// The line's PTTL (the queue's, on four keys); None without a line.
    line_pttl: Option<i64>,
    /// The holder's field and the token of the grant that gave it the lock, if a handoff did.
    grant: Option<(String, String)>,
}

fn zset_of<'a>(
    keys: &'a BTreeMap<String, Actual>,
    key: &str,
) -> Option<&'a BTreeMap<String, String>> {
    match keys.get(key) {
        Some(Actual {
            data: Stored::ZSet(z),
            ..
        }) => Some(z),
        _ => None,
    }
}

fn score(s: &str) -> i64 {
    s.parse()
        .unwrap_or_else(|_| panic!("a score that is not an integer: {s}"))
}

/// The fields holding the lock (none when it is missing or not a hash).
fn holders(keys: &BTreeMap<String, Actual>) -> Vec<String> {
    match keys.get(LOCK) {
        Some(Actual {
            data: Stored::Hash(h),
            ..
        }) => h.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// `keys` as what both layouts keep; `Err` for a key the layout does not have, or a line key
/// whose members do not make up waiters.
fn shared(keys: &BTreeMap<String, Actual>, layout: Layout, now_ms: i64) -> Result<Shared, String> {
    let dead = |deadline: &Option<String>| deadline.as_deref().is_some_and(|d| score(d) <= now_ms);
    let allowed: &[&str] = match layout {
        Layout::Four => &[LOCK, COUNTER, QUEUE, ALIVE, SEQ, HANDOFF],
        Layout::Line => &[LOCK, COUNTER, LINE, GRANT],
    };
    if let Some(k) = keys.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!("{k}: not a key of the {layout:?} layout"));
    }
    let (line, line_pttl, grant) = match layout {
        Layout::Four => {
            let queue = zset_of(keys, QUEUE);
            let deadlines: BTreeMap<String, i64> = heartbeats(keys, layout).into_iter().collect();
            let handoff = match keys.get(HANDOFF) {
                Some(Actual {
                    data: Stored::Hash(h),
                    ..
                }) => h.clone(),
                _ => BTreeMap::new(),
            };
            let mut tickets: Vec<(i64, String, String)> = queue
                .into_iter()
                .flatten()
                .map(|(f, t)| (score(t), f.clone(), t.clone()))
                .collect();
            tickets.sort();
            let line = tickets
                .into_iter()
                .map(|(_, field, ticket)| {
                    let deadline = deadlines.get(&field).map(|d| d.to_string());
                    Waiter {
                        dead: dead(&deadline),
                        deadline,
                        // A token record (at least 10^15) under a field is no first lease.
                        first_lease: handoff.get(&field).filter(|v| score(v) < CLOCK_US).cloned(),
                        field,
                        ticket,
                    }
                })
                .collect();
            let grant = holders(keys).into_iter().find_map(|f| {
                let token = handoff.get(&f).filter(|v| score(v) >= CLOCK_US)?.clone();
                Some((f, token))
            });
            (line, keys.get(QUEUE).map(|k| k.pttl), grant)
        }
        Layout::Line => {
            let members = zset_of(keys, LINE).cloned().unwrap_or_default();
            let mut tickets = Vec::new();
            for (m, s) in &members {
                let (owner, range) = if let Some(owner) = m.strip_prefix("alive:") {
                    (owner, CLOCK_MS..CLOCK_US)
                } else if let Some(owner) = m.strip_prefix("lease:") {
                    (owner, 1..CLOCK_MS)
                } else {
                    tickets.push((score(s), m.clone(), s.clone()));
                    (m.as_str(), CLOCK_US..i64::MAX)
                };
                if !range.contains(&score(s)) {
                    return Err(format!("{LINE}: {m} scored {s}, out of its range"));
                }
                if !members.contains_key(owner) {
                    return Err(format!("{LINE}: {m} without a ticket of {owner}"));
                }
            }
            tickets.sort();
            let line = tickets
                .into_iter()
                .map(|(_, field, ticket)| {
                    let deadline = members.get(&format!("alive:{field}")).cloned();
                    Waiter {
                        dead: dead(&deadline),
                        deadline,
                        first_lease: members.get(&format!("lease:{field}")).cloned(),
                        field,
                        ticket,
                    }
                })
                .collect();
            let record = match keys.get(GRANT) {
                Some(Actual {
                    data: Stored::Str(s),
                    ..
                }) => s
                    .rsplit_once('=')
                    .map(|(f, t)| (f.to_owned(), t.to_owned())),
                Some(other) => return Err(format!("{GRANT}: {other:?}")),
                None => None,
            };
            let grant = record.filter(|(f, _)| holders(keys).contains(f));
            (line, keys.get(LINE).map(|k| k.pttl), grant)
        }
    };
    Ok(Shared {
        lock: keys.get(LOCK).cloned(),
        counter: keys.get(COUNTER).cloned(),
        line,
        line_pttl,
        grant,
    })
}

fn same_ttl(a: i64, b: i64) -> bool {
    a == b || (a >= 0 && b >= 0 && (a - b).abs() <= 250)
}

/// Whether two servers' `Shared` agree (within the clock's bounds); `re_entered`: the holder's
/// grant is left out (see the file's header).
fn same_shared(a: &Shared, b: &Shared, re_entered: bool) -> bool {
    let same_actual = |x: &Option<Actual>, y: &Option<Actual>| match (x, y) {
        (None, None) => true,
        (Some(x), Some(y)) => same_key(x, y),
        _ => false,
    };
    let same_opt = |x: &Option<String>, y: &Option<String>| match (x, y) {
        (None, None) => true,
        (Some(x), Some(y)) => same_text(x, y),
        _ => false,
    };
    same_actual(&a.lock, &b.lock)
        && same_actual(&a.counter, &b.counter)
        && a.line.len() == b.line.len()
        && a.line.iter().zip(&b.line).all(|(x, y)| {
            x.field == y.field
                && same_text(&x.ticket, &y.ticket)
                && same_opt(&x.deadline, &y.deadline)
                && x.dead == y.dead
                && (x.dead || x.first_lease == y.first_lease)
        })
        && match (a.line_pttl, b.line_pttl) {
            (None, None) => true,
            (Some(x), Some(y)) => same_ttl(x, y),
            _ => false,
        }
        && (re_entered
            || match (&a.grant, &b.grant) {
                (None, None) => true,
                (Some((fa, ta)), Some((fb, tb))) => fa == fb && same_text(ta, tb),
                _ => false,
            })
}

/// Whether `field` waits in the line on four keys with a first lease, and holds no lock.
fn waits_with_a_first_lease(keys: &BTreeMap<String, Actual>, field: &str) -> bool {
    let first_lease = match keys.get(HANDOFF) {
        Some(Actual {
            data: Stored::Hash(h),
            ..
        }) => h.get(field).is_some_and(|v| score(v) < CLOCK_US),
        _ => false,
    };
    first_lease
        && zset_of(keys, QUEUE).is_some_and(|q| q.contains_key(field))
        && !holders(keys).iter().any(|f| f == field)
}

/// What a comparison carries from step to step: the field of a handed hold that was
/// re-entered, while that hold lasts, and whether each field asks for a handoff
/// (`Changes::Line`).
#[derive(Debug, Default)]
struct Carried {
    re_entered: Option<String>,
    /// Whether each field that waited asked for a handoff (`Changes::Line`).
    asks: BTreeMap<String, bool>,
}

fn run_step(
    sides: &mut [Side; 2],
    carried: &mut Carried,
    s: &Step<Op>,
    changes: Changes,
) -> Result<(), String> {
    settle(sides);
    if changes == Changes::Join {
        evict_unless_first_dead(sides);
    }
    // The field a re-entry (by this step) was for.
    let mut re_entry = None;
    match s {
        Step::Restart => {
            for side in sides.iter() {
                side.bench.wipe();
            }
        }
        Step::Age { nth, past } => {
            let all = deadlines(&sides[1]);
            if !all.is_empty() {
                let d = all[nth % all.len()];
                age(sides, if *past { d + MARGIN_MS } else { d - MARGIN_MS });
            }
        }
        Step::Op(op) => {
            let mut calls: Vec<_> = sides
                .iter_mut()
                .map(|side| side.callers.call(&side.scripts, op))
                .collect();
            if let Op::Wait {
                lease,
                heartbeat,
                handoff,
                ..
            } = op
            {
                if changes == Changes::Line {
                    // The field asks for a handoff at every attempt, or at none.
                    let asks = *carried
                        .asks
                        .entry(calls[1].args[1].clone())
                        .or_insert(*handoff);
                    let first_lease = if asks { (*lease).min(*heartbeat) } else { 0 };
                    for call in calls.iter_mut() {
                        call.args[7] = first_lease.to_string();
                    }
                }
            }
            if changes == Changes::Line
                && matches!(op, Op::Release { .. } | Op::ReleaseHeld { .. })
                && waits_with_a_first_lease(&sides[0].bench.snapshot(), &calls[0].args[0])
            {
                // A release under a field that waits in line: see the file's header.
                return Ok(());
            }
            let mut replies = Vec::new();
            let mut fields = Vec::new();
            for (side, call) in sides.iter_mut().zip(&calls) {
                fields.push(call.args.get(1).cloned().unwrap_or_default());
                replies.push(side.bench.eval(&call.lua, &call.keys, &call.args));
            }
            if changes == Changes::Rank && matches!(op, Op::Wait { .. }) {
                replies[0] = in_line_only(&replies[0]);
            }
            // A re-entered hold's attempt, answered from the grant record on four keys, and
            // without it on one once the handoff's lease has passed: the callers go on as
            // the earlier version's reply tells them.
            let outlived = changes == Changes::Line
                && matches!(op, Op::Wait { .. })
                && carried.re_entered.as_ref() == Some(&fields[1])
                && matches!(&replies[0], Reply::Array(a) if a.first() == Some(&Reply::Int(3)))
                && matches!(&replies[1], Reply::Err(e) if e == "ERR");
            if outlived {
                replies[1] = replies[0].clone();
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
            if let (Op::Reenter { .. }, Reply::Int(_)) = (op, &replies[1]) {
                re_entry = Some(fields[1].clone());
            }
            for (side, reply) in sides.iter_mut().zip(&replies) {
                side.callers.replied(op, reply);
            }
        }
    }
    let keys: Vec<_> = sides.iter().map(|s| s.bench.snapshot()).collect();
    if carried
        .re_entered
        .as_ref()
        .is_some_and(|f| !holders(&keys[1]).contains(f))
    {
        carried.re_entered = None;
    }
    if changes == Changes::Line {
        let [before, now] = [0, 1].map(|i| {
            let now_ms = sides[i].bench.now_us() / 1000;
            shared(&keys[i], sides[i].layout, now_ms)
        });
        let (before, now) = (
            before.map_err(|e| format!("keys before: {e}"))?,
            now.map_err(|e| format!("keys now: {e}"))?,
        );
        if re_entry.is_some() && before.grant.as_ref().map(|(f, _)| f) == re_entry.as_ref() {
            carried.re_entered = re_entry;
        }
        if !same_shared(&before, &now, carried.re_entered.is_some()) {
            return Err(format!(
                "keys, as both layouts keep them: before {before:#?}\nnow {now:#?}\n\
                 all keys before {:#?}\nnow {:#?}",
                keys[0], keys[1]
            ));
        }
    } else {
        let names = |k: &BTreeMap<String, Actual>| k.keys().cloned().collect::<Vec<_>>();
        if names(&keys[0]) != names(&keys[1])
            || keys[0]
                .iter()
                .zip(&keys[1])
                .any(|((_, a), (_, b))| !same_key(a, b))
        {
            return Err(format!("keys: before {:#?}\nnow {:#?}", keys[0], keys[1]));
        }
    }
    // The holder a caller's client would know of, for the next release by the holder.
    for (side, k) in sides.iter_mut().zip(&keys) {
        side.callers.saw_holds(&holders(k));
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

/// Runs `cases` random sequences (unless `MODEL_CASES` says how many) through `earlier` (its
/// line on `layouts[0]`) on one server and `later` (on `layouts[1]`) on another.
fn compare(earlier: Scripts, later: Scripts, layouts: [Layout; 2], changes: Changes, cases: u32) {
    let config = Config {
        cases: crate::run::cases(cases),
        max_shrink_iters: 500,
        failure_persistence: None,
        ..Config::default()
    };
    let mut sides = [(earlier, layouts[0]), (later, layouts[1])].map(|(scripts, layout)| Side {
        bench: Bench::start(),
        scripts,
        layout,
        callers: FairLock::on(layout),
    });
    let sides = std::cell::RefCell::new(&mut sides);
    let mut runner = TestRunner::new(config);
    let result = runner.run(&proptest::collection::vec(step(), 1..40), |steps| {
        let mut sides = sides.borrow_mut();
        for side in sides.iter_mut() {
            side.bench.wipe();
            side.callers = FairLock::on(side.layout);
        }
        let mut carried = Carried::default();
        for (i, s) in steps.iter().enumerate() {
            run_step(&mut sides, &mut carried, s, changes)
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

/// Both sides on the line's four keys.
const FOUR: [Layout; 2] = [Layout::Four, Layout::Four];

/// Sequences per run for a pair of frozen fixtures: neither side changes any more, so a
/// handful of sequences per run keeps the harness honest (`MODEL_CASES` runs more).
const FROZEN: u32 = 16;

#[test]
fn the_fair_scripts_do_what_their_earlier_version_did() {
    compare(before_release(), before_join(), FOUR, Changes::None, FROZEN);
}

#[test]
fn the_fair_scripts_do_what_they_did_before_the_join_was_cut() {
    compare(before_join(), before_rank(), FOUR, Changes::Join, FROZEN);
}

#[test]
fn the_fair_scripts_do_what_they_did_before_the_rank_was_cut() {
    compare(before_rank(), before_line(), FOUR, Changes::Rank, FROZEN);
}

#[test]
fn the_fair_scripts_do_on_one_line_key_what_they_did_on_four() {
    compare(
        before_line(),
        Scripts::default(),
        [Layout::Four, Layout::Line],
        Changes::Line,
        64,
    );
}
