//! The property: a random sequence of a kind's operations, with time passing and empty
//! restarts between them, runs through the real scripts on the server and through the kind's
//! model, and after every step the two agree on the reply, the messages published, and every
//! key with its value and time to live. proptest draws the sequences and shrinks a failure to
//! a short one.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Debug;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};

use crate::bench::{Bench, Reply};
use crate::world::{World, R};

/// How close to a deadline no step runs: time passing (`Age`) jumps a deadline by this much
/// at least, and a step whose deadline comes this close on the wall clock ages past it first,
/// so that no step races an expiry (a lease ends before the step or well after it).
pub const MARGIN_MS: i64 = 1500;

/// The sources of the scripts a model runs, by their name in `relock::lua`; a mutant replaces
/// one.
#[derive(Debug, Clone, Default)]
pub struct Scripts {
    replaced: BTreeMap<&'static str, String>,
}

impl Scripts {
    /// `relock::lua`'s source of `name`, or its replacement.
    pub fn get<'a>(&'a self, name: &'static str, source: &'static str) -> Cow<'a, str> {
        match self.replaced.get(name) {
            Some(s) => Cow::Borrowed(s),
            None => Cow::Borrowed(source),
        }
    }

    /// These scripts with `name`'s source replaced by `source` (an earlier version of it).
    pub fn with(mut self, name: &'static str, source: &str) -> Scripts {
        self.replaced.insert(name, source.to_owned());
        self
    }

    /// These scripts with `source`'s first `from` (which must be there) made `to`, as `name`.
    pub fn mutate(mut self, name: &'static str, source: &str, from: &str, to: &str) -> Scripts {
        assert!(
            source.contains(from),
            "the mutation of {name} no longer applies: `{from}` is not in the script"
        );
        self.replaced.insert(name, source.replacen(from, to, 1));
        self
    }
}

/// One script call.
#[derive(Debug, Clone)]
pub struct Call {
    pub lua: String,
    pub keys: Vec<String>,
    pub args: Vec<String>,
}

impl Call {
    pub fn script(lua: Cow<'_, str>, keys: &[&str], args: &[&str]) -> Call {
        Call {
            lua: lua.into_owned(),
            keys: keys.iter().map(|s| s.to_string()).collect(),
            args: args.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// When a step ran on the server's clock: after `before_us` and before `after_us`.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    pub before_us: i64,
    pub after_us: i64,
}

/// What the model says a step does: its reply, and the messages it publishes (channel,
/// message), in order.
#[derive(Debug, Clone)]
pub struct Expected {
    pub reply: R,
    pub messages: Vec<(String, String)>,
    /// The places in `messages` of those the server may publish or not: a message that hangs
    /// on two deadlines one script set "at once", which the server's millisecond clock may
    /// still tell apart (time is not frozen inside a script).
    pub optional: Vec<usize>,
}

impl Expected {
    pub fn reply(reply: R) -> Expected {
        Expected {
            reply,
            messages: Vec::new(),
            optional: Vec::new(),
        }
    }

    pub fn publishing(reply: R, channel: &str, message: &str) -> Expected {
        Expected::reply(reply).then(channel, message)
    }

    /// The same, then `message` on `channel`.
    pub fn then(mut self, channel: &str, message: &str) -> Expected {
        self.messages.push((channel.to_owned(), message.to_owned()));
        self
    }

    /// The same, then `message` on `channel`, or not.
    pub fn then_maybe(mut self, channel: &str, message: &str) -> Expected {
        self.optional.push(self.messages.len());
        self.then(channel, message)
    }

    /// Whether `heard` is the messages, less some of the optional ones.
    pub fn heard_as(
        &self,
        heard: &[(String, String)],
        same: impl Fn(&(String, String), &(String, String)) -> bool + Copy,
    ) -> bool {
        fn from(
            e: &Expected,
            i: usize,
            heard: &[(String, String)],
            same: impl Fn(&(String, String), &(String, String)) -> bool + Copy,
        ) -> bool {
            let Some(m) = e.messages.get(i) else {
                return heard.is_empty();
            };
            (heard.first().is_some_and(|h| same(m, h)) && from(e, i + 1, &heard[1..], same))
                || (e.optional.contains(&i) && from(e, i + 1, heard, same))
        }
        from(self, 0, heard, same)
    }
}

/// A kind's model: the operations it draws, the call each makes, and what each does to the
/// world. One value lives for one sequence (a case), so it may keep the client-side facts a
/// caller would (the field of each holder's current hold).
pub trait Model: Default + Debug {
    type Op: Clone + Debug + 'static;

    /// The operations a sequence is drawn from.
    fn op() -> BoxedStrategy<Self::Op>;

    /// The call `op` makes, with `scripts`' sources.
    fn call(&mut self, scripts: &Scripts, op: &Self::Op) -> Call;

    /// What `op` does to `world` and replies, at `clock`.
    fn expect(&mut self, world: &mut World, clock: Clock, op: &Self::Op) -> Expected;

    /// Deadlines the kind keeps in values (not TTLs), as ms from `now_ms`.
    fn deadlines(&self, _world: &World, _now_ms: i64) -> Vec<i64> {
        Vec::new()
    }

    /// Moves the deadlines kept in values `ms` closer, in the model and on the server.
    fn age_values(&mut self, _world: &mut World, _bench: &Bench, _ms: i64) {}

    /// Whether a message the model expects (channel, message) is the one heard: equal, unless
    /// the kind's messages carry a value the model knows only within bounds (a token seeded
    /// from the server's clock), which the kind then says how to read.
    fn message_matches(&self, expected: &(String, String), heard: &(String, String)) -> bool {
        expected == heard
    }

    /// What a caller learns from `op`'s reply, once the step matched the model: a value taken
    /// from the server's clock (a ticket) that the caller sends back in later calls.
    fn replied(&mut self, _op: &Self::Op, _reply: &Reply) {}
}

/// One step of a sequence.
#[derive(Debug, Clone)]
pub enum Step<O> {
    Op(O),
    /// Time passes: past the `nth` (modulo how many there are) next deadline, or to just
    /// before it.
    Age {
        nth: usize,
        past: bool,
    },
    /// The server restarts empty.
    Restart,
}

fn step<M: Model>() -> impl Strategy<Value = Step<M::Op>> {
    prop_oneof![
        12 => M::op().prop_map(Step::Op),
        3 => (0usize..4, any::<bool>()).prop_map(|(nth, past)| Step::Age { nth, past }),
        1 => Just(Step::Restart),
    ]
}

/// Every deadline of the world, as ms from now, soonest first.
fn deadlines<M: Model>(model: &M, world: &World, bench: &Bench) -> Vec<i64> {
    let now_ms = bench.now_us() / 1000;
    let mut all: Vec<i64> = world.keys.values().filter_map(|k| k.ttl.left()).collect();
    all.extend(model.deadlines(world, now_ms));
    all.sort_unstable();
    all
}

/// How far from every deadline time passing stops: a key or a value left within a few ms of
/// its deadline would be there or not depending on which clock, the model's or the server's,
/// is a little ahead.
const CLEAR_MS: i64 = 100;

fn age<M: Model>(model: &mut M, world: &mut World, bench: &Bench, ms: i64) {
    if ms <= 0 {
        return;
    }
    let mut ms = ms;
    // Soonest first: once past one deadline, no earlier one can come close again.
    for d in deadlines(model, world, bench) {
        if (d - ms).abs() < CLEAR_MS {
            ms = d + CLEAR_MS;
        }
    }
    bench.age_ttls(ms);
    world.age_ttls(ms);
    model.age_values(world, bench, ms);
}

/// Ages past every deadline that is within the margin, until none is.
fn settle<M: Model>(model: &mut M, world: &mut World, bench: &Bench) {
    while let Some(&soon) = deadlines(model, world, bench)
        .iter()
        .find(|&&d| d < MARGIN_MS)
    {
        age(model, world, bench, soon.max(0) + MARGIN_MS);
    }
}

/// Runs one step on both sides and compares them; `Err` says how they differ.
fn run_step<M: Model>(
    model: &mut M,
    world: &mut World,
    bench: &Bench,
    scripts: &Scripts,
    s: &Step<M::Op>,
) -> Result<(), String> {
    settle(model, world, bench);
    let (reply, expected) = match s {
        Step::Restart => {
            bench.wipe();
            world.keys.clear();
            return compare_keys(world, bench);
        }
        Step::Age { nth, past } => {
            let all = deadlines(model, world, bench);
            if !all.is_empty() {
                let d = all[nth % all.len()];
                let by = if *past { d + MARGIN_MS } else { d - MARGIN_MS };
                age(model, world, bench, by);
            }
            return compare_keys(world, bench);
        }
        Step::Op(op) => {
            let call = model.call(scripts, op);
            world.sent = Some(std::time::Instant::now());
            let before_us = bench.now_us();
            let reply = bench.eval(&call.lua, &call.keys, &call.args);
            let after_us = bench.now_us();
            let expected = model.expect(
                world,
                Clock {
                    before_us,
                    after_us,
                },
                op,
            );
            (reply, expected)
        }
    };
    if !expected.reply.matches(&reply) {
        return Err(format!(
            "reply: the model says {:?}; the server replied {reply:?}",
            expected.reply
        ));
    }
    let heard = bench.heard();
    if !expected.heard_as(&heard, |e, h| model.message_matches(e, h)) {
        return Err(format!(
            "messages: the model says {:?} (optional: {:?}); the server published {heard:?}",
            expected.messages, expected.optional
        ));
    }
    compare_keys(world, bench)?;
    if let Step::Op(op) = s {
        model.replied(op, &reply);
    }
    Ok(())
}

fn compare_keys(world: &mut World, bench: &Bench) -> Result<(), String> {
    let actual = bench.snapshot();
    let diff = world.differences(&actual);
    if !diff.is_empty() {
        return Err(format!("keys:\n  {}", diff.join("\n  ")));
    }
    world.pin(&actual);
    Ok(())
}

/// Cases per kind: `MODEL_CASES`, or `default`.
pub fn cases(default: u32) -> u32 {
    std::env::var("MODEL_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Runs `cases` random sequences of up to `len` steps of `M` through `scripts` on `bench`;
/// `Err` is the shortest failing sequence proptest found, with what went wrong. `shrink`
/// bounds how many sequences it tries while shrinking.
pub fn check<M: Model>(
    bench: &Bench,
    scripts: &Scripts,
    cases: u32,
    len: usize,
    shrink: u32,
) -> Result<(), String> {
    let runner = TestRunner::new(config(cases, shrink));
    run_cases::<M>(runner, bench, scripts, len)
}

/// As [`check`], from a fixed seed: the same sequences on every run. For the mutants, whose
/// test asserts that each is caught: from a random seed, a mutant that few sequences show is
/// missed now and then, and a test that fails by chance says nothing.
pub fn check_seeded<M: Model>(
    bench: &Bench,
    scripts: &Scripts,
    cases: u32,
    len: usize,
    seed: u8,
) -> Result<(), String> {
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]);
    let runner = TestRunner::new_with_rng(config(cases, 0), rng);
    run_cases::<M>(runner, bench, scripts, len)
}

/// `cases` sequences, shrinking a failing one for at most `shrink` tries, nothing persisted.
fn config(cases: u32, shrink: u32) -> Config {
    Config {
        cases,
        max_shrink_iters: shrink,
        failure_persistence: None,
        ..Config::default()
    }
}

fn run_cases<M: Model>(
    mut runner: TestRunner,
    bench: &Bench,
    scripts: &Scripts,
    len: usize,
) -> Result<(), String> {
    let strategy = proptest::collection::vec(step::<M>(), 1..len);
    let result = runner.run(&strategy, |steps| {
        replay::<M>(bench, scripts, &steps).map_err(TestCaseError::fail)
    });
    match result {
        Ok(()) => Ok(()),
        Err(TestError::Fail(reason, steps)) => Err(format!("{reason}\nthe sequence:\n{steps:#?}")),
        Err(e) => Err(e.to_string()),
    }
}

/// Runs one given sequence of `M`'s steps through `scripts` on `bench`, as `check` runs each
/// random one; `Err` says at which step, and how the scripts and the model differ there.
pub fn replay<M: Model>(
    bench: &Bench,
    scripts: &Scripts,
    steps: &[Step<M::Op>],
) -> Result<(), String> {
    bench.wipe();
    let mut model = M::default();
    let mut world = World::default();
    for (i, s) in steps.iter().enumerate() {
        run_step(&mut model, &mut world, bench, scripts, s)
            .map_err(|e| format!("step {i} ({s:?}): {e}"))?;
    }
    Ok(())
}
