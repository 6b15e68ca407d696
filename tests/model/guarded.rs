//! Guarded writes and reads against their model: a batch of commands on data keys runs only
//! while the hold's field is in the lock hash (and a read hold's timeout key lives); a write
//! needs a hold that excludes every other; a read runs flagged `no-writes`. The holds are
//! written by the test itself (a plain hold, a read-write lock's write or read hold), and lost
//! by expiry, by a field taken out, by a read hold's timeout key gone, or by the lock's key
//! written over.

use proptest::prelude::*;

use crate::mutants::{mutant, survivors};
use crate::run::{check, Call, Clock, Expected, Model, Scripts};
use crate::shape::{clobber, lease, Clobber};
use crate::world::{Data, World, R, V};

const LOCK: &str = "{g}";
/// The lock's per-hold prefix (Redisson's `suffixName`: the name has its own hash tag).
const PREFIX: &str = "{g}:";
const DATA: [&str; 2] = ["{g}:a", "{g}:b"];
const FIELDS: [&str; 2] = ["f1", "f2"];
const VALUES: [&str; 3] = ["1", "7", "x"];

/// What kind of hold a holder has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// A plain (or fair) lock's hold: its field alone.
    Plain,
    /// A read-write lock's write hold: `…:write`, beside `mode`.
    Write,
    /// A read-write lock's read hold: its field beside `mode`, and its timeout key.
    Read,
}

/// One command of a batch, on `DATA[key]`.
#[derive(Debug, Clone)]
pub enum Cmd {
    Set {
        key: usize,
        value: usize,
    },
    Incr {
        key: usize,
    },
    HSet {
        key: usize,
        field: usize,
        value: usize,
    },
    Get {
        key: usize,
    },
    HGet {
        key: usize,
        field: usize,
    },
    Del {
        key: usize,
    },
}

impl Cmd {
    fn key(&self) -> &'static str {
        match self {
            Cmd::Set { key, .. }
            | Cmd::Incr { key }
            | Cmd::HSet { key, .. }
            | Cmd::Get { key }
            | Cmd::HGet { key, .. }
            | Cmd::Del { key } => DATA[*key],
        }
    }

    /// Its words, name first, as `Commands` sends them.
    fn words(&self) -> Vec<&'static str> {
        let k = self.key();
        match self {
            Cmd::Set { value, .. } => vec!["SET", k, VALUES[*value]],
            Cmd::Incr { .. } => vec!["INCR", k],
            Cmd::HSet { field, value, .. } => vec!["HSET", k, FIELDS[*field], VALUES[*value]],
            Cmd::Get { .. } => vec!["GET", k],
            Cmd::HGet { field, .. } => vec!["HGET", k, FIELDS[*field]],
            Cmd::Del { .. } => vec!["DEL", k],
        }
    }

    fn writes(&self) -> bool {
        !matches!(self, Cmd::Get { .. } | Cmd::HGet { .. })
    }

    /// What it replies and does to `world`; `Err` with the error that stops the batch.
    fn run(&self, world: &mut World) -> Result<R, R> {
        let k = self.key();
        let data = world.keys.get(k).map(|key| key.data.clone());
        match (self, data) {
            (Cmd::Set { value, .. }, _) => {
                world.set(k, V::str(VALUES[*value]), None, false);
                Ok(R::Str("OK".into()))
            }
            (Cmd::Incr { .. }, None) => {
                world.set(k, V::int(1), None, false);
                Ok(R::Int(1))
            }
            (Cmd::Incr { .. }, Some(Data::Str(v))) => match v.as_int() {
                Some(n) => {
                    world.set(k, V::int(n + 1), None, true);
                    Ok(R::Int(n + 1))
                }
                None => Err(R::Err("ERR")),
            },
            (Cmd::HSet { field, value, .. }, None | Some(Data::Hash(_))) => {
                let new = !matches!(world.hget(k, FIELDS[*field]), Ok(Some(_)));
                world.hset(k, FIELDS[*field], V::str(VALUES[*value]));
                Ok(R::Int(new as i64))
            }
            (Cmd::Get { .. }, None) => Ok(R::Nil),
            (Cmd::Get { .. }, Some(Data::Str(v))) => Ok(R::Str(v.as_str().unwrap().to_owned())),
            (Cmd::HGet { field, .. }, None | Some(Data::Hash(_))) => {
                Ok(match world.hget(k, FIELDS[*field]).unwrap() {
                    Some(v) => R::Str(v.as_str().unwrap().to_owned()),
                    None => R::Nil,
                })
            }
            (Cmd::Del { .. }, _) => Ok(R::Int(world.del(k) as i64)),
            _ => Err(R::Err("WRONGTYPE")),
        }
    }
}

fn cmd() -> impl Strategy<Value = Cmd> {
    let key = 0usize..2;
    let field = 0usize..2;
    let value = 0usize..3;
    prop_oneof![
        (key.clone(), value.clone()).prop_map(|(key, value)| Cmd::Set { key, value }),
        key.clone().prop_map(|key| Cmd::Incr { key }),
        (key.clone(), field.clone(), value).prop_map(|(key, field, value)| Cmd::HSet {
            key,
            field,
            value
        }),
        key.clone().prop_map(|key| Cmd::Get { key }),
        (key.clone(), field).prop_map(|(key, field)| Cmd::HGet { key, field }),
        key.prop_map(|key| Cmd::Del { key }),
    ]
}

#[derive(Debug, Clone)]
pub enum Op {
    /// A fresh hold for holder `who` (0-2): a read hold joins a read-write lock held for
    /// reading; any other hold replaces what the lock's key held.
    Take {
        who: usize,
        how: How,
        lease: i64,
    },
    /// The hold's field taken out of the hash (a release, another program).
    Drop {
        who: usize,
    },
    /// A read hold's timeout key gone (expired before its field was dropped).
    LoseTimeout {
        who: usize,
    },
    /// A guarded write (`read`: a guarded read) of `cmds` under the holder's current hold.
    Guarded {
        who: usize,
        read: bool,
        cmds: Vec<Cmd>,
    },
    Clobber(Clobber),
}

#[derive(Debug)]
pub struct Guarded {
    /// Hold numbers handed out.
    seq: u32,
    /// Each holder's current hold: its number (0: none yet, a field no hold has) and kind.
    holds: [(u32, How); 3],
}

impl Default for Guarded {
    fn default() -> Self {
        Guarded {
            seq: 0,
            holds: [(0, How::Plain); 3],
        }
    }
}

impl Guarded {
    fn field(&self, who: usize) -> String {
        let (n, how) = self.holds[who];
        match how {
            How::Write => format!("c{who}:{n}:write"),
            How::Plain | How::Read => format!("c{who}:{n}"),
        }
    }

    fn timeout(&self, who: usize) -> String {
        format!("{PREFIX}{}:rwlock_timeout:1", self.field(who))
    }

    /// The keys whose life is the hold's lease, the lock's first (`HoldKind::lease_keys`).
    fn lease_keys(&self, who: usize) -> Vec<String> {
        match self.holds[who].1 {
            How::Read => vec![LOCK.to_owned(), self.timeout(who)],
            How::Plain | How::Write => vec![LOCK.to_owned()],
        }
    }
}

impl Model for Guarded {
    type Op = Op;

    fn op() -> BoxedStrategy<Op> {
        let who = 0usize..3;
        let how = prop_oneof![Just(How::Plain), Just(How::Write), Just(How::Read)];
        prop_oneof![
            4 => (who.clone(), how, lease()).prop_map(|(who, how, lease)| Op::Take { who, how, lease }),
            1 => who.clone().prop_map(|who| Op::Drop { who }),
            1 => who.clone().prop_map(|who| Op::LoseTimeout { who }),
            8 => (who, any::<bool>(), proptest::collection::vec(cmd(), 1..4))
                .prop_map(|(who, read, cmds)| Op::Guarded { who, read, cmds }),
            1 => clobber().prop_map(Op::Clobber),
        ]
        .boxed()
    }

    fn call(&mut self, scripts: &Scripts, op: &Op) -> Call {
        use relock::lua;
        match op {
            Op::Take { who, how, lease } => {
                self.seq += 1;
                self.holds[*who] = (self.seq, *how);
                let mode = match how {
                    How::Plain => "",
                    How::Write => "write",
                    How::Read => "read",
                };
                let lua = "if ARGV[3] ~= 'read' \
                               or redis.pcall('hget', KEYS[1], 'mode') ~= 'read' then \
                             redis.call('del', KEYS[1]) \
                           end \
                           if ARGV[3] ~= '' then redis.call('hset', KEYS[1], 'mode', ARGV[3]) end \
                           redis.call('hset', KEYS[1], ARGV[1], 1) \
                           redis.call('pexpire', KEYS[1], ARGV[2]) \
                           if ARGV[3] == 'read' then \
                             redis.call('set', KEYS[2], 1, 'px', ARGV[2]) \
                           end \
                           return 1";
                Call::script(
                    lua.into(),
                    &[LOCK, &self.timeout(*who)],
                    &[&self.field(*who), &lease.to_string(), mode],
                )
            }
            Op::Drop { who } => {
                let lua = "if redis.call('type', KEYS[1]).ok ~= 'hash' then return 0 end \
                           return redis.call('hdel', KEYS[1], ARGV[1])";
                Call::script(lua.into(), &[LOCK], &[&self.field(*who)])
            }
            Op::LoseTimeout { who } => Call::script(
                "return redis.call('del', KEYS[1])".into(),
                &[&self.timeout(*who)],
                &[],
            ),
            Op::Guarded { who, read, cmds } => {
                // As `client::guarded::send` builds it: the lease keys, then the batch's
                // distinct keys; the field, how many other lease keys, whether the hold must
                // be exclusive, then the batch's words.
                let mut keys = self.lease_keys(*who);
                let others = keys.len() - 1;
                for c in cmds {
                    if !keys[1 + others..].iter().any(|k| k == c.key()) {
                        keys.push(c.key().to_owned());
                    }
                }
                let mut args = vec![
                    self.field(*who),
                    others.to_string(),
                    if *read { "0" } else { "1" }.to_owned(),
                    cmds.len().to_string(),
                ];
                for c in cmds {
                    let words = c.words();
                    args.push(words.len().to_string());
                    args.extend(words.iter().map(|w| w.to_string()));
                }
                let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let lua = if *read {
                    scripts.get("GUARDED_READ", lua::GUARDED_READ)
                } else {
                    scripts.get("GUARDED", lua::GUARDED)
                };
                Call::script(lua, &keys, &args)
            }
            Op::Clobber(c) => c.call(LOCK),
        }
    }

    fn expect(&mut self, world: &mut World, _clock: Clock, op: &Op) -> Expected {
        Expected::reply(match op {
            Op::Take { who, how, lease } => {
                let joins = *how == How::Read
                    && matches!(world.hget(LOCK, "mode"), Ok(Some(m)) if m.as_str() == Some("read"));
                if !joins {
                    world.del(LOCK);
                }
                match how {
                    How::Plain => {}
                    How::Write => world.hset(LOCK, "mode", V::str("write")),
                    How::Read => world.hset(LOCK, "mode", V::str("read")),
                }
                world.hset(LOCK, &self.field(*who), V::int(1));
                world.pexpire(LOCK, *lease);
                if *how == How::Read {
                    world.set(&self.timeout(*who), V::int(1), Some(*lease), false);
                }
                R::Int(1)
            }
            Op::Drop { who } => match world.hash(LOCK) {
                Ok(Some(_)) => R::Int(world.hdel(LOCK, &self.field(*who)) as i64),
                _ => R::Int(0),
            },
            Op::LoseTimeout { who } => R::Int(world.del(&self.timeout(*who)) as i64),
            Op::Guarded { who, read, cmds } => self.guarded(world, *who, *read, cmds),
            Op::Clobber(c) => c.expect(world, LOCK),
        })
    }
}

impl Guarded {
    /// `{1, reply…}` when the hold is here (and, for a write, excludes every other);
    /// `{0}` when it is not; `{2}` for a write under a hold that shares the lock; a failing
    /// command's error, with the commands before it applied.
    fn guarded(&self, world: &mut World, who: usize, read: bool, cmds: &[Cmd]) -> R {
        let field = self.field(who);
        match world.hget(LOCK, &field) {
            Err(e) => return e,
            Ok(None) => return R::Array(vec![R::Int(0)]),
            Ok(Some(_)) => {}
        }
        let shared = matches!(world.hget(LOCK, "mode"), Ok(Some(_))) && !field.ends_with(":write");
        if !read && shared {
            return R::Array(vec![R::Int(2)]);
        }
        if self.lease_keys(who)[1..].iter().any(|k| !world.exists(k)) {
            return R::Array(vec![R::Int(0)]);
        }
        let mut out = vec![R::Int(1)];
        for c in cmds {
            // A read runs flagged no-writes: the server refuses a command that writes.
            let r = if read && c.writes() {
                Err(R::Err("ERR"))
            } else {
                c.run(world)
            };
            match r {
                Ok(r) => out.push(r),
                Err(e) => return e,
            }
        }
        R::Array(out)
    }
}

#[test]
fn the_guarded_writes_scripts_do_what_its_model_does() {
    let bench = crate::bench::Bench::start();
    let cases = crate::run::cases(64);
    if let Err(e) = check::<Guarded>(&bench, &Scripts::default(), cases, 24, 2000) {
        panic!("{e}");
    }
}

#[test]
fn the_guarded_writes_mutants_are_caught() {
    use relock::lua::*;
    let bench = crate::bench::Bench::start();
    let mutants = [
        mutant(
            "GUARDED",
            GUARDED,
            "redis.call('hexists', KEYS[1], ARGV[1]) == 0",
            "redis.call('hexists', KEYS[1], ARGV[1]) == 1",
        ),
        mutant("GUARDED", GUARDED, "ARGV[3] == '1'", "ARGV[3] == '0'"),
        mutant(
            "GUARDED",
            GUARDED,
            "redis.call('hexists', KEYS[1], 'mode') == 1",
            "redis.call('hexists', KEYS[1], 'mode') == 0",
        ),
        mutant(
            "GUARDED",
            GUARDED,
            "and not string.match(ARGV[1], ':write$')",
            "and string.match(ARGV[1], ':write$')",
        ),
        // (The lease keys' check is the guarded read's below: a write names other lease keys
        // only for a read hold, whose hash has `mode`, so it is refused before them.)
        mutant("GUARDED", GUARDED, "if reply == nil", "if reply ~= nil"),
        // The script sets no TTL: a batch must leave the lock's lease as it was.
        mutant(
            "GUARDED",
            GUARDED,
            "local out = {1}",
            "redis.call('pexpire', KEYS[1], 5000) local out = {1}",
        ),
        mutant(
            "GUARDED_READ",
            GUARDED_READ,
            "redis.call('hexists', KEYS[1], ARGV[1]) == 0",
            "redis.call('hexists', KEYS[1], ARGV[1]) == 1",
        ),
        mutant(
            "GUARDED_READ",
            GUARDED_READ,
            "#!lua flags=no-writes",
            "#!lua flags=allow-oom",
        ),
        mutant(
            "GUARDED_READ",
            GUARDED_READ,
            "redis.call('exists', KEYS[i]) == 0",
            "redis.call('exists', KEYS[i]) == 1",
        ),
    ];
    let alive = survivors::<Guarded>(&bench, &mutants);
    assert!(
        alive.is_empty(),
        "mutants the model test did not catch: {alive:#?}"
    );
}
