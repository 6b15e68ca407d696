//! Fenced keys' scripts against their model: a write under a token lower than the highest the
//! key has accepted is refused, an equal or higher one is taken (tokens compared as 64-bit
//! integers, also where a Lua number would round them: above 2^53, at 2^64 - 1); a read gives
//! the value and its token; a key that is not a fenced key (another type, other fields, a
//! fence that is not a positive 64-bit decimal) is refused with WRONGTYPE and left as it was.

use proptest::prelude::*;

use crate::mutants::{mutant, survivors};
use crate::run::{check, Call, Clock, Expected, Model, Scripts};
use crate::world::{Data, World, R, V};

const KEY: &str = "fk";
const VALUES: [&str; 4] = ["", "v1", "12", "two words"];

/// Tokens are drawn near these, so that writes meet equal, lower and higher tokens, of equal
/// and of different lengths, where doubles round (2^53) and at the top of 64 bits.
const BASES: [u64; 8] = [
    1,
    9,
    10,
    99,
    1 << 53,
    1_000_000_000_000_000,
    10_000_000_000_000_000_000,
    u64::MAX - 3,
];

/// What another program writes under the key's name.
#[derive(Debug, Clone)]
pub enum Written {
    Text,
    /// A hash of these fields, with a TTL of a minute or none.
    Hash {
        fields: Vec<(&'static str, &'static str)>,
        ttl: bool,
    },
}

fn written() -> impl Strategy<Value = Written> {
    // Fences a fenced key may hold, and some it may not.
    let good = prop_oneof![
        Just("5"),
        Just("9007199254740993"),
        Just("18446744073709551615"),
    ];
    let bad = prop_oneof![
        Just("abc"),
        Just("007"),
        Just("0"),
        Just("-5"),
        Just("1.5"),
        Just(""),
        Just(" 5"),
        Just("18446744073709551616"),
        Just("99999999999999999999"),
        Just("100000000000000000000"),
    ];
    prop_oneof![
        1 => Just(Written::Text),
        3 => (good, any::<bool>()).prop_map(|(f, ttl)| Written::Hash {
            fields: vec![("value", "old"), ("fence", f)],
            ttl
        }),
        3 => bad.prop_map(|f| Written::Hash {
            fields: vec![("value", "old"), ("fence", f)],
            ttl: false
        }),
        1 => prop_oneof![
            Just(vec![("fence", "5")]),
            Just(vec![("value", "old")]),
            Just(vec![("value", "old"), ("fence", "5"), ("other", "1")]),
            Just(vec![("fence", "5"), ("status", "paid")]),
        ]
        .prop_map(|fields| Written::Hash { fields, ttl: false }),
    ]
}

#[derive(Debug, Clone)]
pub enum Op {
    Set { token: u64, value: usize },
    Get,
    Write(Written),
}

#[derive(Debug, Default)]
pub struct Fenced;

/// The stored value and fence, if `KEY` is a fenced key: a hash of exactly `value` and a
/// `fence` that is a positive decimal of 64 bits at most, without leading zeros. `Ok(None)`:
/// no key; `Err`: WRONGTYPE.
fn fenced(world: &World) -> Result<Option<(String, u64)>, R> {
    let wrong = R::Err("WRONGTYPE");
    let Some(key) = world.keys.get(KEY) else {
        return Ok(None);
    };
    let Data::Hash(h) = &key.data else {
        return Err(wrong);
    };
    let (Some(value), Some(fence), 2) = (h.get("value"), h.get("fence"), h.len()) else {
        return Err(wrong);
    };
    let fence = fence.as_str().unwrap();
    let canonical = fence.starts_with(|c: char| c.is_ascii_digit() && c != '0')
        && fence.bytes().all(|b| b.is_ascii_digit());
    match fence.parse::<u64>() {
        Ok(f) if canonical => Ok(Some((value.as_str().unwrap().to_owned(), f))),
        _ => Err(wrong),
    }
}

impl Model for Fenced {
    type Op = Op;

    fn op() -> BoxedStrategy<Op> {
        let token = (0usize..BASES.len(), 0u64..4).prop_map(|(b, d)| BASES[b].saturating_add(d));
        prop_oneof![
            6 => (token, 0usize..VALUES.len()).prop_map(|(token, value)| Op::Set { token, value }),
            3 => Just(Op::Get),
            1 => written().prop_map(Op::Write),
        ]
        .boxed()
    }

    fn call(&mut self, scripts: &Scripts, op: &Op) -> Call {
        use relock::lua;
        match op {
            Op::Set { token, value } => Call::script(
                scripts.get("FENCED_SET", lua::FENCED_SET),
                &[KEY],
                &[&token.to_string(), VALUES[*value]],
            ),
            Op::Get => Call::script(scripts.get("FENCED_GET", lua::FENCED_GET), &[KEY], &[]),
            Op::Write(Written::Text) => Call::script(
                "redis.call('del', KEYS[1]) return redis.call('set', KEYS[1], 'x')".into(),
                &[KEY],
                &[],
            ),
            Op::Write(Written::Hash { fields, ttl }) => {
                let lua = "redis.call('del', KEYS[1]) \
                           for i = 2, #ARGV, 2 do \
                             redis.call('hset', KEYS[1], ARGV[i], ARGV[i + 1]) \
                           end \
                           if ARGV[1] == '1' then redis.call('pexpire', KEYS[1], 60000) end \
                           return 1";
                let mut args = vec![if *ttl { "1" } else { "0" }];
                args.extend(fields.iter().flat_map(|(f, v)| [*f, *v]));
                Call::script(lua.into(), &[KEY], &args)
            }
        }
    }

    fn expect(&mut self, world: &mut World, _clock: Clock, op: &Op) -> Expected {
        Expected::reply(match op {
            Op::Set { token, value } => match fenced(world) {
                Err(e) => e,
                Ok(Some((_, fence))) if fence > *token => {
                    R::Array(vec![R::Int(0), R::Str(fence.to_string())])
                }
                Ok(_) => {
                    // HSET: a key another program gave a TTL keeps it.
                    world.hset(KEY, "value", V::str(VALUES[*value]));
                    world.hset(KEY, "fence", V::Is(token.to_string()));
                    R::Array(vec![R::Int(1), R::Str(token.to_string())])
                }
            },
            Op::Get => match fenced(world) {
                Err(e) => e,
                Ok(None) => R::Array(vec![]),
                Ok(Some((value, fence))) => {
                    R::Array(vec![R::Str(value), R::Str(fence.to_string())])
                }
            },
            Op::Write(Written::Text) => {
                world.del(KEY);
                world.set(KEY, V::str("x"), None, false);
                R::Str("OK".into())
            }
            Op::Write(Written::Hash { fields, ttl }) => {
                world.del(KEY);
                for (f, v) in fields {
                    world.hset(KEY, f, V::str(v));
                }
                if *ttl {
                    world.pexpire(KEY, 60_000);
                }
                R::Int(1)
            }
        })
    }
}

#[test]
fn the_fenced_keys_scripts_do_what_its_model_does() {
    let bench = crate::bench::Bench::start();
    let cases = crate::run::cases(64);
    if let Err(e) = check::<Fenced>(&bench, &Scripts::default(), cases, 24, 2000) {
        panic!("{e}");
    }
}

#[test]
fn the_fenced_keys_mutants_are_caught() {
    use relock::lua::*;
    let bench = crate::bench::Bench::start();
    let mutants = [
        mutant(
            "FENCED_SET",
            FENCED_SET,
            "(#fence == #token and fence > token)",
            "(#fence == #token and fence >= token)",
        ),
        mutant(
            "FENCED_SET",
            FENCED_SET,
            "#fence > #token or",
            "#fence >= #token or",
        ),
        mutant(
            "FENCED_SET",
            FENCED_SET,
            "kind ~= 'none' and kind ~= 'hash'",
            "kind ~= 'none' and kind == 'hash'",
        ),
        mutant(
            "FENCED_SET",
            FENCED_SET,
            "redis.call('hlen', KEYS[1]) ~= 2",
            "redis.call('hlen', KEYS[1]) ~= 3",
        ),
        mutant("FENCED_SET", FENCED_SET, "'^[1-9]%d*$'", "'^[0-9]%d*$'"),
        mutant("FENCED_SET", FENCED_SET, "#fence > 20", "#fence >= 20"),
        mutant(
            "FENCED_SET",
            FENCED_SET,
            "fence > '18446744073709551615'",
            "fence >= '18446744073709551615'",
        ),
        // A fenced key has no TTL of its own: a write must not give it one.
        mutant(
            "FENCED_SET",
            FENCED_SET,
            "redis.call('hset', KEYS[1], 'value', ARGV[2], 'fence', token)",
            "redis.call('hset', KEYS[1], 'value', ARGV[2], 'fence', token) \
             redis.call('pexpire', KEYS[1], 60000)",
        ),
        mutant("FENCED_GET", FENCED_GET, "kind == 'none'", "kind ~= 'none'"),
        mutant(
            "FENCED_GET",
            FENCED_GET,
            "redis.call('hlen', KEYS[1]) ~= 2",
            "redis.call('hlen', KEYS[1]) ~= 3",
        ),
        mutant("FENCED_GET", FENCED_GET, "'^[1-9]%d*$'", "'^[0-9]%d*$'"),
        mutant("FENCED_GET", FENCED_GET, "#got[2] > 20", "#got[2] >= 20"),
        mutant(
            "FENCED_GET",
            FENCED_GET,
            "got[2] > '18446744073709551615'",
            "got[2] >= '18446744073709551615'",
        ),
    ];
    let alive = survivors::<Fenced>(&bench, &mutants);
    assert!(
        alive.is_empty(),
        "mutants the model test did not catch: {alive:#?}"
    );
}
