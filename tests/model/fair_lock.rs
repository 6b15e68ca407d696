//! The fair lock's scripts against its model: waiters joining the line (`fair_acquire` in
//! `try` and `wait` mode, rejoins under a new field), the head taking the free lock, releases
//! that hand the lock to the first live waiter (direct handoff) or tell it, heartbeats, leaves
//! (giving back a grant not taken), dead waiters evicted once their heartbeat deadline has
//! passed, a handoff whose message was lost reported by the next attempt, re-entry, and
//! force-unlock with waiters, on a lock that other programs may write over.
//!
//! The line is one sorted set (`lua/lib/queue.lua`): each waiter's field scored by its ticket
//! (the server's clock in µs), `alive:<field>` by its heartbeat deadline (server ms) and, if it
//! asked to be handed the lock, `lease:<field>` by that first lease. Beside it, the grant
//! record `<field>=<token>` of the waiter handed the lock last lives as long as that lease. The
//! deadlines are server-clock ms kept as scores: time passing moves them too (`age_values`),
//! and neither the tickets nor the first leases.

use std::collections::BTreeMap;
use std::time::Instant;

use proptest::prelude::*;

use crate::bench::{Bench, Reply};
use crate::mutants::{mutant, survivors_in};
use crate::run::{check, replay, Call, Clock, Expected, Model, Scripts, Step};
use crate::shape::{clobber, ensure_lock, extend, lease, mint, Clobber};
use crate::world::{Data, Key, World, R, TTL_SLACK_MS, V};

const LOCK: &str = "{fl}";
const COUNTER: &str = "redisson_lock_token:{fl}";
/// The line: tickets, heartbeat deadlines (`alive:`) and first leases (`lease:`).
pub const LINE: &str = "relock_fair_line:{fl}";
/// The grant record of the waiter handed the lock last, `<field>=<token>`.
pub const GRANT: &str = "relock_fair_grant:{fl}";
/// Redisson's release channel: `0` when nobody is in line, and on a force-unlock.
const CHANNEL: &str = "redisson_lock__channel:{fl}";
/// The fair lock's own channel: the messages that name a waiter.
const FAIR_CHANNEL: &str = "relock_fair_channel:{fl}";
/// How many holders a sequence draws from: enough for a line of three behind a holder.
const HOLDERS: usize = 4;

/// The lock's and its line's keys, in the order every fair script but `fair_acquire` takes them.
const GROUP: [&str; 4] = [LOCK, LINE, COUNTER, GRANT];

/// The line's keys before it was one key (the scripts of `fair_before_after`'s fixtures):
/// owner -> ticket, owner -> heartbeat deadline, the ticket sequence, and the handoff hash
/// (owner -> first lease, or the token of its grant; `relock:last-grant` -> the owner handed
/// the lock last).
pub const QUEUE: &str = "relock_fair_queue:{fl}";
pub const ALIVE: &str = "relock_fair_alive:{fl}";
pub const SEQ: &str = "relock_fair_seq:{fl}";
pub const HANDOFF: &str = "relock_fair_handoff:{fl}";
const FOUR_GROUP: [&str; 6] = [LOCK, QUEUE, ALIVE, SEQ, COUNTER, HANDOFF];

/// The keys a version of the fair scripts keeps its line in, which the callers name in KEYS.
/// The model predicts `Line`; `Four` is for comparing with the versions before it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Layout {
    /// One line key and the grant record.
    #[default]
    Line,
    /// The queue, the heartbeats, the sequence and the handoff hash.
    Four,
}

impl Layout {
    /// `fair_acquire`'s KEYS.
    fn acquire_keys(self) -> &'static [&'static str] {
        match self {
            Layout::Line => &[LOCK, COUNTER, LINE, GRANT],
            Layout::Four => &[LOCK, COUNTER, QUEUE, ALIVE, SEQ, HANDOFF],
        }
    }

    /// The KEYS of every other fair script (a heartbeat's, once per waiter).
    fn group(self) -> &'static [&'static str] {
        match self {
            Layout::Line => &GROUP,
            Layout::Four => &FOUR_GROUP,
        }
    }
}

/// The member of `field`'s heartbeat deadline in the line.
fn alive(field: &str) -> String {
    format!("alive:{field}")
}

/// The member of `field`'s first lease in the line.
fn leased(field: &str) -> String {
    format!("lease:{field}")
}

/// Whether a member of the line is a waiter's ticket (its field), not its deadline or its first
/// lease.
fn is_ticket(member: &str) -> bool {
    !member.starts_with("alive:") && !member.starts_with("lease:")
}

/// Moves the heartbeat deadlines of the line on `bench` `ms` closer, as `layout` keeps them
/// (neither tickets nor first leases move).
pub fn age_deadlines(bench: &Bench, layout: Layout, ms: i64) {
    let (lua, key) = match layout {
        Layout::Line => (
            "local ms = tonumber(ARGV[1]) \
             local all = redis.call('zrange', KEYS[1], 0, -1, 'withscores') \
             for i = 1, #all, 2 do \
               if string.sub(all[i], 1, 6) == 'alive:' then \
                 redis.call('zadd', KEYS[1], \
                   string.format('%.0f', tonumber(all[i + 1]) - ms), all[i]) \
               end \
             end \
             return 1",
            LINE,
        ),
        Layout::Four => (
            "local ms = tonumber(ARGV[1]) \
             local all = redis.call('zrange', KEYS[1], 0, -1, 'withscores') \
             for i = 1, #all, 2 do \
               redis.call('zadd', KEYS[1], \
                 string.format('%.0f', tonumber(all[i + 1]) - ms), all[i]) \
             end \
             return 1",
            ALIVE,
        ),
    };
    let r = bench.eval(lua, &[key.to_owned()], &[ms.to_string()]);
    assert_eq!(r, Reply::Int(1), "aging the heartbeat deadlines");
}

#[derive(Debug, Clone)]
pub enum Op {
    /// A fresh acquisition's first attempt (`try_lock`, and the first of every `lock()`):
    /// under a field no hold had, never joining the line.
    Try {
        who: usize,
        lease: i64,
        grace: i64,
    },
    /// A waiter's attempt in `wait` mode under its current field (a new one, as a new
    /// acquisition, once a reply granted that field the lock). `handoff`: it asks to be
    /// handed the lock (a first lease, as the client registers one); `rejoin`: first it takes a
    /// new field, keeping its ticket and naming the old field (after an attempt whose outcome
    /// was unknown, or a reply that it is out of line).
    Wait {
        who: usize,
        lease: i64,
        heartbeat: i64,
        handoff: bool,
        rejoin: bool,
        grace: i64,
    },
    Release {
        who: usize,
        all: bool,
        grace: i64,
    },
    /// A release by the holder that holds the lock now, if one of ours does (else by the
    /// first): most releases come from the holder.
    ReleaseHeld {
        all: bool,
        grace: i64,
    },
    /// One client's heartbeat for these holders' waiters.
    Heartbeat {
        whos: Vec<usize>,
        heartbeat: i64,
        grace: i64,
    },
    Leave {
        who: usize,
        grace: i64,
    },
    Reenter {
        who: usize,
        lease: i64,
    },
    ForceUnlock,
    Clobber(Clobber),
}

/// What a holder's client knows of its current acquisition.
#[derive(Debug, Default, Clone)]
struct Caller {
    /// Its field's number (`c<who>:<n>`).
    n: u32,
    /// The ticket the server last gave it (0: none yet).
    ticket: i64,
    /// Whether a reply has shown this field in line.
    joined: bool,
    /// The field this one replaced (a rejoin), named until a reply shows it in line.
    replaces: Option<String>,
    /// Whether a reply granted this field the lock (`{1, …}`, `{3, …}`): that acquisition is
    /// over, and the holder's next one asks under a new field. (A handoff message may be
    /// lost, so a handoff alone does not end it: its next attempt reports the grant.)
    granted: bool,
}

#[derive(Debug, Default)]
pub struct FairLock {
    callers: [Caller; HOLDERS],
    /// When the latest call was about to be sent.
    called: Option<Instant>,
    /// The holder whose field the lock held after the latest step, as its client knows from
    /// its replies and messages.
    holding: Option<usize>,
    /// The holder the latest call was made for, where the op leaves it to the model.
    target: usize,
    /// The keys the calls name. The model predicts `Layout::Line`; callers on the four keys
    /// serve the comparison with the versions before it (`fair_before_after`), which runs no
    /// model.
    layout: Layout,
}

impl FairLock {
    /// Callers that name `layout`'s keys.
    pub fn on(layout: Layout) -> FairLock {
        FairLock {
            layout,
            ..FairLock::default()
        }
    }

    fn field(&self, who: usize) -> String {
        format!("c{who}:{}", self.callers[who].n)
    }

    /// The holder whose current field is among `fields` (the lock hash's), as `expect` finds
    /// it in the model's world: for a run that drives the callers without the model.
    pub fn saw_holds(&mut self, fields: &[String]) {
        self.holding = (0..HOLDERS).find(|w| fields.contains(&self.field(*w)));
    }
}

fn grace() -> impl Strategy<Value = i64> {
    prop_oneof![Just(0i64), Just(600_000i64)]
}

/// A client's heartbeat deadline: whole seconds, as leases are, so that a changed TTL shows;
/// over the same range as leases, so that a holder often dies (its lease runs out) while the
/// line lives on.
fn heartbeat() -> impl Strategy<Value = i64> {
    lease()
}

impl Model for FairLock {
    type Op = Op;

    fn op() -> BoxedStrategy<Op> {
        let who = 0usize..HOLDERS;
        // A key written over by a string, or a hash without a TTL, stays until a restart:
        // rare, so that most sequences keep a lock and a line to work on.
        prop_oneof![
            4 => (who.clone(), lease(), grace())
                .prop_map(|(who, lease, grace)| Op::Try { who, lease, grace }),
            16 => (who.clone(), lease(), heartbeat(), prop::bool::weighted(0.6),
                  prop::bool::weighted(0.15), grace())
                .prop_map(|(who, lease, heartbeat, handoff, rejoin, grace)| Op::Wait {
                    who, lease, heartbeat, handoff, rejoin, grace,
                }),
            2 => (who.clone(), prop::bool::weighted(0.7), grace())
                .prop_map(|(who, all, grace)| Op::Release { who, all, grace }),
            10 => (prop::bool::weighted(0.7), grace())
                .prop_map(|(all, grace)| Op::ReleaseHeld { all, grace }),
            12 => (proptest::collection::vec(who.clone(), 1..4), heartbeat(), grace())
                .prop_map(|(whos, heartbeat, grace)| Op::Heartbeat { whos, heartbeat, grace }),
            4 => (who.clone(), grace()).prop_map(|(who, grace)| Op::Leave { who, grace }),
            2 => (who, lease()).prop_map(|(who, lease)| Op::Reenter { who, lease }),
            4 => Just(Op::ForceUnlock),
            1 => clobber().prop_map(Op::Clobber),
        ]
        .boxed()
    }

    fn call(&mut self, scripts: &Scripts, op: &Op) -> Call {
        use relock::lua;
        self.called = Some(Instant::now());
        match op {
            Op::Try { who, lease, grace } => {
                self.callers[*who] = Caller {
                    n: self.callers[*who].n + 1,
                    ..Caller::default()
                };
                // As `FairCall(None)` sends it: no ticket, no first lease, never in line.
                Call::script(
                    scripts.get("FAIR_ACQUIRE", lua::FAIR_ACQUIRE),
                    self.layout.acquire_keys(),
                    &[
                        &lease.to_string(),
                        &self.field(*who),
                        &grace.to_string(),
                        "5000",
                        "try",
                        "0",
                        "publish",
                        "0",
                        "0",
                        FAIR_CHANNEL,
                    ],
                )
            }
            Op::Wait {
                who,
                lease,
                heartbeat,
                handoff,
                rejoin,
                grace,
            } => {
                if self.callers[*who].granted {
                    self.callers[*who] = Caller {
                        n: self.callers[*who].n + 1,
                        ..Caller::default()
                    };
                } else if *rejoin {
                    let old = self.field(*who);
                    let c = &mut self.callers[*who];
                    c.n += 1;
                    c.joined = false;
                    c.replaces = Some(old);
                }
                let c = &self.callers[*who];
                let first_lease = if *handoff {
                    (*lease).min(*heartbeat)
                } else {
                    0
                };
                let mut args = vec![
                    lease.to_string(),
                    self.field(*who),
                    grace.to_string(),
                    heartbeat.to_string(),
                    "wait".to_owned(),
                    c.ticket.to_string(),
                    "publish".to_owned(),
                    first_lease.to_string(),
                    if c.joined { "1" } else { "0" }.to_owned(),
                    FAIR_CHANNEL.to_owned(),
                ];
                if let Some(old) = c.replaces.as_ref().filter(|_| !c.joined) {
                    args.push(old.clone());
                }
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                Call::script(
                    scripts.get("FAIR_ACQUIRE", lua::FAIR_ACQUIRE),
                    self.layout.acquire_keys(),
                    &args,
                )
            }
            Op::Release { .. } | Op::ReleaseHeld { .. } => {
                let (who, all, grace) = match op {
                    Op::Release { who, all, grace } => (*who, *all, *grace),
                    Op::ReleaseHeld { all, grace } => (self.holding.unwrap_or(0), *all, *grace),
                    _ => unreachable!(),
                };
                self.target = who;
                Call::script(
                    scripts.get("FAIR_RELEASE", lua::FAIR_RELEASE),
                    self.layout.group(),
                    &[
                        &self.field(who),
                        if all { "all" } else { "1" },
                        "publish",
                        &grace.to_string(),
                        CHANNEL,
                        FAIR_CHANNEL,
                    ],
                )
            }
            Op::Heartbeat {
                whos,
                heartbeat,
                grace,
            } => {
                let group = self.layout.group();
                let keys: Vec<&str> = whos.iter().flat_map(|_| group.iter().copied()).collect();
                let mut args = vec![heartbeat.to_string(), "publish".into(), grace.to_string()];
                for w in whos {
                    args.push(self.field(*w));
                    args.push(FAIR_CHANNEL.into());
                }
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                Call::script(
                    scripts.get("FAIR_HEARTBEAT", lua::FAIR_HEARTBEAT),
                    &keys,
                    &args,
                )
            }
            Op::Leave { who, grace } => Call::script(
                scripts.get("FAIR_LEAVE", lua::FAIR_LEAVE),
                self.layout.group(),
                &[
                    &self.field(*who),
                    "publish",
                    &grace.to_string(),
                    FAIR_CHANNEL,
                ],
            ),
            Op::Reenter { who, lease } => Call::script(
                scripts.get("REENTER", lua::REENTER),
                &[LOCK],
                &[&lease.to_string(), &self.field(*who)],
            ),
            Op::ForceUnlock => Call::script(
                scripts.get("FAIR_FORCE_UNLOCK", lua::FAIR_FORCE_UNLOCK),
                self.layout.group(),
                &["publish", CHANNEL, FAIR_CHANNEL],
            ),
            Op::Clobber(c) => c.call(LOCK),
        }
    }

    fn expect(&mut self, world: &mut World, clock: Clock, op: &Op) -> Expected {
        let mut at = At {
            w: world,
            clock,
            called: self.called.expect("a call before its expectation"),
            messages: Vec::new(),
        };
        let reply = match op {
            Op::Try { who, lease, grace } => at.acquire(&Attempt {
                field: self.field(*who),
                lease: *lease,
                grace: *grace,
                wait: None,
            }),
            Op::Wait {
                who,
                lease,
                heartbeat,
                handoff,
                grace,
                ..
            } => {
                let c = &self.callers[*who];
                at.acquire(&Attempt {
                    field: self.field(*who),
                    lease: *lease,
                    grace: *grace,
                    wait: Some(Waiting {
                        heartbeat: *heartbeat,
                        ticket: c.ticket,
                        first_lease: if *handoff {
                            (*lease).min(*heartbeat)
                        } else {
                            0
                        },
                        joined: c.joined,
                        replaces: c.replaces.clone().filter(|_| !c.joined),
                    }),
                })
            }
            Op::Release { all, grace, .. } | Op::ReleaseHeld { all, grace } => {
                at.release(&self.field(self.target), *all, *grace)
            }
            Op::Heartbeat {
                whos,
                heartbeat,
                grace,
            } => {
                let fields: Vec<String> = whos.iter().map(|w| self.field(*w)).collect();
                at.heartbeat(&fields, *heartbeat, *grace)
            }
            Op::Leave { who, grace } => at.leave(&self.field(*who), *grace),
            Op::Reenter { who, lease } => {
                let f = self.field(*who);
                match at.w.hget(LOCK, &f) {
                    Err(e) => e,
                    Ok(None) => R::Nil,
                    Ok(Some(v)) => {
                        let count = v.as_int().unwrap() + 1;
                        at.w.hset(LOCK, &f, V::int(count));
                        extend(at.w, LOCK, *lease);
                        R::Int(count)
                    }
                }
            }
            Op::ForceUnlock => at.force_unlock(),
            Op::Clobber(c) => c.expect(at.w, LOCK),
        };
        let messages = at.messages;
        self.holding =
            (0..HOLDERS).find(|w| matches!(world.hget(LOCK, &self.field(*w)), Ok(Some(_))));
        Expected {
            reply,
            messages,
            optional: Vec::new(),
        }
    }

    fn deadlines(&self, world: &World, now_ms: i64) -> Vec<i64> {
        // A deadline already passed stays passed for every later step: only those to come
        // can race a step.
        zset(world, LINE)
            .iter()
            .filter(|(m, _)| m.starts_with("alive:"))
            .map(|(_, v)| order(v) - now_ms)
            .filter(|d| *d > 0)
            .collect()
    }

    fn age_values(&mut self, world: &mut World, bench: &Bench, ms: i64) {
        age_deadlines(bench, self.layout, ms);
        if let Some(Key {
            data: Data::ZSet(z),
            ..
        }) = world.keys.get_mut(LINE)
        {
            for (m, v) in z.iter_mut() {
                if m.starts_with("alive:") {
                    *v = V::int(order(v) - ms);
                }
            }
        }
    }

    fn message_matches(&self, expected: &(String, String), heard: &(String, String)) -> bool {
        if expected.0 != heard.0 {
            return false;
        }
        // A handoff's token seeded from the clock: `<field>=[lo,hi]`.
        if let Some((prefix, bounds)) = expected.1.split_once("=[") {
            let Some((lo, hi)) = bounds
                .strip_suffix(']')
                .and_then(|b| b.split_once(','))
                .and_then(|(lo, hi)| Some((lo.parse::<i64>().ok()?, hi.parse::<i64>().ok()?)))
            else {
                return false;
            };
            return heard
                .1
                .strip_prefix(prefix)
                .and_then(|t| t.strip_prefix('='))
                .and_then(|t| t.parse::<i64>().ok())
                .is_some_and(|t| lo <= t && t <= hi);
        }
        expected.1 == heard.1
    }

    fn replied(&mut self, op: &Op, reply: &Reply) {
        let int = |r: &Reply| match r {
            Reply::Int(i) => *i,
            other => panic!("an integer in the reply, not {other:?}"),
        };
        match (op, reply) {
            // Not granted, and in line with this ticket (position -2: out of line and not put
            // back; the caller rejoins under a new field).
            (Op::Wait { who, .. }, Reply::Array(a)) if int(&a[0]) == 0 && int(&a[3]) != -2 => {
                let c = &mut self.callers[*who];
                c.ticket = int(&a[2]);
                c.joined = true;
            }
            (Op::Try { who, .. } | Op::Wait { who, .. }, Reply::Array(a))
                if matches!(int(&a[0]), 1 | 3) =>
            {
                self.callers[*who].granted = true;
            }
            (Op::Heartbeat { whos, .. }, Reply::Array(a)) => {
                for (w, r) in whos.iter().zip(a) {
                    if int(r) != 0 {
                        self.callers[*w].joined = true;
                    }
                }
            }
            _ => {}
        }
    }
}

/// One acquire attempt's arguments.
struct Attempt {
    field: String,
    lease: i64,
    grace: i64,
    /// `wait` mode's; None: `try`.
    wait: Option<Waiting>,
}

struct Waiting {
    heartbeat: i64,
    ticket: i64,
    first_lease: i64,
    joined: bool,
    replaces: Option<String>,
}

/// One script call's view of the world: the keys, the server clock's bounds during the call,
/// and the messages published so far.
struct At<'a> {
    w: &'a mut World,
    clock: Clock,
    /// When the call was about to be sent.
    called: Instant,
    messages: Vec<(String, String)>,
}

impl At<'_> {
    /// The lock's PTTL as the script read it: no more than what was left when the call was
    /// sent, no less than what is left now (give or take the slack). The model looks some
    /// time after the script did, which on a loaded machine is more than a few ms.
    fn pttl(&self) -> R {
        match self
            .w
            .keys
            .get(LOCK)
            .map(|k| (k.ttl.left_at(self.called), k.ttl.left()))
        {
            None => R::Int(-2),
            Some((_, None)) => R::Int(-1),
            Some((Some(then), Some(now))) => R::Within(now - TTL_SLACK_MS, then + 5),
            Some((None, Some(_))) => unreachable!(),
        }
    }

    /// The script's `now` (server ms). Deadlines are never within the runner's margin of it,
    /// so any value between the bounds decides alike; the earliest is the one that gives
    /// the longest time left, which the TTL comparison wants as the model's.
    fn now(&self) -> i64 {
        self.clock.before_us / 1000
    }

    /// A deadline `ms` after the script's `now`.
    fn after_now(&self, ms: i64) -> V {
        V::Within(
            self.clock.before_us / 1000 + ms,
            self.clock.after_us / 1000 + ms,
        )
    }

    fn publish(&mut self, channel: &str, message: String) {
        self.messages.push((channel.to_owned(), message));
    }

    /// The token of `owner`'s grant, if the grant record names it.
    fn granted(&self, owner: &str) -> Option<V> {
        match self.w.get(GRANT) {
            Ok(None) => None,
            Ok(Some(V::Is(record))) => {
                let (who, token) = record.rsplit_once('=')?;
                (who == owner).then(|| V::Is(token.to_owned()))
            }
            Ok(Some(V::Tagged(prefix, lo, hi))) => {
                (prefix.strip_suffix('=') == Some(owner)).then_some(V::Within(*lo, *hi))
            }
            Ok(Some(other)) => panic!("model bug: the grant record is {other:?}"),
            Err(_) => panic!("model bug: the grant record is not a string"),
        }
    }

    /// The owner out of the line: its ticket, its deadline and its first lease. Whether any of
    /// them was there.
    fn dequeue(&mut self, owner: &str) -> bool {
        let ticket = self.w.zrem(LINE, owner);
        let deadline = self.w.zrem(LINE, &alive(owner));
        let first_lease = self.w.zrem(LINE, &leased(owner));
        ticket || deadline || first_lease
    }

    /// Every waiter whose heartbeat deadline has passed leaves the line (the grant record
    /// stays). How many went.
    fn evict(&mut self) -> usize {
        let now = self.now();
        let dead: Vec<String> = zset(self.w, LINE)
            .iter()
            .filter_map(|(m, v)| {
                let owner = m.strip_prefix("alive:")?;
                (order(v) <= now).then(|| owner.to_owned())
            })
            .collect();
        for d in &dead {
            self.dequeue(d);
        }
        dead.len()
    }

    /// Every dead waiter goes if the first waiter is dead (the release's and a free lock's
    /// acquire's eviction); dead waiters behind a live one stay. How many went.
    fn evict_if_first_dead(&mut self) -> usize {
        match self.head() {
            Some((_, deadline, _)) if order(&deadline) <= self.now() => self.evict(),
            _ => 0,
        }
    }

    /// The first waiter in line (lowest ticket), its heartbeat deadline and its first lease, if
    /// it asked for one; one without a heartbeat cannot prove it lives, and goes.
    fn head(&mut self) -> Option<(String, V, Option<i64>)> {
        loop {
            let first = in_order(self.w).into_iter().next()?;
            let line = zset(self.w, LINE);
            if let Some(deadline) = line.get(&alive(&first)) {
                let first_lease = line.get(&leased(&first)).map(order);
                return Some((first, deadline.clone(), first_lease));
            }
            self.dequeue(&first);
        }
    }

    /// The line lives at least `ms` more; it is never shortened.
    fn keep(&mut self, ms: i64) {
        extend_or_set(self.w, LINE, ms);
    }

    /// The free lock granted to `first`, which asked for it: its token minted, out of line, its
    /// hold written for `lease` ms, the grant record (replacing any earlier one) living as
    /// long, and `<field>=<token>` on the fair channel.
    fn grant(&mut self, first: &str, lease: i64, grace: i64) {
        let token = mint(self.w, COUNTER, grace, self.clock)
            .expect("the model never writes over the counter");
        let (record, text) = match token {
            R::Int(t) => (V::Is(format!("{first}={t}")), t.to_string()),
            R::Within(lo, hi) => (
                V::Tagged(format!("{first}="), lo, hi),
                format!("[{lo},{hi}]"),
            ),
            other => panic!("a token, not {other:?}"),
        };
        self.dequeue(first);
        self.w.hset(LOCK, first, V::int(1));
        self.w.pexpire(LOCK, lease);
        self.w.set(GRANT, record, Some(lease), false);
        self.publish(FAIR_CHANNEL, format!("{first}={text}"));
    }

    /// The free lock goes to the first live waiter if it asked for it, its first lease cut at
    /// its heartbeat deadline (`grant`). One that did not ask is told (`<field>`) if `tell`.
    /// Returns the first waiter, if any. `free`: the lock was just seen missing.
    fn pass_on(&mut self, grace: i64, tell: bool, free: bool) -> Option<String> {
        if !free && self.w.exists(LOCK) {
            return None;
        }
        let (first, deadline, first_lease) = self.head()?;
        match first_lease {
            Some(first_lease) if first_lease > 0 => {
                // What is left of its deadline (one this script set counts from the same
                // `now`, the earliest of its bounds).
                let lease = first_lease.min(order(&deadline) - self.now());
                self.grant(&first, lease, grace);
            }
            _ if tell => self.publish(FAIR_CHANNEL, first.clone()),
            _ => {}
        }
        Some(first)
    }

    /// The waiter's ticket, its deadline `heartbeat` ms from now and its first lease (if it
    /// asks for one) in the line; a first lease it asked for earlier stays if it asks for none.
    fn enter(&mut self, field: &str, ticket: V, w: &Waiting) {
        self.w.zadd(LINE, field, ticket);
        let deadline = self.after_now(w.heartbeat);
        self.w.zadd(LINE, &alive(field), deadline);
        if w.first_lease > 0 {
            self.w.zadd(LINE, &leased(field), V::int(w.first_lease));
        }
    }

    /// A new ticket: the server's clock in µs, or one past the last ticket in line if that is
    /// not below it (tickets only rise while a line lasts).
    fn next_ticket(&self) -> V {
        let last = zset(self.w, LINE)
            .iter()
            .filter(|(m, _)| is_ticket(m))
            .map(|(_, v)| order(v))
            .max();
        let (lo, hi) = (self.clock.before_us, self.clock.after_us);
        match last {
            Some(last) if last + 1 >= hi => V::int(last + 1),
            Some(last) if last + 1 > lo => V::Within(last + 1, hi),
            _ => V::Within(lo, hi),
        }
    }

    /// `fair_acquire.lua`.
    fn acquire(&mut self, a: &Attempt) -> R {
        if let Err(e) = ensure_lock(self.w, LOCK) {
            return e;
        }
        let field = a.field.as_str();
        if matches!(self.w.hget(LOCK, field), Ok(Some(_))) {
            // Its hold was written by a handoff, whose grant record names it while that lease
            // lasts.
            return match self.granted(field) {
                Some(token) => R::Array(vec![R::Int(3), as_reply(&token), self.pttl()]),
                None => R::Err("ERR"),
            };
        }
        // While the lock is held, nobody is evicted: a dead waiter harms nobody until it is
        // first. While it is free, every dead waiter goes if the first one is dead.
        let free = !self.w.exists(LOCK);
        let evicted = if free { self.evict_if_first_dead() } else { 0 };
        if let Some(w) = &a.wait {
            let in_line = |at: &Self, f: &str| zset(at.w, LINE).contains_key(f);
            if let Some(old) = &w.replaces {
                if w.ticket > 0 && old != field && !in_line(self, field) && in_line(self, old) {
                    // Takes the retired field's place at once, with its ticket.
                    self.dequeue(old);
                    self.enter(field, V::int(w.ticket), w);
                }
            }
        }
        let first = if free { self.head() } else { None };
        if free && first.as_ref().is_none_or(|(f, _, _)| f == field) {
            let token = match mint(self.w, COUNTER, a.grace, self.clock) {
                Ok(t) => t,
                Err(e) => return e,
            };
            self.dequeue(field);
            // The hold of the waiter handed the lock last has ended.
            self.w.del(GRANT);
            self.w.hset(LOCK, field, V::int(1));
            self.w.pexpire(LOCK, a.lease);
            return R::Array(vec![R::Int(1), token]);
        }
        let (bound, behind) = if free {
            // Someone else is first: it is handed the lock if it asked, else told if the
            // eviction may have made it first just now.
            self.pass_on(a.grace, evicted > 0, false);
            if self.w.exists(LOCK) {
                (self.pttl(), 0)
            } else {
                let (_, deadline, _) = first.expect("someone is first");
                let d = order(&deadline);
                (
                    R::Within(
                        d - self.clock.after_us / 1000 + 1,
                        d - self.clock.before_us / 1000 + 1,
                    ),
                    1,
                )
            }
        } else {
            (self.pttl(), 0)
        };
        let Some(w) = &a.wait else {
            return R::Array(vec![
                R::Int(0),
                bound,
                R::Int(0),
                R::Int(-1),
                R::Int(behind),
            ]);
        };
        let in_line = zset(self.w, LINE).get(field).cloned();
        let ticket = match in_line {
            // In line already (a first join whose reply was lost keeps its place too).
            Some(t) => t,
            // A first join draws a new ticket.
            None if w.ticket == 0 && !w.joined => self.next_ticket(),
            None if w.joined => {
                // Out of line, and never put back under this field: the caller rejoins under
                // a new one.
                return R::Array(vec![
                    R::Int(0),
                    bound,
                    R::Int(w.ticket),
                    R::Int(-2),
                    R::Int(behind),
                ]);
            }
            // Back in line with the ticket it was given: ahead of those who came later (their
            // tickets are later clock readings, or past it).
            None => V::int(w.ticket),
        };
        self.enter(field, ticket.clone(), w);
        self.keep(w.heartbeat + 1000);
        // In line (0), not its place in line.
        R::Array(vec![
            R::Int(0),
            bound,
            as_reply(&ticket),
            R::Int(0),
            R::Int(behind),
        ])
    }

    /// `fair_release.lua`: one count or the whole hold; once the lock is free, handed to (or
    /// told to) the first live waiter, or Redisson's `0` when nobody is in line. The
    /// releaser's grant record goes with its hold; a lock freed without a handoff leaves none.
    fn release(&mut self, field: &str, all: bool, grace: i64) -> R {
        let count = match self.w.hget(LOCK, field) {
            Err(e) => return e,
            Ok(v) => v.map(|v| v.as_int().unwrap()),
        };
        let released = match count {
            None => None,
            Some(c) if !all && c > 1 => {
                self.w.hset(LOCK, field, V::int(c - 1));
                Some(0)
            }
            Some(_) => {
                self.w.hdel(LOCK, field);
                Some(1)
            }
        };
        match released {
            None => {
                // The hold is gone: its grant record too, if a handoff gave it the lock.
                if self.granted(field).is_some() {
                    self.w.del(GRANT);
                }
                return R::Nil;
            }
            Some(0) => return R::Int(0),
            _ => {}
        }
        if self.w.exists(LOCK) {
            // Another field keeps the lock.
            if self.granted(field).is_some() {
                self.w.del(GRANT);
            }
            return R::Int(0);
        }
        self.evict_if_first_dead();
        match self.head() {
            // The releaser in line under the same field asked for its first lease while it
            // waited, not for this hold: it is told.
            Some((first, deadline, Some(first_lease))) if first_lease > 0 && first != field => {
                let lease = first_lease.min(order(&deadline) - self.now());
                self.grant(&first, lease, grace);
            }
            Some((first, _, _)) => {
                self.w.del(GRANT);
                self.publish(FAIR_CHANNEL, first);
            }
            None => {
                self.w.del(GRANT);
                self.publish(CHANNEL, "0".into());
            }
        }
        R::Int(1)
    }

    /// `fair_heartbeat.lua`: per waiter, after evicting the dead: 1 in line (deadline pushed
    /// back), 2 first while the lock is free, 0 out of line; a free lock with another waiter
    /// first goes to it (or it is told, if the eviction may have made it first).
    fn heartbeat(&mut self, fields: &[String], heartbeat: i64, grace: i64) -> R {
        let mut out = Vec::new();
        for field in fields {
            let evicted = self.evict();
            let mut r = 0;
            if zset(self.w, LINE).contains_key(field) {
                let deadline = self.after_now(heartbeat);
                self.w.zadd(LINE, &alive(field), deadline);
                self.keep(heartbeat + 1000);
                r = 1;
            }
            if !self.w.exists(LOCK) {
                match self.head() {
                    Some((first, _, _)) if first == *field => r = 2,
                    Some(_) => {
                        self.pass_on(grace, evicted > 0, false);
                    }
                    None => {}
                }
            }
            out.push(R::Int(r));
        }
        R::Array(out)
    }

    /// `fair_leave.lua`: out of the line; a grant it had not taken is released (2), with its
    /// grant record; if it was first, or handed the lock, or the dead went, the next is handed
    /// the lock or told.
    fn leave(&mut self, field: &str, grace: i64) -> R {
        let evicted = self.evict();
        // A lock of another type fails here, after the eviction.
        let handed = match self.w.hget(LOCK, field) {
            Err(e) => return e,
            Ok(v) => v.is_some(),
        };
        if handed {
            self.w.hdel(LOCK, field);
            self.w.del(GRANT);
        }
        let was_first = self.head().is_some_and(|(f, _, _)| f == field);
        let removed = self.dequeue(field);
        if was_first || evicted > 0 || handed {
            self.pass_on(grace, true, false);
        }
        R::Int(if handed { 2 } else { removed as i64 })
    }

    /// `fair_force_unlock.lua` with the line's keys: the grant record goes with the lock; the
    /// first live waiter is told (not handed it), and Redisson's `0` goes out.
    fn force_unlock(&mut self) -> R {
        if !self.w.exists(LOCK) {
            return R::Int(0);
        }
        if let Err(e) = ensure_lock(self.w, LOCK) {
            return e;
        }
        self.w.del(GRANT);
        self.w.del(LOCK);
        self.evict();
        if let Some((first, _, _)) = self.head() {
            self.publish(FAIR_CHANNEL, first);
        }
        self.publish(CHANNEL, "0".into());
        R::Int(1)
    }
}

/// A number the model holds: exact, or the lowest of its bounds (a value from the clock,
/// compared only with values well apart from it).
fn order(v: &V) -> i64 {
    match v {
        V::Is(s) => s
            .parse()
            .unwrap_or_else(|_| panic!("model bug: `{s}` is not a number")),
        V::Within(lo, _) => *lo,
        V::Tagged(..) => panic!("model bug: {v:?} is not a number"),
    }
}

/// A number the model holds, as a reply.
fn as_reply(v: &V) -> R {
    match v {
        V::Within(lo, hi) => R::Within(*lo, *hi),
        _ => R::Int(order(v)),
    }
}

/// Lengthens `key`'s life to `ms` if it has less, gives it `ms` if it has none (PEXPIRE GT,
/// then NX); never shortens it.
fn extend_or_set(w: &mut World, key: &str, ms: i64) {
    let longer = match w.keys.get(key).map(|k| k.ttl.left()) {
        None => false,
        Some(None) => true,
        Some(Some(left)) => left < ms,
    };
    if longer {
        w.pexpire(key, ms);
    }
}

/// The sorted set at `key` (empty when missing). The line is never written over.
fn zset<'a>(w: &'a World, key: &str) -> std::borrow::Cow<'a, BTreeMap<String, V>> {
    match w.zset(key) {
        Ok(Some(z)) => std::borrow::Cow::Borrowed(z),
        Ok(None) => std::borrow::Cow::Owned(BTreeMap::new()),
        Err(_) => panic!("model bug: {key} is not a sorted set"),
    }
}

/// The waiters in line by ticket, then by field (ZRANGE's order).
fn in_order(w: &World) -> Vec<String> {
    let mut all: Vec<(i64, String)> = zset(w, LINE)
        .iter()
        .filter(|(m, _)| is_ticket(m))
        .map(|(m, v)| (order(v), m.clone()))
        .collect();
    all.sort();
    all.into_iter().map(|(_, m)| m).collect()
}

#[test]
fn the_fair_locks_scripts_do_what_its_model_does() {
    let bench = crate::bench::Bench::start();
    let cases = crate::run::cases(64);
    if let Err(e) = check::<FairLock>(&bench, &Scripts::default(), cases, 32, 2000) {
        panic!("{e}");
    }
}

/// The fair lock's mutants of the scripts `pick` chooses (by name). A mutant of a lib file
/// names a script built with it; its first occurrence there is the one changed.
fn caught(pick: impl Fn(&str) -> bool) {
    use relock::lua::*;
    let bench = crate::bench::Bench::start();
    let mutants = [
        // fair_acquire.lua.
        mutant(
            "FAIR_ACQUIRE",
            FAIR_ACQUIRE,
            "if holds[i] == field then",
            "if holds[i] ~= field then",
        ),
        mutant(
            "FAIR_ACQUIRE",
            FAIR_ACQUIRE,
            "(first == false or first == field)",
            "(first == false or first ~= field)",
        ),
        mutant(
            "FAIR_ACQUIRE",
            FAIR_ACQUIRE,
            "if ARGV[9] == '1' then",
            "if ARGV[9] ~= '1' then",
        ),
        mutant(
            "FAIR_ACQUIRE",
            FAIR_ACQUIRE,
            "retired ~= '' and retired ~= field",
            "retired ~= '' and retired == field",
        ),
        mutant(
            "FAIR_ACQUIRE",
            FAIR_ACQUIRE,
            "keep(heartbeat + 1000, q, fresh)",
            "keep(heartbeat + 2000, q, fresh)",
        ),
        // A join that takes the line for one it made: its plain PEXPIRE shortens a line that
        // others keep longer.
        mutant(
            "FAIR_ACQUIRE",
            FAIR_ACQUIRE,
            "keep(heartbeat + 1000, q, fresh)",
            "keep(heartbeat + 1000, q, true)",
        ),
        mutant(
            "FAIR_ACQUIRE",
            FAIR_ACQUIRE,
            "redis.call('pexpire', KEYS[1], lease)",
            "redis.call('pexpire', KEYS[1], lease + 5000)",
        ),
        // lib/queue.lua's keep, through the join.
        mutant(
            "FAIR_ACQUIRE",
            FAIR_ACQUIRE,
            "if redis.call('pexpire', q.key, ms, 'GT') == 0 then",
            "if redis.call('pexpire', q.key, ms, 'LT') == 0 then",
        ),
        mutant(
            "FAIR_ACQUIRE",
            FAIR_ACQUIRE,
            "redis.call('pexpire', q.key, ms, 'NX')",
            "redis.call('pexpire', q.key, ms, 'XX')",
        ),
        // A later join drawn as a first one.
        mutant(
            "FAIR_ACQUIRE",
            FAIR_ACQUIRE,
            "if given == 0 and ARGV[9] ~= '1' then",
            "if given ~= 0 and ARGV[9] ~= '1' then",
        ),
        // The eviction while the lock is free: looked for when the first waiter is alive
        // instead of dead.
        mutant(
            "FAIR_ACQUIRE",
            FAIR_ACQUIRE,
            "if first and tonumber(alive) <= clock() then",
            "if first and tonumber(alive) > clock() then",
        ),
        // The ticket rule: one past the last ticket in line whenever the clock is ahead of it
        // (always), instead of only when it is not.
        mutant(
            "FAIR_ACQUIRE",
            FAIR_ACQUIRE,
            "elseif tonumber(last[2]) >= ticket then",
            "elseif tonumber(last[2]) < ticket then",
        ),
        // The first lease written under another member than the one the head reads.
        mutant(
            "FAIR_ACQUIRE",
            FAIR_ACQUIRE,
            "e[6] = 'lease:' .. field",
            "e[6] = 'lease;' .. field",
        ),
        // lib/queue.lua's head, through the acquire: the lowest score of the line, a first
        // lease or a deadline, taken for the first waiter.
        mutant(
            "FAIR_ACQUIRE",
            FAIR_ACQUIRE,
            "redis.call('zrange', q.key, TICKET_MIN, '+inf', 'byscore', 'limit', 0, 1)",
            "redis.call('zrange', q.key, 0, '+inf', 'byscore', 'limit', 0, 1)",
        ),
        // lib/queue.lua's granted, through the attempt that reports a grant whose message was
        // lost.
        mutant(
            "FAIR_ACQUIRE",
            FAIR_ACQUIRE,
            "if who == owner then",
            "if who ~= owner then",
        ),
        // fair_release.lua.
        mutant(
            "FAIR_RELEASE",
            FAIR_RELEASE,
            "if redis.call('exists', KEYS[1]) == 1 then",
            "if redis.call('exists', KEYS[1]) == 0 then",
        ),
        mutant(
            "FAIR_RELEASE",
            FAIR_RELEASE,
            "if first == field then",
            "if first ~= field then",
        ),
        mutant(
            "FAIR_RELEASE",
            FAIR_RELEASE,
            "if not (first_lease and first_lease > 0) then",
            "if not (first_lease and first_lease < 0) then",
        ),
        mutant(
            "FAIR_RELEASE",
            FAIR_RELEASE,
            "ARGV[3], first,\n  math.min(first_lease",
            "ARGV[3], first,\n  math.max(first_lease",
        ),
        // The releaser's grant record kept when the lock is freed without a handoff.
        mutant(
            "FAIR_RELEASE",
            FAIR_RELEASE,
            "redis.call('del', q.grant)\n  if not first then",
            "if not first then",
        ),
        // lib/handoff.lua's grant, through the release: the record outlives the lease, and
        // (lib/queue.lua's dequeue, which it calls) the first lease of the waiter handed the
        // lock is left in the line.
        mutant(
            "FAIR_RELEASE",
            FAIR_RELEASE,
            "redis.call('set', q.grant, first .. '=' .. t, 'px', lease)",
            "redis.call('set', q.grant, first .. '=' .. t, 'px', lease + 5000)",
        ),
        mutant(
            "FAIR_RELEASE",
            FAIR_RELEASE,
            "redis.call('zrem', q.key, owner, 'alive:' .. owner, 'lease:' .. owner)",
            "redis.call('zrem', q.key, owner, 'alive:' .. owner)",
        ),
        // fair_heartbeat.lua.
        mutant(
            "FAIR_HEARTBEAT",
            FAIR_HEARTBEAT,
            "if first == field then",
            "if first ~= field then",
        ),
        mutant(
            "FAIR_HEARTBEAT",
            FAIR_HEARTBEAT,
            "if redis.call('exists', lock) == 0 then",
            "if redis.call('exists', lock) == 1 then",
        ),
        mutant(
            "FAIR_HEARTBEAT",
            FAIR_HEARTBEAT,
            "keep(heartbeat + 1000, q, false)",
            "keep(heartbeat + 2000, q, false)",
        ),
        mutant(
            "FAIR_HEARTBEAT",
            FAIR_HEARTBEAT,
            "keep(heartbeat + 1000, q, false)",
            "keep(heartbeat + 1000, q, true)",
        ),
        mutant(
            "FAIR_HEARTBEAT",
            FAIR_HEARTBEAT,
            "now + heartbeat), 'alive:' .. field)",
            "now + heartbeat), 'alive;' .. field)",
        ),
        // lib/queue.lua's eviction, through the heartbeat: a waiter dead for less than 3 s left
        // in line (time passes 1.5 s beyond a deadline), and first leases taken for deadlines.
        mutant(
            "FAIR_HEARTBEAT",
            FAIR_HEARTBEAT,
            "redis.call('zrange', q.key, DEADLINE_MIN, now, 'byscore')",
            "redis.call('zrange', q.key, DEADLINE_MIN, now - 3000, 'byscore')",
        ),
        mutant(
            "FAIR_HEARTBEAT",
            FAIR_HEARTBEAT,
            "redis.call('zrange', q.key, DEADLINE_MIN, now, 'byscore')",
            "redis.call('zrange', q.key, 0, now, 'byscore')",
        ),
        mutant(
            "FAIR_HEARTBEAT",
            FAIR_HEARTBEAT,
            "local owner = string.sub(member, 7)",
            "local owner = string.sub(member, 8)",
        ),
        // fair_leave.lua.
        mutant(
            "FAIR_LEAVE",
            FAIR_LEAVE,
            "if was_first or evicted > 0 or handed == 1 then",
            "if was_first or evicted > 0 or handed ~= 1 then",
        ),
        mutant(
            "FAIR_LEAVE",
            FAIR_LEAVE,
            "if handed == 1 then\n  return 2",
            "if handed ~= 1 then\n  return 2",
        ),
        mutant(
            "FAIR_LEAVE",
            FAIR_LEAVE,
            "if handed == 1 then\n  -- Its grant record",
            "if handed ~= 1 then\n  -- Its grant record",
        ),
        // lib/queue.lua's head, through the leave: the deadline and the first lease read
        // from each other's member.
        mutant(
            "FAIR_LEAVE",
            FAIR_LEAVE,
            "'zmscore', q.key, 'alive:' .. first, 'lease:' .. first",
            "'zmscore', q.key, 'lease:' .. first, 'alive:' .. first",
        ),
        // fair_force_unlock.lua: the grant record kept, the line not told.
        mutant(
            "FAIR_FORCE_UNLOCK",
            FAIR_FORCE_UNLOCK,
            "redis.call('del', q.grant)\nredis.call('del', KEYS[1])",
            "redis.call('del', KEYS[1])",
        ),
        mutant(
            "FAIR_FORCE_UNLOCK",
            FAIR_FORCE_UNLOCK,
            "wake_head(KEYS[1], ARGV[3], q, ARGV[1])",
            "local _ = q",
        ),
    ];
    // A mutant of the line shows only after a chain of steps (a holder, waiters, a release, a
    // lease that runs out): longer sequences, and more of them, than the default.
    let mutants: Vec<_> = mutants.into_iter().filter(|m| pick(m.script)).collect();
    assert!(!mutants.is_empty());
    let alive = survivors_in::<FairLock>(&bench, &mutants, 1000, 48);
    assert!(
        alive.is_empty(),
        "mutants the model test did not catch: {alive:#?}"
    );
}

// One test per script, so that each runs in well under half a minute.

#[test]
fn the_fair_locks_fair_acquire_mutants_are_caught() {
    caught(|s| s == "FAIR_ACQUIRE");
}

#[test]
fn the_fair_locks_fair_heartbeat_mutants_are_caught() {
    caught(|s| s == "FAIR_HEARTBEAT");
}

#[test]
fn the_fair_locks_fair_leave_mutants_are_caught() {
    caught(|s| s == "FAIR_LEAVE");
}

#[test]
fn the_fair_locks_fair_release_mutants_are_caught() {
    caught(|s| s == "FAIR_RELEASE");
}

#[test]
fn the_fair_locks_force_unlock_mutants_are_caught() {
    caught(|s| s == "FAIR_FORCE_UNLOCK");
}

/// A holder (holding for a minute) and two waiters in line, the first with a heartbeat of
/// `first_heartbeat` ms, the second of `second_heartbeat` (both past the model's margin, so that
/// no step before the release ages past them); time passes beyond the sooner of the two
/// deadlines (the other waiter keeps the line's keys alive), then the holder releases.
fn a_release_with_a_dead_waiter(first_heartbeat: i64, second_heartbeat: i64) -> Vec<Step<Op>> {
    let grace = 300_000;
    let wait = |who, heartbeat| {
        Step::Op(Op::Wait {
            who,
            lease: 30_000,
            heartbeat,
            handoff: true,
            rejoin: false,
            grace,
        })
    };
    vec![
        Step::Op(Op::Try {
            who: 0,
            lease: 60_000,
            grace,
        }),
        wait(1, first_heartbeat),
        wait(2, second_heartbeat),
        // The soonest deadline: the sooner heartbeat's.
        Step::Age { nth: 0, past: true },
        Step::Op(Op::ReleaseHeld { all: true, grace }),
    ]
}

/// Runs `steps` through the scripts, which must do what the model does, then through `mutated`,
/// which must not.
fn shows(bench: &Bench, mutated: &Scripts, what: &str, steps: &[Step<Op>]) {
    if let Err(e) = replay::<FairLock>(bench, &Scripts::default(), steps) {
        panic!("the scripts differ from the model on {what}: {e}");
    }
    assert!(
        replay::<FairLock>(bench, mutated, steps).is_err(),
        "the mutant was not caught on {what}"
    );
}

/// A holder (holding for a minute) releases while one waiter (asking for a handoff of 100 s)
/// is in line: the waiter holds the lock, and the grant record names it for 100 s. Then `then`.
fn a_handoff_then(then: Vec<Step<Op>>) -> Vec<Step<Op>> {
    let grace = 300_000;
    let mut steps = vec![
        Step::Op(Op::Try {
            who: 0,
            lease: 60_000,
            grace,
        }),
        Step::Op(Op::Wait {
            who: 1,
            lease: 100_000,
            heartbeat: 100_000,
            handoff: true,
            rejoin: false,
            grace,
        }),
        Step::Op(Op::ReleaseHeld { all: true, grace }),
    ];
    steps.extend(then);
    steps
}

/// The grant record's lifetime at its ends that random sequences reach rarely (a holder handed
/// the lock must re-enter, or its lock be written over, before the step that drops the
/// record): a release of one count of a nested hold keeps it, a release whose hold was written
/// over drops it, and an acquire afresh (the lock written over expired) drops it.
#[test]
fn the_fair_locks_grant_record_mutants_are_caught() {
    let bench = crate::bench::Bench::start();
    let grace = 300_000;
    let release = Scripts::default().mutate(
        "FAIR_RELEASE",
        relock::lua::FAIR_RELEASE,
        "if released ~= 0 and granted(q, field) then",
        "if released == 0 and granted(q, field) then",
    );
    shows(
        &bench,
        &release,
        "one count of a nested hold released",
        &a_handoff_then(vec![
            Step::Op(Op::Reenter {
                who: 1,
                lease: 30_000,
            }),
            Step::Op(Op::ReleaseHeld { all: false, grace }),
        ]),
    );
    shows(
        &bench,
        &release,
        "a release of a hold written over",
        &a_handoff_then(vec![
            Step::Op(Op::Clobber(Clobber::DataHash)),
            Step::Op(Op::Release {
                who: 1,
                all: true,
                grace,
            }),
        ]),
    );
    let acquire = Scripts::default().mutate(
        "FAIR_ACQUIRE",
        relock::lua::FAIR_ACQUIRE,
        "redis.call('del', q.grant)\n  redis.call('hset', KEYS[1], field, 1)",
        "redis.call('hset', KEYS[1], field, 1)",
    );
    shows(
        &bench,
        &acquire,
        "an acquire afresh",
        &a_handoff_then(vec![
            Step::Op(Op::Clobber(Clobber::DataHash)),
            // The soonest deadline: the written-over lock's minute.
            Step::Age { nth: 0, past: true },
            Step::Op(Op::Try {
                who: 2,
                lease: 30_000,
                grace,
            }),
        ]),
    );
}

/// The release's eviction done when the first waiter is alive instead of dead, shown on the two
/// lines it gets wrong: a dead first waiter (handed the lock instead of evicted, and the live
/// one behind it passed over) and a dead waiter behind a live first one (evicted at once
/// instead of when it is first). Random sequences reach them rarely (the holder must still hold
/// while a second waiter keeps the line alive), so they are given here.
#[test]
fn the_fair_locks_release_eviction_mutant_is_caught() {
    let bench = crate::bench::Bench::start();
    let mutated = Scripts::default().mutate(
        "FAIR_RELEASE",
        relock::lua::FAIR_RELEASE,
        "if first and tonumber(alive) <= now then",
        "if first and tonumber(alive) > now then",
    );
    for (what, steps) in [
        (
            "a dead first waiter",
            a_release_with_a_dead_waiter(5_000, 30_000),
        ),
        (
            "a dead waiter behind a live one",
            a_release_with_a_dead_waiter(30_000, 5_000),
        ),
    ] {
        shows(&bench, &mutated, what, &steps);
    }
}
