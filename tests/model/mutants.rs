//! The property can fail: each kind's file lists mutants of its scripts (each main comparison
//! changed by one character, a changed TTL), and each must make the property fail within a
//! bounded number of cases.

use crate::bench::Bench;
use crate::run::{check_seeded, Model, Scripts};

/// One mutation: in `script` (its name in `relock::lua` and its source), the first `from`
/// becomes `to`.
pub struct Mutant {
    pub script: &'static str,
    pub source: &'static str,
    pub from: &'static str,
    pub to: &'static str,
}

/// Cases a mutant may take to be caught.
const CASES: u32 = 300;

/// The seed of every mutant's sequences (see `check_seeded`): each mutant is caught, or not,
/// on every run alike.
const SEED: u8 = 1;

/// Runs `M`'s property once per mutant; returns the mutants it did not catch.
pub fn survivors<M: Model>(bench: &Bench, mutants: &[Mutant]) -> Vec<String> {
    survivors_in::<M>(bench, mutants, CASES, 24)
}

/// As `survivors`, with up to `cases` sequences of up to `len` steps each, for a kind whose
/// mutants show only at the end of a longer chain of operations (a line of waiters, a
/// handoff, a holder that dies).
pub fn survivors_in<M: Model>(
    bench: &Bench,
    mutants: &[Mutant],
    cases: u32,
    len: usize,
) -> Vec<String> {
    let mut alive = Vec::new();
    for m in mutants {
        let scripts = Scripts::default().mutate(m.script, m.source, m.from, m.to);
        match check_seeded::<M>(bench, &scripts, cases, len, SEED) {
            Err(found) => {
                let first = found.lines().next().unwrap_or_default();
                eprintln!("caught {} `{}` -> `{}`: {first}", m.script, m.from, m.to);
            }
            Ok(()) => alive.push(format!("{} `{}` -> `{}`", m.script, m.from, m.to)),
        }
    }
    alive
}

pub fn mutant(
    script: &'static str,
    source: &'static str,
    from: &'static str,
    to: &'static str,
) -> Mutant {
    Mutant {
        script,
        source,
        from,
        to,
    }
}
