//! A test that keeps the modules layered: no module may depend, directly or through others,
//! on a module that depends on it. A new lock kind plugs in on top (its module uses the shared
//! ones); a shared module that needed a kind would make a cycle, and this test names it.

use std::collections::{BTreeMap, BTreeSet};

/// Module name → the crate modules it names (`crate::m`, `use crate::{m, …}`, or a type the
/// crate root re-exports from `m`), comments left out.
fn dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let read = |f: &str| std::fs::read_to_string(src.join(f)).expect("read a source file");
    let strip = |text: String| {
        text.lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut modules = BTreeSet::new();
    for entry in std::fs::read_dir(&src).expect("read src/") {
        let name = entry.expect("dir entry").file_name().into_string().unwrap();
        if let Some(m) = name.strip_suffix(".rs") {
            if m != "lib" && m != "layers" {
                modules.insert(m.to_string());
            }
        }
    }
    // `pub use m::{A, B};` in lib.rs: `crate::A` means module m.
    let mut reexports = BTreeMap::new();
    for line in strip(read("lib.rs")).lines() {
        if let Some(rest) = line.trim().strip_prefix("pub use ") {
            if let Some((m, names)) = rest.split_once("::") {
                for n in names.split(|c: char| !c.is_alphanumeric() && c != '_') {
                    if !n.is_empty() {
                        reexports.insert(n.to_string(), m.to_string());
                    }
                }
            }
        }
    }
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut deps = BTreeMap::new();
    for m in &modules {
        let text = strip(read(&format!("{m}.rs")));
        let mut d = BTreeSet::new();
        let mut named = |n: &str| {
            if modules.contains(n) {
                d.insert(n.to_string());
            } else if let Some(owner) = reexports.get(n) {
                d.insert(owner.clone());
            }
        };
        for piece in text.split("crate::").skip(1) {
            if let Some(group) = piece.strip_prefix('{') {
                let group = group.split('}').next().unwrap_or("");
                for n in group.split(|c: char| !c.is_alphanumeric() && c != '_') {
                    named(n);
                }
            } else {
                named(&ident(piece));
            }
        }
        d.remove(m);
        deps.insert(m.clone(), d);
    }
    deps
}

/// A dependency path that leads from a module back to itself, if there is one.
fn find_cycle(deps: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        deps: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == m) {
            let mut cycle = path[i..].to_vec();
            cycle.push(m.to_string());
            return Some(cycle);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for d in deps.get(m).into_iter().flatten() {
            if let Some(c) = visit(d, deps, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    deps.keys()
        .find_map(|m| visit(m, deps, &mut Vec::new(), &mut done))
}

#[test]
fn no_module_depends_on_itself_through_others() {
    let deps = dependencies();
    assert!(deps.len() > 20, "modules found: {:?}", deps.keys());
    // The check sees what it should: the guard goes through the backend trait, and the lock
    // kinds use the client, not the other way round.
    assert!(deps["guard"].contains("backend"));
    assert!(deps["lock"].contains("client"));
    if let Some(cycle) = find_cycle(&deps) {
        panic!("import cycle: {}", cycle.join(" -> "));
    }
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    deps.insert("a".into(), ["b".to_string()].into());
    deps.insert("b".into(), ["c".to_string()].into());
    deps.insert("c".into(), ["a".to_string()].into());
    assert_eq!(
        find_cycle(&deps),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    deps.get_mut("c").unwrap().clear();
    assert_eq!(find_cycle(&deps), None);
}
