//! The read-write lock's scripts against its model (Redisson's `RReadWriteLock` layout): read
//! and write acquires (a writer may read too: a downgrade), re-entries of both sides, releases
//! in every order, the watchdog's renewals of both sides, force-unlock, readers whose timeout
//! keys expire while the hash lives on, a Java reader with a timeout key per re-entry, a Java
//! `RLock` under the same name, and keys written over by other programs.

use std::time::{Duration, Instant};

use proptest::prelude::*;

use crate::mutants::{mutant, survivors};
use crate::run::{check, Call, Clock, Expected, Model, Scripts};
use crate::shape::{clobber, ensure_lock, lease, mint, Clobber};
use crate::world::{Ttl, World, R, V};

const LOCK: &str = "rw";
/// Redisson's `suffixName` prefix of the per-hold keys of a name without a hash tag.
const PREFIX: &str = "{rw}:";
const COUNTER: &str = "redisson_lock_token:{rw}";
const CHANNEL: &str = "redisson_rwlock:{rw}";

/// A holder that stands for the one whose write hold was on the lock after the last step (or
/// was last), so that one holder's write and read holds meet (a downgrade, then the write
/// hold's release) often.
const LAST_WRITER: usize = 3;

/// How long the model waits between two scripts at least, so that deadlines set by different
/// scripts with the same lease fall on different milliseconds of the server's clock, in the
/// same order as on the model's.
const SPACING: Duration = Duration::from_millis(3);

#[derive(Debug, Clone)]
pub enum Op {
    /// A fresh read hold for holder `who` (0-2, or `LAST_WRITER`); with `downgrade`, naming
    /// the holder's write hold, as a writer reading inside its write hold's scope does.
    ReadAcquire {
        who: usize,
        lease: i64,
        counter_ttl: i64,
        downgrade: bool,
    },
    WriteAcquire {
        who: usize,
        lease: i64,
        counter_ttl: i64,
    },
    ReadReenter {
        who: usize,
        lease: i64,
    },
    WriteReenter {
        who: usize,
        lease: i64,
    },
    ReadRelease {
        who: usize,
        all: bool,
    },
    WriteRelease {
        who: usize,
        all: bool,
    },
    ReadRenew {
        whos: Vec<usize>,
        lease: i64,
    },
    WriteRenew {
        whos: Vec<usize>,
        lease: i64,
    },
    ForceUnlock,
    /// A Java client's read hold, as Redisson writes it: one count per entry, each with a
    /// timeout key `:1`, `:2`… of its own lease (joins a read lock or a free one, else does
    /// nothing).
    JavaReader {
        leases: Vec<i64>,
    },
    /// A Java `RLock` of the same name: a lock hash without `mode`.
    JavaLock {
        lease: i64,
    },
    Clobber(Clobber),
}

#[derive(Debug, Default)]
pub struct RwLock {
    /// Each holder's last hold number: a fresh one for every acquire, read or write.
    seq: [u32; 3],
    /// The number of each holder's current read and write hold, its last granted (0: none
    /// yet, a field no hold has).
    read: [u32; 3],
    write: [u32; 3],
    /// Java readers written so far.
    java: u32,
    /// The holder that `LAST_WRITER` stands for, and the holder of the op at hand.
    last_writer: usize,
    who: usize,
    /// When the last script ran, for the spacing.
    last: Option<Instant>,
}

impl RwLock {
    fn read_field(&self, who: usize) -> String {
        format!("c{who}:{}", self.read[who])
    }

    fn write_field(&self, who: usize) -> String {
        format!("c{who}:{}:write", self.write[who])
    }

    fn fresh(&mut self, who: usize) -> u32 {
        self.seq[who] += 1;
        self.seq[who]
    }
}

/// A read hold's `i`-th timeout key.
fn timeout(field: &str, i: i64) -> String {
    format!("{PREFIX}{field}:rwlock_timeout:{i}")
}

/// What is left of `key`'s life at `now`, in µs (None: missing or no expiry).
fn left_us(world: &World, key: &str, now: Instant) -> Option<i64> {
    match world.keys.get(key)?.ttl {
        Ttl::Forever => None,
        Ttl::Left { ms, at } => {
            Some(ms * 1000 - now.saturating_duration_since(at).as_micros() as i64)
        }
    }
}

/// Gives `key` (which exists) the life `ttl`. Keys one script gives the same lease share one
/// `Ttl`: the model knows their deadlines to be the same, where the server's may differ by a
/// millisecond.
fn put_ttl(world: &mut World, key: &str, ttl: Ttl) {
    if let Some(k) = world.keys.get_mut(key) {
        k.ttl = ttl;
    }
}

/// Lengthens `key`'s life to `ms` from `at` if it has less; never shortens it, never gives
/// one to a key without.
fn extend(world: &mut World, key: &str, ms: i64, at: Instant) {
    if left_us(world, key, at).is_some_and(|left| left < ms * 1000) {
        put_ttl(world, key, Ttl::Left { ms, at });
    }
}

/// Takes one count off the hold `field`, or the whole hold: `Ok(None)` it is not here,
/// `Ok(Some(0))` counts are left, `Ok(Some(1))` it is gone.
fn drop_hold(world: &mut World, field: &str, all: bool) -> Result<Option<i64>, R> {
    let Some(count) = world.hget(LOCK, field)?.map(|v| v.as_int().unwrap()) else {
        return Ok(None);
    };
    if !all && count > 1 {
        world.hset(LOCK, field, V::int(count - 1));
        return Ok(Some(0));
    }
    world.hdel(LOCK, field);
    Ok(Some(1))
}

/// After a hold is gone: readers whose timeout keys have all expired are dropped; with a
/// write hold left nothing more changes; with live readers left the hash lives as long as the
/// longest of them (and `1` is published if that is shorter than it had); with none, the hash
/// is deleted and `message` published. Whether the lock was freed.
fn settle(world: &mut World, at: Instant, message: &str, mut e: Expected) -> (bool, Expected) {
    let fields: Vec<(String, V)> = match world.hash(LOCK) {
        Ok(Some(h)) => h.iter().map(|(f, v)| (f.clone(), v.clone())).collect(),
        _ => Vec::new(),
    };
    let mut writer = false;
    let mut longest: Option<(i64, Ttl)> = None;
    for (field, count) in fields {
        if field == "mode" {
            continue;
        }
        if field.ends_with(":write") {
            writer = true;
            continue;
        }
        // A reader lives while any of its keys, one per count, lives.
        let count = count.as_int().unwrap_or(0).max(1);
        let live = (1..=count)
            .filter_map(|i| {
                let key = timeout(&field, i);
                let left = left_us(world, &key, at)?;
                Some((left, world.keys[&key].ttl))
            })
            .filter(|(left, _)| *left > 0)
            .max_by_key(|(left, _)| *left);
        match live {
            Some(l) if longest.is_none_or(|(most, _)| l.0 > most) => longest = Some(l),
            Some(_) => {}
            None => {
                world.hdel(LOCK, &field);
            }
        }
    }
    if writer {
        return (false, e);
    }
    let Some((longest, ttl)) = longest else {
        world.del(LOCK);
        return (true, e.then(CHANNEL, message));
    };
    // The server tells the hash's deadline from the reader's by its millisecond clock: when
    // one script set both, they may differ by one, or not.
    let same = world.keys.get(LOCK).is_some_and(|k| k.ttl == ttl);
    match left_us(world, LOCK, at) {
        _ if same => e = e.then_maybe(CHANNEL, "1"),
        Some(current) if longest >= current => {}
        _ => e = e.then(CHANNEL, "1"),
    }
    put_ttl(world, LOCK, ttl);
    (false, e)
}

impl Model for RwLock {
    type Op = Op;

    fn op() -> BoxedStrategy<Op> {
        let who = prop_oneof![0usize..3, Just(LAST_WRITER)];
        let counter_ttl = prop_oneof![Just(0i64), Just(600_000i64)];
        prop_oneof![
            3 => (who.clone(), lease(), counter_ttl.clone()).prop_map(
                |(who, lease, counter_ttl)| Op::ReadAcquire {
                    who,
                    lease,
                    counter_ttl,
                    downgrade: false,
                }
            ),
            3 => (lease(), counter_ttl.clone()).prop_map(|(lease, counter_ttl)| Op::ReadAcquire {
                who: LAST_WRITER,
                lease,
                counter_ttl,
                downgrade: true,
            }),
            4 => (who.clone(), lease(), counter_ttl)
                .prop_map(|(who, lease, counter_ttl)| Op::WriteAcquire { who, lease, counter_ttl }),
            1 => (who.clone(), lease()).prop_map(|(who, lease)| Op::ReadReenter { who, lease }),
            1 => (who.clone(), lease()).prop_map(|(who, lease)| Op::WriteReenter { who, lease }),
            3 => (who.clone(), any::<bool>()).prop_map(|(who, all)| Op::ReadRelease { who, all }),
            4 => (prop_oneof![0usize..3, Just(LAST_WRITER), Just(LAST_WRITER)], any::<bool>())
                .prop_map(|(who, all)| Op::WriteRelease { who, all }),
            1 => (proptest::collection::vec(0usize..3, 1..4), lease())
                .prop_map(|(whos, lease)| Op::ReadRenew { whos, lease }),
            1 => (proptest::collection::vec(0usize..3, 1..4), lease())
                .prop_map(|(whos, lease)| Op::WriteRenew { whos, lease }),
            1 => Just(Op::ForceUnlock),
            // Later entries with longer leases: the reader outlives its first timeout key.
            2 => proptest::collection::vec(lease(), 1..4).prop_map(|mut leases| {
                leases.sort_unstable();
                Op::JavaReader { leases }
            }),
            1 => lease().prop_map(|lease| Op::JavaLock { lease }),
            1 => clobber().prop_map(Op::Clobber),
        ]
        .boxed()
    }

    fn call(&mut self, scripts: &Scripts, op: &Op) -> Call {
        use relock::lua;
        if let Some(last) = self.last {
            std::thread::sleep(SPACING.saturating_sub(last.elapsed()));
        }
        if let Op::ReadAcquire { who, .. }
        | Op::WriteAcquire { who, .. }
        | Op::ReadReenter { who, .. }
        | Op::WriteReenter { who, .. }
        | Op::ReadRelease { who, .. }
        | Op::WriteRelease { who, .. } = op
        {
            self.who = if *who == LAST_WRITER {
                self.last_writer
            } else {
                *who
            };
        }
        let who = self.who;
        match op {
            Op::ReadAcquire {
                lease,
                counter_ttl,
                downgrade,
                ..
            } => {
                let writer = if *downgrade && self.write[who] > 0 {
                    self.write_field(who)
                } else {
                    String::new()
                };
                let f = format!("c{who}:{}", self.fresh(who));
                Call::script(
                    scripts.get("RW_READ_ACQUIRE", lua::RW_READ_ACQUIRE),
                    &[LOCK, COUNTER, &timeout(&f, 1)],
                    &[&lease.to_string(), &f, &counter_ttl.to_string(), &writer],
                )
            }
            Op::WriteAcquire {
                lease, counter_ttl, ..
            } => {
                let f = format!("c{who}:{}:write", self.fresh(who));
                Call::script(
                    scripts.get("RW_WRITE_ACQUIRE", lua::RW_WRITE_ACQUIRE),
                    &[LOCK, COUNTER],
                    &[&lease.to_string(), &f, &counter_ttl.to_string()],
                )
            }
            Op::ReadReenter { lease, .. } => {
                let f = self.read_field(who);
                Call::script(
                    scripts.get("REENTER", lua::REENTER),
                    &[LOCK, &timeout(&f, 1)],
                    &[&lease.to_string(), &f],
                )
            }
            Op::WriteReenter { lease, .. } => Call::script(
                scripts.get("REENTER", lua::REENTER),
                &[LOCK],
                &[&lease.to_string(), &self.write_field(who)],
            ),
            Op::ReadRelease { all, .. } => {
                let f = self.read_field(who);
                Call::script(
                    scripts.get("RW_READ_RELEASE", lua::RW_READ_RELEASE),
                    &[LOCK, &timeout(&f, 1)],
                    &[
                        &f,
                        if *all { "all" } else { "1" },
                        "publish",
                        PREFIX,
                        CHANNEL,
                    ],
                )
            }
            Op::WriteRelease { all, .. } => Call::script(
                scripts.get("RW_WRITE_RELEASE", lua::RW_WRITE_RELEASE),
                &[LOCK],
                &[
                    &self.write_field(who),
                    if *all { "all" } else { "1" },
                    "publish",
                    PREFIX,
                    CHANNEL,
                ],
            ),
            Op::ReadRenew { whos, lease } => {
                let fields: Vec<String> = whos.iter().map(|w| self.read_field(*w)).collect();
                let keys: Vec<String> = fields
                    .iter()
                    .flat_map(|f| [LOCK.to_owned(), timeout(f, 1)])
                    .collect();
                let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                let mut args = vec![lease.to_string()];
                args.extend(fields);
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                Call::script(
                    scripts.get("RW_READ_RENEW", lua::RW_READ_RENEW),
                    &keys,
                    &args,
                )
            }
            Op::WriteRenew { whos, lease } => {
                let keys = vec![LOCK; whos.len()];
                let mut args = vec![lease.to_string()];
                args.extend(whos.iter().map(|w| self.write_field(*w)));
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                Call::script(scripts.get("RENEW", lua::RENEW), &keys, &args)
            }
            Op::ForceUnlock => Call::script(
                scripts.get("FORCE_UNLOCK", lua::FORCE_UNLOCK),
                &[LOCK],
                &["publish", "1", CHANNEL, CHANNEL],
            ),
            Op::JavaReader { leases } => {
                self.java += 1;
                let f = format!("j{}:1", self.java);
                let mut keys = vec![LOCK.to_owned()];
                keys.extend((1..=leases.len() as i64).map(|i| timeout(&f, i)));
                let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                let mut args = vec![f];
                args.extend(leases.iter().map(i64::to_string));
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let lua = "local lock = KEYS[1] \
                           if redis.call('exists', lock) == 1 \
                               and redis.pcall('hget', lock, 'mode') ~= 'read' then \
                             return 0 \
                           end \
                           redis.call('hset', lock, 'mode', 'read', ARGV[1], #KEYS - 1) \
                           local longest = 0 \
                           for i = 2, #KEYS do \
                             redis.call('set', KEYS[i], 1, 'px', ARGV[i]) \
                             longest = math.max(longest, tonumber(ARGV[i])) \
                           end \
                           if redis.call('pttl', lock) < longest then \
                             redis.call('pexpire', lock, longest) \
                           end \
                           return 1";
                Call::script(lua.into(), &keys, &args)
            }
            Op::JavaLock { lease } => {
                let lua = "redis.call('del', KEYS[1]) \
                           redis.call('hset', KEYS[1], 'j0:7', 1) \
                           redis.call('pexpire', KEYS[1], ARGV[1]) \
                           return 1";
                Call::script(lua.into(), &[LOCK], &[&lease.to_string()])
            }
            Op::Clobber(c) => c.call(LOCK),
        }
    }

    fn expect(&mut self, world: &mut World, clock: Clock, op: &Op) -> Expected {
        let at = Instant::now();
        let e = self.expected(world, clock, at, op);
        // The holder whose write hold is on the lock now is the one a client would know.
        if let Some(w) =
            (0..3).find(|w| matches!(world.hget(LOCK, &self.write_field(*w)), Ok(Some(_))))
        {
            self.last_writer = w;
        }
        self.last = Some(Instant::now());
        e
    }
}

impl RwLock {
    fn expected(&mut self, world: &mut World, clock: Clock, at: Instant, op: &Op) -> Expected {
        let who = self.who;
        match op {
            Op::ReadAcquire {
                lease,
                counter_ttl,
                downgrade,
                ..
            } => {
                let writer = (*downgrade && self.write[who] > 0).then(|| self.write_field(who));
                let n = self.seq[who];
                let f = format!("c{who}:{n}");
                let r = read_acquire(world, &f, writer, *lease, *counter_ttl, clock, at)
                    .unwrap_or_else(|e| e);
                if granted(&r) {
                    self.read[who] = n;
                }
                Expected::reply(r)
            }
            Op::WriteAcquire {
                lease, counter_ttl, ..
            } => {
                let n = self.seq[who];
                let f = format!("c{who}:{n}:write");
                let r =
                    write_acquire(world, &f, *lease, *counter_ttl, clock, at).unwrap_or_else(|e| e);
                if granted(&r) {
                    self.write[who] = n;
                }
                Expected::reply(r)
            }
            Op::ReadReenter { lease, .. } => {
                let f = self.read_field(who);
                Expected::reply(reenter(world, &f, Some(&timeout(&f, 1)), *lease, at))
            }
            Op::WriteReenter { lease, .. } => {
                Expected::reply(reenter(world, &self.write_field(who), None, *lease, at))
            }
            Op::ReadRelease { all, .. } => {
                let f = self.read_field(who);
                match drop_hold(world, &f, *all) {
                    Err(e) => Expected::reply(e),
                    Ok(Some(0)) => Expected::reply(R::Int(0)),
                    Ok(None) => {
                        // Gone already: its timeout key goes with it.
                        world.del(&timeout(&f, 1));
                        Expected::reply(R::Nil)
                    }
                    Ok(Some(_)) => {
                        world.del(&timeout(&f, 1));
                        settle(world, at, "0", Expected::reply(R::Int(1))).1
                    }
                }
            }
            Op::WriteRelease { all, .. } => match drop_hold(world, &self.write_field(who), *all) {
                Err(e) => Expected::reply(e),
                Ok(None) => Expected::reply(R::Nil),
                Ok(Some(0)) => Expected::reply(R::Int(0)),
                Ok(Some(_)) => match settle(world, at, "1", Expected::reply(R::Int(1))) {
                    (true, e) => e,
                    // Readers are left (the writer had downgraded): they may share now.
                    (false, e) => {
                        world.hset(LOCK, "mode", V::str("read"));
                        e.then(CHANNEL, "1")
                    }
                },
            },
            Op::ReadRenew { whos, lease } => {
                let mut replies = Vec::new();
                for w in whos {
                    let f = self.read_field(*w);
                    let t = timeout(&f, 1);
                    let held = matches!(world.hget(LOCK, &f), Ok(Some(_)))
                        && left_us(world, &t, at).is_some_and(|l| l > 0);
                    if held {
                        extend(world, LOCK, *lease, at);
                        extend(world, &t, *lease, at);
                    }
                    replies.push(R::Int(held as i64));
                }
                Expected::reply(R::Array(replies))
            }
            Op::WriteRenew { whos, lease } => {
                let mut replies = Vec::new();
                for w in whos {
                    let held = matches!(world.hget(LOCK, &self.write_field(*w)), Ok(Some(_)));
                    if held {
                        extend(world, LOCK, *lease, at);
                    }
                    replies.push(R::Int(held as i64));
                }
                Expected::reply(R::Array(replies))
            }
            Op::ForceUnlock => {
                if !world.exists(LOCK) {
                    return Expected::reply(R::Int(0));
                }
                if let Err(e) = ensure_lock(world, LOCK) {
                    return Expected::reply(e);
                }
                // The readers' timeout keys are left to expire.
                world.del(LOCK);
                Expected::publishing(R::Int(1), CHANNEL, "1")
            }
            Op::JavaReader { leases } => {
                let f = format!("j{}:1", self.java);
                let joins = !world.exists(LOCK)
                    || matches!(world.hget(LOCK, "mode"), Ok(Some(m)) if m.as_str() == Some("read"));
                if !joins {
                    return Expected::reply(R::Int(0));
                }
                world.hset(LOCK, "mode", V::str("read"));
                world.hset(LOCK, &f, V::int(leases.len() as i64));
                for (i, ms) in leases.iter().enumerate() {
                    world.set(&timeout(&f, i as i64 + 1), V::int(1), None, false);
                    put_ttl(world, &timeout(&f, i as i64 + 1), Ttl::Left { ms: *ms, at });
                }
                let longest = *leases.iter().max().unwrap();
                if left_us(world, LOCK, at).is_none_or(|l| l < longest * 1000) {
                    put_ttl(world, LOCK, Ttl::Left { ms: longest, at });
                }
                Expected::reply(R::Int(1))
            }
            Op::JavaLock { lease } => {
                world.del(LOCK);
                world.hset(LOCK, "j0:7", V::int(1));
                put_ttl(world, LOCK, Ttl::Left { ms: *lease, at });
                Expected::reply(R::Int(1))
            }
            Op::Clobber(c) => Expected::reply(c.expect(world, LOCK)),
        }
    }
}

/// Whether an acquire's reply grants the hold: the holder's holds are then this one.
fn granted(r: &R) -> bool {
    matches!(r, R::Array(a) if a.first() == Some(&R::Int(1)))
}

/// A fresh read hold: granted when the lock is free, held for reading, or held for writing by
/// the caller's own write hold (`writer`); `{1, token}`, else `{0, pttl}`; an error for a key
/// that is not a lock, with nothing written.
fn read_acquire(
    world: &mut World,
    field: &str,
    writer: Option<String>,
    lease: i64,
    counter_ttl: i64,
    clock: Clock,
    at: Instant,
) -> Result<R, R> {
    ensure_lock(world, LOCK)?;
    let mode = world
        .hget(LOCK, "mode")?
        .and_then(|m| m.as_str().map(str::to_owned));
    let free = !world.exists(LOCK);
    let shared = mode.as_deref() == Some("read");
    let downgrade = mode.as_deref() == Some("write")
        && writer.is_some_and(|w| matches!(world.hget(LOCK, &w), Ok(Some(_))));
    if !(free || shared || downgrade) {
        return Ok(R::Array(vec![R::Int(0), R::pttl(world, LOCK)]));
    }
    let token = mint(world, COUNTER, counter_ttl, clock)?;
    if free {
        world.hset(LOCK, "mode", V::str("read"));
    }
    world.hset(LOCK, field, V::int(1));
    let t = timeout(field, 1);
    world.set(&t, V::int(1), None, false);
    put_ttl(world, &t, Ttl::Left { ms: lease, at });
    // The hash lives as long as its longest hold.
    if left_us(world, LOCK, at).is_none_or(|l| l < lease * 1000) {
        put_ttl(world, LOCK, Ttl::Left { ms: lease, at });
    }
    Ok(R::Array(vec![R::Int(1), token]))
}

/// A fresh write hold, only when nobody holds the lock.
fn write_acquire(
    world: &mut World,
    field: &str,
    lease: i64,
    counter_ttl: i64,
    clock: Clock,
    at: Instant,
) -> Result<R, R> {
    if world.exists(LOCK) {
        ensure_lock(world, LOCK)?;
        return Ok(R::Array(vec![R::Int(0), R::pttl(world, LOCK)]));
    }
    let token = mint(world, COUNTER, counter_ttl, clock)?;
    world.hset(LOCK, "mode", V::str("write"));
    world.hset(LOCK, field, V::int(1));
    put_ttl(world, LOCK, Ttl::Left { ms: lease, at });
    Ok(R::Array(vec![R::Int(1), token]))
}

/// One more count on a hold that is here; its lease (the hash's, and a read hold's timeout
/// key's) lengthened to `lease`, never shortened. A read hold whose timeout key has expired
/// is gone, even while another reader's longer lease keeps the hash: nothing is re-entered.
fn reenter(world: &mut World, field: &str, timeout: Option<&str>, lease: i64, at: Instant) -> R {
    let count = match world.hget(LOCK, field) {
        Err(e) => return e,
        Ok(None) => return R::Nil,
        Ok(Some(v)) => v.as_int().unwrap() + 1,
    };
    if timeout.is_some_and(|t| !world.exists(t)) {
        return R::Nil;
    }
    world.hset(LOCK, field, V::int(count));
    extend(world, LOCK, lease, at);
    if let Some(t) = timeout {
        extend(world, t, lease, at);
    }
    R::Int(count)
}

#[test]
fn the_rw_locks_scripts_do_what_its_model_does() {
    let bench = crate::bench::Bench::start();
    let cases = crate::run::cases(64);
    if let Err(e) = check::<RwLock>(&bench, &Scripts::default(), cases, 24, 2000) {
        panic!("{e}");
    }
}

/// The read-write lock's mutants of the scripts `pick` chooses (by name).
fn caught(pick: impl Fn(&str) -> bool) {
    use relock::lua::*;
    let bench = crate::bench::Bench::start();
    let mutants = [
        mutant(
            "RW_READ_ACQUIRE",
            RW_READ_ACQUIRE,
            "local shared = mode == 'read'",
            "local shared = mode ~= 'read'",
        ),
        mutant(
            "RW_READ_ACQUIRE",
            RW_READ_ACQUIRE,
            "redis.call('hexists', lock, ARGV[4]) == 1",
            "redis.call('hexists', lock, ARGV[4]) == 0",
        ),
        mutant(
            "RW_READ_ACQUIRE",
            RW_READ_ACQUIRE,
            "redis.call('pttl', lock) < lease",
            "redis.call('pttl', lock) > lease",
        ),
        mutant(
            "RW_READ_ACQUIRE",
            RW_READ_ACQUIRE,
            "redis.call('set', KEYS[3], 1, 'px', lease)",
            "redis.call('set', KEYS[3], 1, 'px', lease + 5000)",
        ),
        mutant(
            "RW_WRITE_ACQUIRE",
            RW_WRITE_ACQUIRE,
            "redis.call('exists', lock) == 0",
            "redis.call('exists', lock) == 1",
        ),
        mutant(
            "RW_WRITE_ACQUIRE",
            RW_WRITE_ACQUIRE,
            "redis.call('pexpire', lock, tonumber(ARGV[1]))",
            "redis.call('pexpire', lock, tonumber(ARGV[1]) + 5000)",
        ),
        mutant(
            "RW_READ_RELEASE",
            RW_READ_RELEASE,
            "if released == 0 then",
            "if released ~= 0 then",
        ),
        mutant(
            "RW_READ_RELEASE",
            RW_READ_RELEASE,
            "if released == nil then",
            "if released ~= nil then",
        ),
        // The readers' rule (lib/readers.lua), as the read release runs it.
        mutant(
            "RW_READ_RELEASE",
            RW_READ_RELEASE,
            "if ttl > 0",
            "if ttl < 0",
        ),
        mutant(
            "RW_READ_RELEASE",
            RW_READ_RELEASE,
            "longest < current",
            "longest > current",
        ),
        mutant(
            "RW_READ_RELEASE",
            RW_READ_RELEASE,
            "math.max(count, 1)",
            "math.min(count, 1)",
        ),
        mutant(
            "RW_READ_RELEASE",
            RW_READ_RELEASE,
            "if t > ttl",
            "if t < ttl",
        ),
        mutant(
            "RW_WRITE_RELEASE",
            RW_WRITE_RELEASE,
            "if released ~= 1 then",
            "if released == 1 then",
        ),
        mutant(
            "RW_WRITE_RELEASE",
            RW_WRITE_RELEASE,
            "if not settle_readers(",
            "if settle_readers(",
        ),
        mutant(
            "RW_READ_RELEASE",
            RW_READ_RELEASE,
            "string.sub(field, -6) == ':write'",
            "string.sub(field, -6) ~= ':write'",
        ),
        mutant(
            "RW_WRITE_RELEASE",
            RW_WRITE_RELEASE,
            "redis.call('pexpire', lock, longest)",
            "redis.call('pexpire', lock, longest + 5000)",
        ),
        mutant(
            "RW_READ_RENEW",
            RW_READ_RENEW,
            "ARGV[1 + i]) ~= 1",
            "ARGV[1 + i]) == 1",
        ),
        mutant(
            "RW_READ_RENEW",
            RW_READ_RENEW,
            "redis.call('pttl', timeout) <= 0",
            "redis.call('pttl', timeout) >= 0",
        ),
        mutant(
            "RW_READ_RENEW",
            RW_READ_RENEW,
            "extend(timeout, lease)",
            "extend(timeout, lease + 5000)",
        ),
        // The read hold's timeout key, re-entered with it.
        mutant("REENTER", REENTER, "if KEYS[2] then", "if not KEYS[2] then"),
        mutant(
            "REENTER",
            REENTER,
            "redis.call('exists', KEYS[2]) == 0",
            "redis.call('exists', KEYS[2]) == 1",
        ),
        mutant(
            "FORCE_UNLOCK",
            FORCE_UNLOCK,
            "redis.call(ARGV[1], ARGV[3], ARGV[2])",
            "redis.call(ARGV[1], ARGV[3], 0)",
        ),
    ];
    let mutants: Vec<_> = mutants.into_iter().filter(|m| pick(m.script)).collect();
    assert!(!mutants.is_empty());
    let alive = survivors::<RwLock>(&bench, &mutants);
    assert!(
        alive.is_empty(),
        "mutants the model test did not catch: {alive:#?}"
    );
}

// In four tests, so that each runs in well under half a minute on a loaded machine.
#[test]
fn the_rw_locks_acquire_mutants_are_caught() {
    caught(|s| s.ends_with("_ACQUIRE"));
}

#[test]
fn the_rw_locks_read_release_mutants_are_caught() {
    caught(|s| s == "RW_READ_RELEASE");
}

#[test]
fn the_rw_locks_write_release_mutants_are_caught() {
    caught(|s| s == "RW_WRITE_RELEASE");
}

#[test]
fn the_rw_locks_renewal_reentry_and_force_unlock_mutants_are_caught() {
    caught(|s| !s.ends_with("_ACQUIRE") && !s.ends_with("_RELEASE"));
}
