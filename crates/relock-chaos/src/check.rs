//! The checkers. Each reads the merged history (and the resource's final state) and gives a
//! separate verdict: exclusion, fencing, liveness. Leaks are counted by the harness and only
//! judged here. Everything is a pure function of its inputs, so the unit tests below feed
//! hand-made histories and show that every verdict can fail.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::history::{Event, Nanos, Op};
use crate::resource::{Final, Lives};

const MS: Nanos = 1_000_000;

/// A fault as the checkers see it: when it started and healed, and whether exclusion must hold
/// through it (a clock jump or a server restarted empty may break it; fencing must still hold).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Window {
    pub nemesis: String,
    pub start: Nanos,
    pub heal: Nanos,
    pub exclusion_required: bool,
    /// When the fault could make the servers forget or expire holds: the kill, the clock
    /// jump, the failover ([start, heal] when it is not known more precisely; also when read
    /// from a run that did not record it).
    #[serde(default)]
    pub damage: (Nanos, Nanos),
}

/// What the checkers need besides the history.
#[derive(Debug, Clone)]
pub struct Params {
    pub lease: Nanos,
    /// A free lock with a parked waiter outside any fault must be taken within this.
    pub prompt_wake: Nanos,
    pub end: Nanos,
    /// How many holds of one name may overlap: 1 for the locks, 2 for the sem kind's
    /// semaphore (its permits). Read holds of a read-write lock do not count against reads.
    pub capacity: usize,
    /// Whether holds carry fencing tokens and write the fenced resource (not the sem kind's):
    /// otherwise the fencing checks do not apply.
    pub fenced: bool,
    /// Whether the resource is the guarded counter on the lock's server: its refusals are the
    /// clients' refused reads and writes (the lock refused them; nothing was counted there).
    pub guarded: bool,
    /// The median handoff to a waiting client, away from faults, must stay under this: a round
    /// trip or two where a release wakes a waiter (`MEDIAN_HANDOFF`), a polling interval
    /// where waiters poll by design (`Kind::median_handoff`).
    pub median_handoff: Nanos,
    /// A rate limiter's (permits, interval): its grants are judged by the rate checker
    /// (`rate::check`, reported as exclusion) instead of holds by exclusion.
    pub rate: Option<(u64, Nanos)>,
}

/// One hold, as its client believed it: from the acquire's return to the earliest of the
/// release's invocation, the guard's `valid_until` and `lost()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    pub client: u32,
    pub name: String,
    pub token: u64,
    pub start: Nanos,
    pub end: Nanos,
    /// When the release returned Ok (the lock was free from then on, unless someone else held).
    pub released: Option<Nanos>,
    /// A read-write lock's read hold: shared with other read holds, never with a write hold.
    pub read: bool,
}

/// The holds in `events` (merged, in time order).
pub fn holds(events: &[Event]) -> Vec<Hold> {
    // Per client, the hold in progress (a client runs one cycle at a time) and when its
    // `lost()` fired.
    let mut open: HashMap<u32, (Hold, Nanos)> = HashMap::new();
    let mut out = Vec::new();
    let close = |(mut h, lost): (Hold, Nanos)| {
        h.end = h.end.min(lost);
        h
    };
    for e in events {
        match &e.op {
            Op::Acquired {
                token,
                valid_until,
                read,
            } => {
                let hold = Hold {
                    client: e.c,
                    name: e.n.clone(),
                    token: *token,
                    start: e.t,
                    end: *valid_until,
                    released: None,
                    read: *read,
                };
                if let Some(h) = open.insert(e.c, (hold, Nanos::MAX)) {
                    out.push(close(h));
                }
            }
            Op::Lost { .. } => {
                if let Some((_, lost)) = open.get_mut(&e.c) {
                    *lost = (*lost).min(e.t);
                }
            }
            Op::Release { valid_until, .. } => {
                if let Some((h, _)) = open.get_mut(&e.c) {
                    // Renewals moved valid_until since the acquire: the release's is current.
                    h.end = e.t.min(*valid_until);
                }
            }
            Op::Released { .. } => {
                if let Some((mut h, lost)) = open.remove(&e.c) {
                    // Ended by the time its release returned, even if the invocation's
                    // record is missing.
                    h.end = h.end.min(e.t);
                    h.released = Some(e.t);
                    out.push(close((h, lost)));
                }
            }
            Op::ReleaseFailed { .. } => {
                if let Some(h) = open.remove(&e.c) {
                    out.push(close(h));
                }
            }
            // A job's kept lock: the occurrence is taken until `until`, so the run's hold
            // lasts until then, and another client's run starting before then overlaps it as
            // a second holder would.
            Op::Kept { token, until } => {
                if let Some(h) = out
                    .iter_mut()
                    .rev()
                    .find(|h| h.client == e.c && h.token == *token && h.name == e.n)
                {
                    h.end = h.end.max(*until);
                }
            }
            _ => {}
        }
    }
    out.extend(open.into_values().map(close));
    out.sort_by_key(|h| (h.start, h.client));
    out
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Verdict {
    pub ok: bool,
    /// Violations that fail the verdict.
    pub violations: u64,
    /// Violations inside faults that may cause them (reported, not required).
    pub excused: u64,
    /// The first few, described.
    pub examples: Vec<String>,
}

impl Verdict {
    pub(crate) fn violation(&mut self, what: String) {
        self.violations += 1;
        if self.examples.len() < 5 {
            self.examples.push(what);
        }
    }
    pub(crate) fn finish(mut self) -> Self {
        self.ok = self.violations == 0;
        self
    }
}

/// The nemesis that may explain an overlap of `earlier` by `later`: one that cannot guarantee
/// exclusion, whose damage (a kill, a clock jump, a failover) came after `earlier` was
/// granted (50 ms of slack: a grant is recorded after it happened) and before `later` was,
/// with `later` granted no later than a lease after the heal. Two grants both made after the
/// damage are never excused.
fn excusing<'a>(
    windows: &'a [Window],
    earlier: &Hold,
    later: &Hold,
    lease: Nanos,
) -> Option<&'a Window> {
    windows.iter().find(|w| {
        !w.exclusion_required
            && earlier.start <= w.damage.1 + 50 * MS
            && later.start >= w.damage.0
            && later.start <= w.heal + lease + 1_000 * MS
    })
}

/// No more than `p.capacity` holds of one name overlap (one for a lock, the permits for a
/// semaphore); read holds (of a read-write lock) share with each other without limit.
pub fn exclusion(holds: &[Hold], windows: &[Window], p: &Params) -> Verdict {
    let mut v = Verdict::default();
    let cap = p.capacity.max(1);
    let mut by_name: BTreeMap<&str, Vec<&Hold>> = BTreeMap::new();
    for h in holds.iter().filter(|h| h.start < h.end) {
        by_name.entry(&h.name).or_default().push(h);
    }
    for hs in by_name.values() {
        // Every hold still running when `h` was granted, not only the longest: an excused
        // overlap with one must not hide a real one with another.
        let mut open: Vec<&Hold> = Vec::new();
        for h in hs {
            open.retain(|o| o.end > h.start);
            // The holds `h` may not share with: `capacity` of them at once leave no room.
            let conflicting: Vec<&Hold> = open
                .iter()
                .copied()
                .filter(|o| !(o.read && h.read))
                .collect();
            if conflicting.len() >= cap {
                let mut unexcused = 0;
                for prev in &conflicting {
                    let what = format!(
                        "{}: client {} (token {}) acquired at {} while client {} (token {}) held until {} ({} ms overlap{})",
                        h.name, h.client, h.token, h.start, prev.client, prev.token, prev.end,
                        (prev.end.min(h.end) - h.start) / MS,
                        if cap > 1 { format!("; {} holds at once, capacity {cap}", conflicting.len() + 1) } else { String::new() }
                    );
                    match excusing(windows, prev, h, p.lease) {
                        Some(w) => {
                            v.excused += 1;
                            if v.examples.len() < 5 {
                                v.examples.push(format!("excused by {}: {what}", w.nemesis));
                            }
                        }
                        // With room for `cap` holds, the first `cap - 1` others are allowed.
                        None => {
                            unexcused += 1;
                            if unexcused >= cap {
                                v.violation(what);
                            }
                        }
                    }
                }
            }
            open.push(h);
        }
    }
    v.finish()
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Fencing {
    pub verdict: Verdict,
    /// Writes (and reads) the resource refused because a newer token had been seen.
    pub stale_rejected: i64,
    /// Writes the resource accepted with a token lower than one it had accepted before.
    pub stale_accepted: u64,
    /// Accepted writes whose value was not the previous value + 1 (a lost update).
    pub lost_updates: u64,
    /// Successive grants of one name whose token did not increase.
    pub token_regressions: u64,
    pub accepted_writes: i64,
}

/// The resource never accepted a stale token, lost no update, and tokens rose grant by grant.
/// `finals` is `None` mid-run (the resource is read only at the end): then only token order
/// is judged.
///
/// Each name's resource may have had several lives (a guarded counter's server restarted
/// empty): the value starts again from 0 in each, while tokens must keep rising across them
/// (a new server's tokens start above the old one's, and a hold from before the restart can
/// write nothing after it). `guarded`: refusals are counted from the clients' refused reads
/// and writes.
pub fn fencing(
    holds: &[Hold],
    finals: Option<&BTreeMap<String, Lives>>,
    events: &[Event],
    guarded: bool,
) -> Fencing {
    let mut f = Fencing::default();
    let empty = BTreeMap::new();
    let judge_resource = finals.is_some();
    let finals = finals.unwrap_or(&empty);
    if guarded && judge_resource {
        f.stale_rejected += events
            .iter()
            .filter(|e| {
                matches!(
                    e.op,
                    Op::Write {
                        accepted: false,
                        ..
                    } | Op::Read { value: None, .. }
                )
            })
            .count() as i64;
    }
    for (name, lives) in finals {
        let mut max = 0u64;
        for (life, fin) in lives.iter().enumerate() {
            fencing_life(&mut f, name, life, fin, &mut max);
        }
    }
    // Every write a client saw accepted is in the log.
    let logged: std::collections::HashSet<(&str, u64, i64, u32)> = finals
        .iter()
        .flat_map(|(n, lives)| {
            lives.iter().flat_map(move |fin| {
                fin.log
                    .iter()
                    .map(move |(t, v, c)| (n.as_str(), *t, *v, *c))
            })
        })
        .collect();
    fencing_tail(f, holds, events, judge_resource, &logged)
}

/// One life of one name's resource: tokens above `max` (carried from life to life), values
/// rising by one from 0, the final state agreeing with the log.
fn fencing_life(f: &mut Fencing, name: &str, life: usize, fin: &Final, max: &mut u64) {
    let name = if life == 0 {
        name.to_owned()
    } else {
        format!("{name} (after restart {life})")
    };
    let name = name.as_str();
    f.stale_rejected += fin.rejected;
    f.accepted_writes += fin.accepted;
    let mut prev = 0i64;
    for (i, (token, value, client)) in fin.log.iter().enumerate() {
        if *token < *max {
            f.stale_accepted += 1;
            f.verdict.violation(format!(
                "{name}: write #{i} by client {client} accepted with token {token} after token {max}"
            ));
        }
        *max = (*max).max(*token);
        if *value != prev + 1 {
            f.lost_updates += 1;
            f.verdict.violation(format!(
                "{name}: write #{i} by client {client} (token {token}) wrote {value} after {prev}: an update was lost"
            ));
        }
        prev = *value;
    }
    if fin.value != prev || fin.accepted != fin.log.len() as i64 {
        f.verdict.violation(format!(
            "{name}: final value {} and {} accepted writes disagree with the log ({} entries, last {prev})",
            fin.value,
            fin.accepted,
            fin.log.len()
        ));
    }
}

/// The checks of the clients' accepted writes against the logs, and of token order.
fn fencing_tail(
    mut f: Fencing,
    holds: &[Hold],
    events: &[Event],
    judge_resource: bool,
    logged: &std::collections::HashSet<(&str, u64, i64, u32)>,
) -> Fencing {
    for e in events.iter().filter(|_| judge_resource) {
        if let Op::Write {
            token,
            value,
            accepted: true,
        } = e.op
        {
            if !logged.contains(&(e.n.as_str(), token, value, e.c)) {
                f.verdict.violation(format!(
                    "{}: client {}'s accepted write of {value} (token {token}) is not in the resource's log",
                    e.n, e.c
                ));
            }
        }
    }
    // Holds in the order their grants were received. When two overlap (both held at once:
    // a forward clock jump or a failover that lost a grant, judged by the exclusion check),
    // that order says nothing of the order the server granted them in: the one granted first
    // may be received last, and its smaller token is then right (the resource rejects its
    // writes). Tokens must rise from one hold to the next that did not overlap it. Read holds
    // (of a read-write lock) are granted side by side: the server's order of two of them is
    // not the order their grants were received in, overlapping or not, so two read holds are
    // not compared; a write hold is compared with every hold before it and after it.
    let mut last: HashMap<&str, &Hold> = HashMap::new();
    for h in holds.iter().filter(|h| h.start < h.end) {
        if let Some(prev) = last.get(h.name.as_str()) {
            if h.token <= prev.token {
                if h.start < prev.end || (h.read && prev.read) {
                    continue; // overlapping or both reads: keep the larger token to beat
                }
                f.token_regressions += 1;
                f.verdict.violation(format!(
                    "{}: client {} got token {} after client {} got token {}",
                    h.name, h.client, h.token, prev.client, prev.token
                ));
            }
        }
        last.insert(&h.name, h);
    }
    f.verdict = std::mem::take(&mut f.verdict).finish();
    f
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Liveness {
    pub verdict: Verdict,
    /// Per fault: from its heal to the first acquisition of each name (the slowest name), ms.
    pub recoveries_ms: Vec<(String, Option<i64>)>,
    pub longest_recovery_ms: i64,
    /// The longest a free lock waited for a parked waiter outside faults, ms.
    pub longest_free_with_waiter_ms: i64,
    /// The median time a free lock waited for a waiting client, away from faults, µs.
    pub median_handoff_us: i64,
    /// Releases judged by the strict wake-up bound (no fault near): if none, the schedule left
    /// no fault-free time and the rule could not have fired.
    pub strict_releases: u64,
}

/// After each fault heals every name is acquired within lease + 1 s, and no waiter stays
/// parked while its lock is free: for longer than lease + 1 s during a fault, and longer than
/// `prompt_wake` outside one (a release must wake a waiter at once).
pub fn liveness(events: &[Event], holds: &[Hold], windows: &[Window], p: &Params) -> Liveness {
    let mut l = Liveness::default();
    let bound = p.lease + 1_000 * MS;
    let mut acquired: BTreeMap<&str, Vec<Nanos>> = BTreeMap::new();
    let mut names: Vec<&str> = Vec::new();
    for e in events {
        if matches!(e.op, Op::Acquire) && !names.contains(&e.n.as_str()) {
            names.push(&e.n);
        }
        // A rate limiter's grant is its acquisition.
        if matches!(e.op, Op::Acquired { .. } | Op::Granted { .. }) {
            acquired.entry(&e.n).or_default().push(e.t);
        }
    }
    for w in windows {
        let mut slowest: Option<i64> = Some(0);
        for name in &names {
            let first = first_after(acquired.get(name), w.heal);
            match first {
                Some(t) => {
                    let ms = (t - w.heal) / MS;
                    slowest = slowest.map(|s| s.max(ms));
                    if t - w.heal > bound {
                        l.verdict.violation(format!(
                            "{name}: first acquisition {ms} ms after {} healed (bound {} ms)",
                            w.nemesis,
                            bound / MS
                        ));
                    }
                }
                None if p.end - w.heal > bound => {
                    slowest = None;
                    l.verdict.violation(format!(
                        "{name}: never acquired in the {} ms after {} healed",
                        (p.end - w.heal) / MS,
                        w.nemesis
                    ));
                }
                None => {}
            }
        }
        if let Some(s) = slowest {
            l.longest_recovery_ms = l.longest_recovery_ms.max(s);
        }
        l.recoveries_ms.push((w.nemesis.clone(), slowest));
    }
    // Free intervals: from a release's reply to the next acquisition of the name. The strict
    // bound applies unless a fault touches [t, t + prompt_wake], or t is within 500 ms of a
    // heal (reconnections): a fault that begins just after a release (its wake-up message
    // lost, say) gets the fault bound. The healthy stretches between faults are longer than
    // that, so most releases are judged strictly (`strict_releases` says how many).
    let settle = 500 * MS;
    let in_fault = |t: Nanos| {
        windows
            .iter()
            .any(|w| t + p.prompt_wake >= w.start && t <= w.heal + settle)
    };
    // From `t`, how long a free lock may wait: the strict bound, stretched while a fault that
    // touches `t` lasts (a lock on a killed or paused server cannot be taken at all), and for
    // one lease after its heal (a grant whose reply was lost can hold the lock that long: the
    // documented orphan); then the strict bound again.
    let limit_from = |t: Nanos| {
        let fault_end = windows
            .iter()
            .filter(|w| t + p.prompt_wake >= w.start && t <= w.heal + settle)
            .map(|w| w.heal + p.lease)
            .max();
        match fault_end {
            Some(end) => (end - t).max(0) + p.prompt_wake,
            None => p.prompt_wake,
        }
    };
    let first_heal = windows.iter().map(|w| w.heal).min();
    let waits = acquire_intervals(events, p.end);
    // How long a free lock waited for a waiting client, away from faults.
    let mut handoffs: Vec<Nanos> = Vec::new();
    // Per name, how many holds run at each time (a step function: the times a hold starts
    // or ends, and the count from then on): "are all the permits (the lock) still held by
    // others at t" is then a binary search (a history has hundreds of thousands of holds).
    let mut steps: HashMap<&str, Vec<(Nanos, i64)>> = HashMap::new();
    for o in holds.iter().filter(|o| o.start < o.end) {
        let s = steps.entry(o.name.as_str()).or_default();
        s.push((o.start, 1));
        s.push((o.end, -1));
    }
    let counts: HashMap<&str, (Vec<Nanos>, Vec<i64>)> = steps
        .into_iter()
        .map(|(name, mut s)| {
            s.sort_unstable();
            let mut n = 0;
            let (times, counts) = s
                .into_iter()
                .map(|(t, d)| {
                    n += d;
                    (t, n)
                })
                .unzip();
            (name, (times, counts))
        })
        .collect();
    let capacity = p.capacity.max(1) as i64;
    let held_at = |name: &str, t: Nanos| {
        counts.get(name).is_some_and(|(times, counts)| {
            let k = times.partition_point(|s| *s <= t);
            k > 0 && counts[k - 1] >= capacity
        })
    };
    for h in holds {
        let Some(free) = h.released else { continue };
        // The releasing hold itself ended when its release was sent, before `free`. A
        // semaphore is free while fewer holds than its permits run.
        if held_at(&h.name, free) {
            continue;
        }
        // Only releases after the first fault count: the fault-free start alone must not
        // make the rule look exercised.
        if !in_fault(free) && first_heal.is_none_or(|fh| free > fh) {
            l.strict_releases += 1;
        }
        let next = first_after(acquired.get(h.name.as_str()), free).unwrap_or(p.end);
        // Everyone who waited while it was free, each from when it was both free and asked
        // for (a waiter that arrives after the release counts too). A client's acquires of a
        // name follow each other, so those overlapping [free, next) are the last ones that
        // began before `next`.
        let clients = waits.range((h.name.as_str(), 0)..=(h.name.as_str(), u32::MAX));
        for ((_, c), ws) in clients {
            let overlapping = ws[..ws.partition_point(|(a, _)| *a < next)]
                .iter()
                .rev()
                .take_while(|(_, r)| *r > free);
            for (a, r) in overlapping {
                let since = free.max(*a);
                let limit = limit_from(since);
                if !in_fault(since) && *r >= next {
                    l.longest_free_with_waiter_ms =
                        l.longest_free_with_waiter_ms.max((next - since) / MS);
                    handoffs.push(next - since);
                }
                if next - since > limit && *r > since + limit {
                    l.verdict.violation(format!(
                        "{}: free for {} ms from {since} while client {c} waited (bound {} ms)",
                        h.name,
                        (next - since) / MS,
                        limit / MS
                    ));
                }
            }
        }
    }
    // A release must wake a waiter, not leave it to find out by polling: the typical handoff
    // (the median) is a round trip or two; a waiter that polls (a lost wake-up papered over
    // by a re-check) makes it the polling interval.
    if handoffs.len() >= MIN_HANDOFFS {
        handoffs.sort_unstable();
        let median = handoffs[handoffs.len() / 2];
        l.median_handoff_us = median / 1_000;
        if median > p.median_handoff {
            l.verdict.violation(format!(
                "waiters are not woken by releases: the median handoff to a waiting client, away from faults, is {} ms over {} handoffs (bound {} ms)",
                median / MS,
                handoffs.len(),
                p.median_handoff / MS
            ));
        }
    }
    l.verdict = std::mem::take(&mut l.verdict).finish();
    l
}

/// Handoffs needed before their median is judged.
const MIN_HANDOFFS: usize = 20;
/// The median handoff to a waiting client that a release wakes must stay under this (it is
/// about a millisecond).
#[cfg(test)]
const MEDIAN_HANDOFF: Nanos = 20 * MS;

/// The first time in `ts` (sorted) after `t`.
fn first_after(ts: Option<&Vec<Nanos>>, t: Nanos) -> Option<Nanos> {
    let ts = ts?;
    ts.get(ts.partition_point(|x| *x <= t)).copied()
}

/// Per (name, client), every acquire as (invoked, returned or `end`), in order.
fn acquire_intervals(events: &[Event], end: Nanos) -> BTreeMap<(&str, u32), Vec<(Nanos, Nanos)>> {
    let mut out: BTreeMap<(&str, u32), Vec<(Nanos, Nanos)>> = BTreeMap::new();
    let mut pending: HashMap<(&str, u32), Nanos> = HashMap::new();
    for e in events {
        let key = (e.n.as_str(), e.c);
        match e.op {
            Op::Acquire => {
                pending.insert(key, e.t);
            }
            Op::Acquired { .. } | Op::AcquireFailed { .. } => {
                if let Some(a) = pending.remove(&key) {
                    out.entry(key).or_default().push((a, e.t));
                }
            }
            _ => {}
        }
    }
    for (key, a) in pending {
        out.entry(key).or_default().push((a, end));
    }
    out
}

/// The lock checkers' verdicts on one history.
#[derive(Debug, Clone)]
pub struct Verdicts {
    pub holds: usize,
    pub exclusion: Verdict,
    pub fencing: Fencing,
    pub liveness: Liveness,
}

/// Runs exclusion, fencing and liveness on `events` (merged); `finals` as for [`fencing`].
pub fn all(
    events: &[Event],
    windows: &[Window],
    finals: Option<&BTreeMap<String, Lives>>,
    p: &Params,
) -> Verdicts {
    let holds = holds(events);
    Verdicts {
        holds: holds.len(),
        exclusion: match p.rate {
            Some((permits, interval)) => crate::rate::check(events, windows, permits, interval),
            None => exclusion(&holds, windows, p),
        },
        fencing: if p.fenced {
            fencing(&holds, finals, events, p.guarded)
        } else {
            Fencing {
                verdict: Verdict::default().finish(),
                ..Fencing::default()
            }
        },
        liveness: liveness(events, &holds, windows, p),
    }
}

/// What the harness found left behind after the run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Leaks {
    /// Lock keys (and fair queues) still on the lock servers. Fencing counters, which outlive
    /// their lock by design and expire, are not counted.
    pub keys: Vec<String>,
    /// Channels with subscribers on the lock servers.
    pub channels: Vec<String>,
    /// Client processes that did not exit by themselves after SIGTERM.
    pub processes: Vec<u32>,
    /// The sem kind's conservation: per semaphore, the permits available once every client
    /// stopped (`GET` of its key; `None`: the key is gone) and the number it was set to. They
    /// must be equal: a permit taken and never given back, or given back twice, is a leak.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub permits: Vec<(String, Option<i64>, i64)>,
    /// Panics in the client processes (a line of each client log that reports one): a task
    /// of relock died, or a mutant no longer fits the script it breaks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub panics: Vec<String>,
}

impl Leaks {
    pub fn verdict(&self) -> Verdict {
        let mut v = Verdict::default();
        for k in &self.keys {
            v.violation(format!("key left behind: {k}"));
        }
        for c in &self.channels {
            v.violation(format!("subscription left behind: {c}"));
        }
        for p in &self.processes {
            v.violation(format!("client process {p} did not exit"));
        }
        for p in &self.panics {
            v.violation(format!("a client panicked: {p}"));
        }
        for (name, available, expected) in &self.permits {
            if *available != Some(*expected) {
                v.violation(format!(
                    "semaphore {name}: {} permits available at the end, not {expected} (not conserved)",
                    available.map_or("no key: 0".to_owned(), |a| a.to_string())
                ));
            }
        }
        v.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(t: i64, c: u32, n: &str, op: Op) -> Event {
        Event {
            t: t * MS,
            c,
            n: n.into(),
            op,
        }
    }

    /// A clean hold: acquire at `a`, release at `r` (ms), valid until `a + 2000`.
    fn hold(c: u32, n: &str, token: u64, a: i64, r: i64) -> Vec<Event> {
        vec![
            ev(a - 1, c, n, Op::Acquire),
            ev(
                a,
                c,
                n,
                Op::Acquired {
                    token,
                    valid_until: (a + 2000) * MS,
                    read: false,
                },
            ),
            ev(
                r,
                c,
                n,
                Op::Release {
                    token,
                    valid_until: (r + 2000) * MS,
                },
            ),
            ev(r + 1, c, n, Op::Released { token }),
        ]
    }

    fn params(end: i64) -> Params {
        Params {
            lease: 2000 * MS,
            prompt_wake: 1000 * MS,
            end: end * MS,
            capacity: 1,
            fenced: true,
            guarded: false,
            median_handoff: MEDIAN_HANDOFF,
            rate: None,
        }
    }

    fn merged(parts: Vec<Vec<Event>>) -> Vec<Event> {
        crate::history::merge(parts)
    }

    #[test]
    fn disjoint_holds_pass_and_an_overlap_fails() {
        let ok = merged(vec![hold(1, "a", 1, 10, 20), hold(2, "a", 2, 22, 30)]);
        let v = exclusion(&holds(&ok), &[], &params(100));
        assert!(v.ok, "{v:?}");
        let bad = merged(vec![hold(1, "a", 1, 10, 20), hold(2, "a", 2, 15, 30)]);
        let v = exclusion(&holds(&bad), &[], &params(100));
        assert_eq!((v.ok, v.violations), (false, 1), "{v:?}");
        // Other names never conflict.
        let other = merged(vec![hold(1, "a", 1, 10, 20), hold(2, "b", 1, 15, 30)]);
        assert!(exclusion(&holds(&other), &[], &params(100)).ok);
    }

    /// A read-write lock's read hold, otherwise as [`hold`].
    fn read_hold(c: u32, n: &str, token: u64, a: i64, r: i64) -> Vec<Event> {
        let mut h = hold(c, n, token, a, r);
        if let Op::Acquired { read, .. } = &mut h[1].op {
            *read = true;
        }
        h
    }

    #[test]
    fn read_holds_share_but_a_write_hold_is_alone() {
        // Two read holds at once: fine.
        let ok = merged(vec![
            read_hold(1, "a", 1, 10, 20),
            read_hold(2, "a", 2, 15, 30),
        ]);
        let h = holds(&ok);
        assert!(h.iter().all(|h| h.read), "{h:?}");
        let v = exclusion(&h, &[], &params(100));
        assert!(v.ok, "{v:?}");
        // A read granted while a write is held, and a write granted while a read is held.
        for bad in [
            vec![hold(1, "a", 1, 10, 20), read_hold(2, "a", 2, 15, 30)],
            vec![read_hold(1, "a", 1, 10, 20), hold(2, "a", 2, 15, 30)],
        ] {
            let v = exclusion(&holds(&merged(bad)), &[], &params(100));
            assert_eq!((v.ok, v.violations), (false, 1), "{v:?}");
        }
        // Two reads overlapping each other and a write: the write is the violation, twice.
        let bad = merged(vec![
            read_hold(1, "a", 1, 10, 40),
            read_hold(2, "a", 2, 15, 40),
            hold(3, "a", 3, 20, 30),
        ]);
        let v = exclusion(&holds(&bad), &[], &params(100));
        assert_eq!((v.ok, v.violations), (false, 2), "{v:?}");
        // An old history (no `read` field) reads as exclusive holds.
        let old = r#"{"t":1,"c":0,"n":"a","e":"acquired","token":1,"valid_until":5}"#;
        let e: Event = serde_json::from_str(old).unwrap();
        assert!(matches!(e.op, Op::Acquired { read: false, .. }), "{e:?}");
    }

    #[test]
    fn read_tokens_need_not_rise_between_reads_but_a_write_token_must() {
        // Reads received in the other order than their tokens, not overlapping (the first
        // granted was received late): not a regression.
        let h = holds(&merged(vec![
            read_hold(1, "a", 6, 10, 12),
            read_hold(2, "a", 5, 13, 14),
            hold(3, "a", 7, 20, 30),
        ]));
        let f = fencing(&h, Some(&fin(&[], 0)), &[], false);
        assert_eq!((f.verdict.ok, f.token_regressions), (true, 0), "{f:?}");
        // A write after a read must have a larger token than the read, and a read after a
        // write than the write.
        for bad in [
            vec![read_hold(1, "a", 6, 10, 12), hold(2, "a", 5, 13, 14)],
            vec![hold(1, "a", 6, 10, 12), read_hold(2, "a", 5, 13, 14)],
        ] {
            let f = fencing(&holds(&merged(bad)), Some(&fin(&[], 0)), &[], false);
            assert_eq!((f.verdict.ok, f.token_regressions), (false, 1), "{f:?}");
        }
    }

    #[test]
    fn a_hold_ends_at_lost_or_valid_until_before_its_release() {
        // Client 1's lease ran out at 1000 ms (a pause); client 2 took it at 1500 ms; client 1
        // sent its release at 3000 ms. No overlap: client 1 stopped believing at 1000 ms.
        let mut c1 = hold(1, "a", 1, 0, 3000);
        c1[1].op = Op::Acquired {
            token: 1,
            valid_until: 1000 * MS,
            read: false,
        };
        c1[2].op = Op::Release {
            token: 1,
            valid_until: 1000 * MS,
        };
        let h = holds(&merged(vec![c1.clone(), hold(2, "a", 2, 1500, 1600)]));
        assert!(exclusion(&h, &[], &params(5000)).ok);
        // lost() at 100 ms ends it too, whatever valid_until says later.
        let mut c1b = hold(1, "a", 1, 0, 3000);
        c1b.insert(2, ev(100, 1, "a", Op::Lost { token: 1 }));
        let h = holds(&merged(vec![c1b, hold(2, "a", 2, 1500, 1600)]));
        assert_eq!(h[0].end, 100 * MS);
        assert!(exclusion(&h, &[], &params(5000)).ok);
        // A renewed guard (valid_until moved to 5000 ms) that was not released before client
        // 2's grant is an overlap.
        c1[2].op = Op::Release {
            token: 1,
            valid_until: 5000 * MS,
        };
        let h = holds(&merged(vec![c1, hold(2, "a", 2, 1500, 1600)]));
        assert!(!exclusion(&h, &[], &params(5000)).ok);
    }

    #[test]
    fn an_overlap_inside_a_fault_that_may_cause_it_is_excused() {
        let bad = merged(vec![hold(1, "a", 1, 10, 20), hold(2, "a", 2, 15, 30)]);
        let w = |required| Window {
            nemesis: "clock-jump".into(),
            start: 5 * MS,
            heal: 12 * MS,
            exclusion_required: required,
            damage: (5 * MS, 12 * MS),
        };
        let v = exclusion(&holds(&bad), &[w(false)], &params(100));
        assert!(v.ok && v.excused == 1, "{v:?}");
        let v = exclusion(&holds(&bad), &[w(true)], &params(100));
        assert!(!v.ok, "{v:?}");
    }

    fn life(log: &[(u64, i64, u32)], rejected: i64) -> Final {
        Final {
            value: log.last().map_or(0, |l| l.1),
            accepted: log.len() as i64,
            rejected,
            log: log.to_vec(),
        }
    }

    fn fin(log: &[(u64, i64, u32)], rejected: i64) -> BTreeMap<String, Lives> {
        BTreeMap::from([("a".to_owned(), vec![life(log, rejected)])])
    }

    #[test]
    fn fencing_catches_stale_writes_lost_updates_and_falling_tokens() {
        let h = holds(&merged(vec![
            hold(1, "a", 1, 10, 20),
            hold(2, "a", 2, 22, 30),
        ]));
        let f = fencing(&h, Some(&fin(&[(1, 1, 1), (2, 2, 2)], 3)), &[], false);
        assert!(f.verdict.ok, "{f:?}");
        assert_eq!(f.stale_rejected, 3);
        let f = fencing(&h, Some(&fin(&[(2, 1, 2), (1, 2, 1)], 0)), &[], false);
        assert_eq!((f.verdict.ok, f.stale_accepted), (false, 1));
        let f = fencing(&h, Some(&fin(&[(1, 1, 1), (2, 1, 2)], 0)), &[], false);
        assert_eq!((f.verdict.ok, f.lost_updates), (false, 1));
        let h = holds(&merged(vec![
            hold(1, "a", 5, 10, 20),
            hold(2, "a", 5, 22, 30),
        ]));
        let f = fencing(&h, Some(&fin(&[], 0)), &[], false);
        assert_eq!((f.verdict.ok, f.token_regressions), (false, 1));
        // Two holds at once (a jumped clock expired the first): the grant received last was
        // granted first, with the smaller token. Not a regression; the one after both is
        // judged against the larger token.
        let h = holds(&merged(vec![
            hold(3, "a", 8, 10, 40),
            hold(2, "a", 7, 12, 30),
            hold(1, "a", 8, 45, 50),
        ]));
        let f = fencing(&h, Some(&fin(&[], 0)), &[], false);
        assert_eq!((f.verdict.ok, f.token_regressions), (false, 1), "{f:?}");
        let h = holds(&merged(vec![
            hold(3, "a", 8, 10, 40),
            hold(2, "a", 7, 12, 30),
            hold(1, "a", 9, 45, 50),
        ]));
        let f = fencing(&h, Some(&fin(&[], 0)), &[], false);
        assert_eq!((f.verdict.ok, f.token_regressions), (true, 0), "{f:?}");
        // An accepted write that the log does not have.
        let ack = [ev(
            15,
            1,
            "a",
            Op::Write {
                token: 1,
                value: 1,
                accepted: true,
            },
        )];
        let h = holds(&merged(vec![hold(1, "a", 1, 10, 20)]));
        assert!(!fencing(&h, Some(&fin(&[], 0)), &ack, false).verdict.ok);
        assert!(
            fencing(&h, Some(&fin(&[(1, 1, 1)], 0)), &ack, false)
                .verdict
                .ok
        );
    }

    #[test]
    fn a_restarted_guarded_counter_starts_again_but_its_tokens_must_keep_rising() {
        let h = holds(&merged(vec![
            hold(1, "a", 1, 10, 20),
            hold(2, "a", 2, 22, 30),
            hold(1, "a", 900, 40, 50),
        ]));
        let lives = |second: &[(u64, i64, u32)]| {
            BTreeMap::from([(
                "a".to_owned(),
                vec![life(&[(1, 1, 1), (2, 2, 2)], 0), life(second, 0)],
            )])
        };
        // The counter starts from 0 again after the restart: no lost update.
        let f = fencing(&h, Some(&lives(&[(900, 1, 1)])), &[], false);
        assert!(f.verdict.ok, "{f:?}");
        assert_eq!(f.accepted_writes, 3);
        // A token below the last life's is a stale write accepted, across the restart.
        let f = fencing(&h, Some(&lives(&[(900, 1, 1), (2, 2, 2)])), &[], false);
        assert_eq!((f.verdict.ok, f.stale_accepted), (false, 1), "{f:?}");
        // Within one life, the value still rises by one.
        let f = fencing(&h, Some(&lives(&[(900, 2, 1)])), &[], false);
        assert_eq!((f.verdict.ok, f.lost_updates), (false, 1), "{f:?}");
        // Guarded: refusals are the clients' refused writes and reads.
        let refused = [
            ev(
                25,
                1,
                "a",
                Op::Write {
                    token: 1,
                    value: 2,
                    accepted: false,
                },
            ),
            ev(
                26,
                1,
                "a",
                Op::Read {
                    token: 1,
                    value: None,
                },
            ),
        ];
        let f = fencing(&h, Some(&lives(&[(900, 1, 1)])), &refused, true);
        assert_eq!((f.verdict.ok, f.stale_rejected), (true, 2), "{f:?}");
    }

    #[test]
    fn liveness_catches_a_slow_recovery_and_a_waiter_parked_on_a_free_lock() {
        let w = Window {
            nemesis: "kill".into(),
            start: 0,
            heal: 100 * MS,
            exclusion_required: true,
            damage: (0, 0),
        };
        let ok = merged(vec![hold(1, "a", 1, 200, 300)]);
        let l = liveness(&ok, &holds(&ok), std::slice::from_ref(&w), &params(10_000));
        assert!(l.verdict.ok, "{l:?}");
        assert_eq!(l.longest_recovery_ms, 100);
        let slow = merged(vec![hold(1, "a", 1, 4000, 4100)]);
        let l = liveness(&slow, &holds(&slow), &[w], &params(10_000));
        assert!(!l.verdict.ok, "{l:?}");
        // Client 2 waits from 15 ms; client 1 releases at 21 ms; client 2 gets it only at 2000
        // ms, with no fault: a lost wake-up.
        let mut c2 = hold(2, "a", 2, 2000, 2100);
        c2[0].t = 15 * MS;
        let parked = merged(vec![hold(1, "a", 1, 10, 20), c2.clone()]);
        let l = liveness(&parked, &holds(&parked), &[], &params(10_000));
        assert_eq!(l.verdict.violations, 1, "{l:?}");
        // The same, with a fault that begins 2 ms after the release: the fault bound (lease
        // + 1 s) applies, and 1 980 ms is within it.
        let w = Window {
            nemesis: "proxy-drop".into(),
            start: 22 * MS,
            heal: 1000 * MS,
            exclusion_required: true,
            damage: (0, 0),
        };
        let l = liveness(
            &parked,
            &holds(&parked),
            std::slice::from_ref(&w),
            &params(10_000),
        );
        assert!(l.verdict.ok, "{l:?}");
        // Nobody waiting: a free lock is fine.
        c2[0].t = 1999 * MS;
        let idle = merged(vec![hold(1, "a", 1, 10, 20), c2]);
        assert!(
            liveness(&idle, &holds(&idle), &[], &params(10_000))
                .verdict
                .ok
        );
    }

    /// The CI schedule: a fault-free second, then per nemesis: the fault, lease + 1 s of
    /// aftermath and a fault-free second (lease 1.5 s here).
    fn ci_windows() -> Vec<Window> {
        let mut ws = Vec::new();
        let mut t = 1000;
        for (name, len) in [
            ("pause-server", 1500),
            ("client-kill", 1),
            ("script-flush", 1),
        ] {
            ws.push(Window {
                nemesis: name.into(),
                start: t * MS,
                heal: (t + len) * MS,
                exclusion_required: true,
                damage: (t * MS, (t + len) * MS),
            });
            t += len + 1500 + 1000 + 1000;
        }
        ws
    }

    fn p15(end: i64) -> Params {
        Params {
            lease: 1500 * MS,
            ..params(end)
        }
    }

    #[test]
    fn a_lost_wake_up_between_ci_faults_is_caught() {
        let ws = ci_windows();
        let (first_heal, last_start) = (ws[0].heal / MS, ws[2].start / MS);
        let (mut caught, mut tried) = (0, 0);
        for r in (first_heal..last_start).step_by(10) {
            // Client 2 waits from r - 5; the lock is free from r + 1 until r + 2400.
            let mut c2 = hold(2, "a", 2, r + 2400, r + 2410);
            c2[0].t = (r - 5) * MS;
            let h = merged(vec![hold(1, "a", 1, r - 10, r), c2]);
            let l = liveness(&h, &holds(&h), &ws, &p15(20_000));
            tried += 1;
            if !l.verdict.ok {
                caught += 1;
            }
        }
        // Most of the time between faults is judged strictly.
        assert!(caught * 2 > tried, "caught {caught} of {tried}");
    }

    #[test]
    fn a_waiter_that_asks_just_after_a_release_is_judged_too() {
        // No faults. Client 1 releases at 20 ms; client 2 asks at 25 ms; the lock stays free
        // until 6 000 ms.
        let mut c2 = hold(2, "a", 2, 6000, 6010);
        c2[0].t = 25 * MS;
        let h = merged(vec![hold(1, "a", 1, 10, 20), c2]);
        let l = liveness(&h, &holds(&h), &[], &params(10_000));
        assert_eq!(l.verdict.violations, 1, "{l:?}");
        assert_eq!(l.strict_releases, 2);
    }

    #[test]
    fn an_overlap_between_two_grants_made_after_a_restart_is_not_excused() {
        let w = Window {
            nemesis: "kill-restart".into(),
            start: 0,
            heal: 300 * MS,
            exclusion_required: false,
            damage: (100 * MS, 100 * MS),
        };
        // Both granted by the restarted server 1 s after it came back: a real double grant.
        let h = merged(vec![
            hold(1, "a", 7, 1300, 1400),
            hold(2, "a", 8, 1350, 1450),
        ]);
        let v = exclusion(&holds(&h), std::slice::from_ref(&w), &params(10_000));
        assert_eq!((v.ok, v.excused), (false, 0), "{v:?}");
        // The first granted before the restart (forgotten by it), the second after: excused.
        let h = merged(vec![hold(1, "a", 7, -100, 1400), hold(2, "a", 8, 500, 600)]);
        let v = exclusion(&holds(&h), std::slice::from_ref(&w), &params(10_000));
        assert_eq!((v.ok, v.excused), (true, 1), "{v:?}");
    }

    #[test]
    fn an_excused_overlap_does_not_hide_a_double_grant_after_the_damage() {
        let w = Window {
            nemesis: "kill-restart".into(),
            start: 0,
            heal: 300 * MS,
            exclusion_required: false,
            damage: (100 * MS, 100 * MS),
        };
        // Client 1's hold is forgotten by the restart (excused against both later grants),
        // but clients 2 and 3 were both granted after it: a double grant.
        let h = merged(vec![
            hold(1, "a", 7, -100, 1400),
            hold(2, "a", 8, 500, 1000),
            hold(3, "a", 9, 600, 700),
        ]);
        let v = exclusion(&holds(&h), std::slice::from_ref(&w), &params(10_000));
        assert_eq!((v.ok, v.violations, v.excused), (false, 1, 2), "{v:?}");
        // Two grants after a clock jump but before the window's heal: not excused either.
        let jump = Window {
            nemesis: "clock-jump".into(),
            start: 0,
            heal: 500 * MS,
            exclusion_required: false,
            damage: (10 * MS, 10 * MS),
        };
        let h = merged(vec![hold(1, "a", 7, 100, 400), hold(2, "a", 8, 200, 300)]);
        assert!(!exclusion(&holds(&h), &[jump], &params(10_000)).ok);
    }

    #[test]
    fn waiters_found_by_polling_fail_the_median_handoff() {
        // 30 handoffs, each 150 ms after the release (a poll), no fault: every one is under
        // the 1 s bound, but the median says nobody was woken.
        let mut parts = Vec::new();
        for i in 0..30 {
            let t = 1000 + i * 400;
            let mut next = hold(2, "a", 2 * i as u64 + 2, t + 160, t + 200);
            next[0].t = (t + 5) * MS;
            parts.push(hold(1, "a", 2 * i as u64 + 1, t, t + 10));
            parts.push(next);
        }
        let h = merged(parts);
        let l = liveness(&h, &holds(&h), &[], &params(20_000));
        assert_eq!(l.verdict.violations, 1, "{l:?}");
        assert!(l.median_handoff_us >= 140_000, "{l:?}");
    }

    #[test]
    fn the_fault_bound_ends_with_the_fault() {
        // Healed at 1 000 ms; the lock is free from 1 400 ms to 3 800 ms with a waiter: the
        // strict bound is back from 1 500 ms, so this is 1.3 s too long.
        let w = Window {
            nemesis: "pause-server".into(),
            start: 0,
            heal: 1000 * MS,
            exclusion_required: true,
            damage: (0, 1000 * MS),
        };
        let mut c2 = hold(2, "a", 2, 3800, 3810);
        c2[0].t = 1300 * MS;
        let h = merged(vec![hold(1, "a", 1, 1300, 1399), c2]);
        let l = liveness(&h, &holds(&h), &[w], &p15(20_000));
        assert_eq!(l.verdict.violations, 1, "{l:?}");
    }

    #[test]
    fn leaks_fail_the_verdict() {
        assert!(Leaks::default().verdict().ok);
        let l = Leaks {
            keys: vec!["a".into()],
            ..Leaks::default()
        };
        assert!(!l.verdict().ok);
    }

    /// A semaphore hold: no token, no lease (valid until the end of time), otherwise as
    /// [`hold`].
    fn sem_hold(c: u32, n: &str, a: i64, r: i64) -> Vec<Event> {
        let mut h = hold(c, n, 0, a, r);
        for e in &mut h {
            match &mut e.op {
                Op::Acquired { valid_until, .. } | Op::Release { valid_until, .. } => {
                    *valid_until = Nanos::MAX
                }
                _ => {}
            }
        }
        h
    }

    fn sem_params(end: i64) -> Params {
        Params {
            capacity: 2,
            fenced: false,
            guarded: false,
            ..params(end)
        }
    }

    #[test]
    fn a_semaphore_of_two_takes_two_holds_at_once_not_three_and_keeps_its_count() {
        // Two holds at once, then a third after one ended: fine.
        let ok = merged(vec![
            sem_hold(1, "a", 10, 30),
            sem_hold(2, "a", 15, 40),
            sem_hold(3, "a", 32, 50),
        ]);
        let h = holds(&ok);
        assert_eq!(h.len(), 3);
        let v = exclusion(&h, &[], &sem_params(100));
        assert!(v.ok, "{v:?}");
        // The same history on a lock (capacity 1): two overlaps.
        let v = exclusion(&h, &[], &params(100));
        assert_eq!((v.ok, v.violations), (false, 2), "{v:?}");
        // Three at once: one too many.
        let bad = merged(vec![
            sem_hold(1, "a", 10, 30),
            sem_hold(2, "a", 15, 40),
            sem_hold(3, "a", 20, 50),
        ]);
        let v = exclusion(&holds(&bad), &[], &sem_params(100));
        assert_eq!((v.ok, v.violations), (false, 1), "{v:?}");
        // No tokens: the fencing checks do not apply (on a lock, equal tokens regress).
        let all_ok = all(&ok, &[], None, &sem_params(100));
        assert!(all_ok.fencing.verdict.ok, "{:?}", all_ok.fencing);
        assert!(!all(&ok, &[], None, &params(100)).fencing.verdict.ok);
        // Conservation: both permits back at the end, or a violation.
        let l = Leaks {
            permits: vec![("a".into(), Some(2), 2)],
            ..Leaks::default()
        };
        assert!(l.verdict().ok, "{l:?}");
        for lost in [Some(1), Some(3), None] {
            let l = Leaks {
                permits: vec![("a".into(), Some(2), 2), ("b".into(), lost, 2)],
                ..Leaks::default()
            };
            let v = l.verdict();
            assert_eq!((v.ok, v.violations), (false, 1), "{v:?}");
        }
    }

    #[test]
    fn a_semaphore_is_free_for_a_waiter_while_a_permit_is() {
        // Client 3 waits from 12 ms; client 1 gives its permit back at 21 ms while client 2
        // holds the other one until 3000 ms; client 3 gets one only at 2500 ms: a lost
        // wake-up, although the semaphore was never wholly free.
        let mut c3 = sem_hold(3, "a", 2500, 2510);
        c3[0].t = 12 * MS;
        let h = merged(vec![
            sem_hold(1, "a", 10, 20),
            sem_hold(2, "a", 11, 3000),
            c3,
        ]);
        let l = liveness(&h, &holds(&h), &[], &sem_params(10_000));
        assert_eq!(l.verdict.violations, 1, "{l:?}");
        // On a lock, client 2's hold kept it taken: nothing to judge there.
        let l = liveness(&h, &holds(&h), &[], &params(10_000));
        assert!(l.verdict.ok, "{l:?}");
    }
}
