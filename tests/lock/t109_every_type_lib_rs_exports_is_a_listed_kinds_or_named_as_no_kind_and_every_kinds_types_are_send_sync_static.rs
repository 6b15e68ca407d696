//! The every-kind tests walk one list (`relock_tests::kinds::KINDS`): every type the crate root
//! (`crates/relock/src/lib.rs`) exports must be one of a listed kind's types or be named in
//! `NOT_KINDS` with why it is no kind, so that a new kind cannot be left out of them unseen; and
//! every kind's handles and guards, and the client, error and quorum types, are
//! `Send + Sync + 'static`.

use std::collections::BTreeSet;
use std::path::Path;

use relock_tests::kinds::{KINDS, NOT_KINDS};

/// The names `lib.rs`'s `pub use` items bring into the crate root (globs left out: those are
/// the `lua` module's sources), comments left out.
fn exported() -> BTreeSet<String> {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/relock/src/lib.rs");
    let text: String = std::fs::read_to_string(lib)
        .expect("read lib.rs")
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut names = BTreeSet::new();
    for item in text.split("pub use ").skip(1) {
        let path = item.split(';').next().unwrap_or("").trim();
        if path.ends_with('*') {
            continue;
        }
        let list = match (path.find('{'), path.rfind('}')) {
            (Some(a), Some(b)) => &path[a + 1..b],
            _ => path.rsplit("::").next().unwrap_or(path),
        };
        for name in list.split(',') {
            let name = name.rsplit(" as ").next().unwrap_or(name).trim();
            if !name.is_empty() {
                names.insert(name.to_string());
            }
        }
    }
    names
}

#[test]
fn every_type_lib_rs_exports_is_a_listed_kinds_or_named_as_no_kind() {
    let exported = exported();
    assert!(
        exported.contains("Lock") && exported.contains("QuorumClient"),
        "the reading of lib.rs found {exported:?}"
    );
    let of_kinds: BTreeSet<&str> = KINDS
        .iter()
        .flat_map(|k| k.exports.iter().copied())
        .collect();
    let not_kinds: BTreeSet<&str> = NOT_KINDS.iter().map(|(n, _)| *n).collect();
    let unlisted: Vec<&String> = exported
        .iter()
        .filter(|n| !of_kinds.contains(n.as_str()) && !not_kinds.contains(n.as_str()))
        .collect();
    assert!(
        unlisted.is_empty(),
        "lib.rs exports {unlisted:?}, in neither tests/src/kinds.rs's KINDS (a kind: add it \
         there, and every every-kind test covers it) nor its NOT_KINDS (say why it is no kind)"
    );
    let stale: Vec<&&str> = of_kinds
        .iter()
        .chain(&not_kinds)
        .filter(|n| !exported.contains(**n))
        .collect();
    assert!(
        stale.is_empty(),
        "listed but not exported by lib.rs: {stale:?}"
    );
    let both: Vec<&&str> = of_kinds.intersection(&not_kinds).collect();
    assert!(both.is_empty(), "both a kind's and no kind's: {both:?}");
    let names: BTreeSet<&str> = KINDS.iter().map(|k| k.name).collect();
    assert_eq!(names.len(), KINDS.len(), "two kinds of one name");
}

fn send_sync_static<T: Send + Sync + 'static>() {}

#[test]
fn every_kinds_types_and_the_clients_are_send_sync_static() {
    for kind in KINDS {
        (kind.bounds)();
    }
    send_sync_static::<relock::Client>();
    send_sync_static::<relock::Error>();
    send_sync_static::<relock::QuorumClient>();
    send_sync_static::<relock::QuorumLock>();
}
