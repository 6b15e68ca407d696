//! A test that keeps the rooms of `crates/relock/src` layered (its `lib.rs`, "Layout"): a module may use modules of its
//! own room and of the rooms below it, never one beside or above it; and no module may depend,
//! directly or through others, on a module that depends on it. A new lock kind plugs in on top
//! (its room uses the shared ones); a shared room that needed a kind fails here, naming the
//! import.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The rooms from the bottom up; rooms of the same rank sit side by side and may not use each
/// other. The crate root's own modules (`error`, `script`, `seam`) are rank 0.
const ROOMS: &[(&str, u8)] = &[
    ("hold", 1),
    ("client", 2),
    ("exclusive", 3),
    ("counting", 3),
    ("quorum", 3),
    ("coordination", 4),
];

/// A module's room ("" for the crate root's own modules).
fn room(module: &str) -> &str {
    module.split_once('/').map_or("", |(r, _)| r)
}

fn rank(room: &str) -> u8 {
    ROOMS
        .iter()
        .find(|(r, _)| *r == room)
        .map_or(0, |(_, rank)| *rank)
}

/// A folder's modules: `prefix/file` for each file, `prefix` for its `mod.rs`, and those of
/// the folders in it (a kind with parts: `exclusive/fair/line`).
fn add_folder(files: &mut BTreeMap<String, std::path::PathBuf>, folder: &Path, prefix: &str) {
    for f in std::fs::read_dir(folder).expect("read a folder") {
        let f = f.expect("dir entry").path();
        let file = f.file_stem().unwrap().to_string_lossy().to_string();
        if f.is_dir() {
            add_folder(files, &f, &format!("{prefix}/{file}"));
        } else if file == "mod" {
            files.insert(prefix.to_string(), f);
        } else {
            files.insert(format!("{prefix}/{file}"), f);
        }
    }
}

/// Module ("room/file", or "file" at the crate root) → the crate modules it names
/// (`crate::room::m`, `crate::m`, `super::m`, `{…}` groups, or a type the crate root
/// re-exports), comments left out.
fn dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/relock/src");
    let strip = |text: String| {
        text.lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(&src).expect("read src/") {
        let path = entry.expect("dir entry").path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            add_folder(&mut files, &path, &name);
        } else if let Some(m) = name.strip_suffix(".rs") {
            if m != "lib" {
                files.insert(m.to_string(), path.clone());
            }
        }
    }
    let rooms: BTreeSet<&str> = ROOMS.iter().map(|(r, _)| *r).collect();
    // `pub use room::m::{A, B};` in lib.rs: `crate::A` means module room/m.
    let mut reexports = BTreeMap::new();
    let lib = strip(std::fs::read_to_string(src.join("lib.rs")).expect("read lib.rs"));
    for line in lib.lines() {
        let Some(rest) = line.trim().strip_prefix("pub use ") else {
            continue;
        };
        let parts: Vec<&str> = rest.splitn(3, "::").collect();
        let (module, names) = match parts.as_slice() {
            [r, m, names] if rooms.contains(r) => (format!("{r}/{m}"), *names),
            [m, names, ..] => (m.to_string(), *names),
            _ => continue,
        };
        for n in names.split(|c: char| !c.is_alphanumeric() && c != '_') {
            if !n.is_empty() {
                reexports.insert(n.to_string(), module.clone());
            }
        }
    }
    let idents = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect()
    };
    let first = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut deps = BTreeMap::new();
    for (module, path) in &files {
        let text = strip(std::fs::read_to_string(path).expect("read a source file"));
        let mut d = BTreeSet::new();
        // `prefix` is a room or a folder ("" for the crate root): a name under it is a module
        // there.
        let mut named = |prefix: &str, n: &str| {
            if n.is_empty() {
                d.insert(prefix.to_string());
                return;
            }
            let candidate = if prefix.is_empty() {
                n.to_string()
            } else {
                format!("{prefix}/{n}")
            };
            if files.contains_key(&candidate) {
                d.insert(candidate);
            } else if prefix.is_empty() {
                if let Some(owner) = reexports.get(n) {
                    d.insert(owner.clone());
                }
            } else {
                // `crate::room::Item`: the room's mod.rs.
                d.insert(prefix.to_string());
            }
        };
        let mut paths: Vec<(String, &str)> = text
            .split("crate::")
            .skip(1)
            .map(|p| (String::new(), p))
            .collect();
        // `super::m` in a room's file: a module of the same room (of the same folder, in a
        // folder's file).
        if !room(module).is_empty() {
            let parent = module.rsplit_once('/').map_or("", |(p, _)| p);
            paths.extend(
                text.split("super::")
                    .skip(1)
                    // `use super::*`: a test module's glob of its own file.
                    .filter(|p| !p.starts_with('*'))
                    .map(|p| (parent.to_string(), p)),
            );
        }
        for (mut prefix, mut piece) in paths {
            let head = first(piece);
            if prefix.is_empty() && rooms.contains(head.as_str()) {
                prefix = head.clone();
                piece = piece[head.len()..].strip_prefix("::").unwrap_or("");
            }
            // Down into a folder (`fair::line::X`): the module in it.
            loop {
                let head = first(piece);
                let folder = format!("{prefix}/{head}");
                let rest = piece[head.len()..].strip_prefix("::");
                match rest {
                    Some(rest)
                        if !head.is_empty()
                            && files.contains_key(&folder)
                            && files.keys().any(|k| k.starts_with(&format!("{folder}/"))) =>
                    {
                        prefix = folder;
                        piece = rest;
                    }
                    _ => break,
                }
            }
            if let Some(group) = piece.strip_prefix('{') {
                for n in idents(group.split('}').next().unwrap_or("")) {
                    named(&prefix, &n);
                }
            } else {
                named(&prefix, &first(piece));
            }
        }
        d.remove(module);
        d.remove("");
        deps.insert(module.clone(), d);
    }
    deps
}

/// Every import of a module in a room beside or above the importer's: `(importer, imported)`.
fn room_violations(deps: &BTreeMap<String, BTreeSet<String>>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (m, ds) in deps {
        for d in ds {
            let (from, to) = (room(m), room(d));
            // A room's mod.rs is the room itself.
            let to = if to.is_empty() && ROOMS.iter().any(|(r, _)| r == d) {
                d.as_str()
            } else {
                to
            };
            let from = if from.is_empty() && ROOMS.iter().any(|(r, _)| r == m) {
                m.as_str()
            } else {
                from
            };
            if from != to && rank(to) >= rank(from) {
                out.push((m.clone(), d.clone()));
            }
        }
    }
    out
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
fn every_room_uses_only_the_rooms_below_it() {
    let deps = dependencies();
    assert!(deps.len() > 40, "modules found: {:?}", deps.keys());
    // The check sees what it should: paths into rooms, re-exported names and `super::`.
    assert!(deps["hold/guard"].contains("hold/backend"));
    assert!(deps["exclusive/lock"].contains("client/handle"));
    assert!(deps["exclusive/multilock"].contains("hold/guard"));
    assert!(deps["quorum/lock"].contains("quorum/inner"));
    assert!(deps["client/handle"].contains("error"));
    // And modules in a kind's folder.
    assert!(deps["exclusive/fair/wait"].contains("exclusive/fair/line"));
    assert!(deps["exclusive/fair"].contains("exclusive/lock"));
    assert!(deps["coordination/election/observe"].contains("coordination/election/handle"));
    assert!(deps.contains_key("coordination/election"));
    let violations = room_violations(&deps);
    assert!(
        violations.is_empty(),
        "imports of a room beside or above the importer's (see lib.rs, \"Layout\"): {violations:?}"
    );
}

#[test]
fn no_module_depends_on_itself_through_others() {
    let deps = dependencies();
    if let Some(cycle) = find_cycle(&deps) {
        panic!("import cycle: {}", cycle.join(" -> "));
    }
}

#[test]
fn the_checks_find_a_cycle_and_an_upward_import() {
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

    let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    // Allowed: down a room, within a room, to the crate root.
    deps.insert(
        "exclusive/lock".into(),
        ["client/handle", "exclusive/fair", "error"]
            .map(String::from)
            .into(),
    );
    deps.insert("client/handle".into(), ["hold/holds".to_string()].into());
    assert!(room_violations(&deps).is_empty());
    // Not allowed: up (the client naming a kind), beside (one kind naming another), and the
    // hold room naming the client's room through its mod.rs.
    deps.insert(
        "client/handle".into(),
        ["exclusive/fair_line".to_string()].into(),
    );
    deps.insert(
        "counting/permit_semaphore".into(),
        ["quorum/race".to_string()].into(),
    );
    deps.insert("hold/holds".into(), ["client".to_string()].into());
    assert_eq!(
        room_violations(&deps),
        vec![
            ("client/handle".into(), "exclusive/fair_line".into()),
            ("counting/permit_semaphore".into(), "quorum/race".into()),
            ("hold/holds".into(), "client".into()),
        ]
    );
}

/// The words a shared room's code may not use: the kinds' names. The shared rooms are
/// transport (`client`) and bookkeeping (`hold`); what is a kind's is in the kind's files.
const KIND_WORDS: &[&str] = &[
    "fair",
    "permit",
    "semaphore",
    "latch",
    "quorum",
    "election",
    "job",
    "rwlock",
    "spin",
];

/// The words of an identifier, lower case: `fair_heartbeat` and `FairHeartbeat` are both
/// `fair`, `heartbeat`.
fn words(ident: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in ident.split('_').filter(|p| !p.is_empty()) {
        let mut word = String::new();
        let chars: Vec<char> = part.chars().collect();
        for (i, &c) in chars.iter().enumerate() {
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let prev_lower =
                i > 0 && (chars[i - 1].is_lowercase() || chars[i - 1].is_ascii_digit());
            if c.is_uppercase() && !word.is_empty() && (prev_lower || next_lower) {
                out.push(std::mem::take(&mut word).to_lowercase());
            }
            word.push(c);
        }
        if !word.is_empty() {
            out.push(word.to_lowercase());
        }
    }
    out
}

/// `(file, line, identifier)` for each identifier in `text`'s code (comments, string literals
/// and imports from other crates left out) that names a kind.
fn kind_names(file: &str, text: &str) -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("").trim();
        // Another crate's names (tokio's `Semaphore`) are not a kind of ours.
        if code.starts_with("use ")
            && !code.starts_with("use crate::")
            && !code.starts_with("use super::")
        {
            continue;
        }
        let mut plain = String::new();
        let mut in_string = false;
        let mut escaped = false;
        for c in code.chars() {
            if in_string {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == '"' {
                    in_string = false;
                }
                continue;
            }
            if c == '"' {
                in_string = true;
                plain.push(' ');
            } else {
                plain.push(c);
            }
        }
        for ident in plain.split(|c: char| !c.is_alphanumeric() && c != '_') {
            if words(ident)
                .iter()
                .any(|w| KIND_WORDS.contains(&w.as_str()))
            {
                out.push((file.to_string(), n + 1, ident.to_string()));
            }
        }
    }
    out
}

#[test]
fn the_shared_rooms_name_no_kind() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/relock/src");
    let mut files = BTreeMap::new();
    for room in ["hold", "client"] {
        add_folder(&mut files, &src.join(room), room);
    }
    assert!(files.len() > 20, "files found: {:?}", files.keys());
    let mut found = Vec::new();
    for (module, path) in &files {
        let text = std::fs::read_to_string(path).expect("read a source file");
        found.extend(kind_names(module, &text));
    }
    assert!(
        found.is_empty(),
        "code in hold/ or client/ names a kind (a kind's protocol, setting or state belongs in its own files): {found:?}"
    );
}

#[test]
fn the_kind_check_finds_a_kind_in_code_and_not_in_comments_strings_or_other_crates() {
    assert_eq!(words("fair_heartbeat"), ["fair", "heartbeat"]);
    assert_eq!(words("FairHeartbeat"), ["fair", "heartbeat"]);
    assert_eq!(words("QuorumNotReached"), ["quorum", "not", "reached"]);
    assert_eq!(words("HTTPJob"), ["http", "job"]);
    let text = "let s = settings.fair_heartbeat;\n// the fair lock's heartbeat\nlet k = \"relock_fair_line\";\nuse tokio::sync::Semaphore;\nlet q: QuorumNotReached;";
    let hits: Vec<String> = kind_names("x", text)
        .into_iter()
        .map(|(_, _, i)| i)
        .collect();
    assert_eq!(hits, ["fair_heartbeat", "QuorumNotReached"]);
}
