//! Property tests of what a user or a server can feed relock's parsers: URLs (credentials
//! must never come back out), lock names and hash tags, `CLIENT LIST`
//! replies, durations in messages and guarded batches. No input may panic; each property
//! states what a result promises.

use proptest::prelude::*;

use crate::client::{identity, redact};
use crate::hold::commands;
use crate::hold::keys;

/// A password with a marker no generated host, user or query carries (they are lowercase).
fn password() -> impl Strategy<Value = String> {
    "[A-Z0-9!%^*]{4,16}".prop_map(|p| format!("PW{p}"))
}

fn scheme() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("redis"),
        Just("rediss"),
        Just("redis-cluster"),
        Just("redis-sentinel"),
        Just("valkey"),
        Just("unix"),
    ]
}

proptest! {
    #[test]
    fn a_urls_password_never_comes_back_out(
        scheme in scheme(),
        user in "[a-z]{0,8}",
        pass in password(),
        host in "[a-z]{1,10}(\\.[a-z]{1,6}){0,2}",
        port in 1u16..,
        db in proptest::option::of(0u8..16),
        query in proptest::option::of("[a-z]{1,8}=[a-z0-9]{0,8}"),
        sentinel_pass in proptest::option::of(password()),
    ) {
        let mut url = format!("{scheme}://{user}:{pass}@{host}:{port}");
        if let Some(db) = db {
            url.push_str(&format!("/{db}"));
        }
        let mut params: Vec<String> = query.into_iter().collect();
        if let Some(sp) = &sentinel_pass {
            params.push(format!("sentinelPassword={sp}"));
        }
        if !params.is_empty() {
            url.push('?');
            url.push_str(&params.join("&"));
        }
        let shown = redact::url(&url);
        prop_assert!(!shown.contains(&pass), "{shown}");
        let told = redact::in_text(&format!("cannot reach {url}: refused ({pass})"), &url);
        prop_assert!(!told.contains(&pass), "{told}");
        if let Some(sp) = &sentinel_pass {
            prop_assert!(!shown.contains(sp.as_str()) && !told.contains(sp.as_str()), "{shown} / {told}");
        }
        prop_assert!(!redact::identity(&url).contains(&pass));
    }

    #[test]
    fn a_unix_urls_password_never_comes_back_out(
        scheme in prop_oneof![Just("unix"), Just("redis+unix")],
        user in "[a-z]{0,8}",
        pass in "PW[A-Z0-9@%!]{2,12}",
        host in proptest::option::of("[a-z]{1,9}"),
        path in "(/[a-z@]{1,8}){1,3}/redis\\.sock",
    ) {
        let url = format!("{scheme}://{user}:{pass}@{}{path}", host.unwrap_or_default());
        let shown = redact::url(&url);
        prop_assert!(!shown.contains(&pass), "{}", shown);
        let told = redact::in_text(&format!("refused: {pass}"), &url);
        prop_assert!(!told.contains(&pass), "{}", told);
        prop_assert!(!redact::identity(&url).contains(&pass));
    }

    #[test]
    fn any_text_as_a_url_is_redacted_without_panicking(url in ".{0,80}", text in ".{0,80}") {
        let _ = redact::url(&url);
        let _ = redact::identity(&url);
        let _ = redact::in_text(&text, &url);
    }

    #[test]
    fn a_lock_name_is_accepted_only_if_its_keys_share_a_slot(name in ".{0,40}") {
        match keys::validate_name(&name) {
            Ok(()) => {
                prop_assert!(!name.is_empty() && name.len() <= keys::MAX_NAME_LEN);
                // Every key relock derives from it hashes to the name's slot.
                let slot = |k: &str| fred::util::redis_keyslot(k.as_bytes());
                for k in [
                    keys::prefixed("redisson_lock_token", &name),
                    keys::suffixed(&name, "x"),
                ] {
                    prop_assert_eq!(slot(&k), slot(&name), "{}", k);
                }
            }
            Err(e) => {
                let typed = matches!(e, crate::Error::InvalidArgument { .. });
                prop_assert!(typed, "{:?}", e);
            }
        }
    }

    #[test]
    fn a_client_list_reply_never_names_another_clients_owner(
        list in "(id=[0-9]{1,3} addr=[0-9.:]{3,21} name=[a-z0-9:._-]{0,40} age=[0-9]\n){0,5}",
        field in "[a-z0-9-]{1,12}:[0-9]{1,5}",
    ) {
        if let Some(o) = identity::find(&list, &field) {
            let id = field.rsplit_once(':').map(|(id, _)| id).unwrap_or("");
            let prefix = format!("name=relock:{id}:");
            prop_assert!(list.contains(&prefix), "{:?}", o);
        }
    }

    #[test]
    fn any_client_list_text_is_read_without_panicking(list in ".{0,200}", field in ".{0,30}") {
        let _ = identity::find(&list, &field);
    }

    #[test]
    fn every_duration_prints_as_people_write_it(nanos in any::<u64>()) {
        let shown = crate::error::Human(std::time::Duration::from_nanos(nanos)).to_string();
        prop_assert!(!shown.is_empty());
        prop_assert!(shown.ends_with('s') || shown.ends_with('m') || shown.ends_with('h'), "{}", shown);
    }

    #[test]
    fn a_guarded_batch_that_passes_the_check_keeps_every_key_in_the_locks_slot(
        lock in "[a-z]{1,6}(\\{[a-z0-9]{1,4}\\})?[a-z:]{0,6}",
        keys in proptest::collection::vec("(\\{[a-z0-9]{0,4}\\})?[a-z:{}]{0,10}", 1..6),
    ) {
        let mut batch = commands::Commands::new();
        for k in &keys {
            batch = batch.cmd("SET").key(k.as_str()).arg("v");
        }
        let slot = |k: &str| fred::util::redis_keyslot(k.as_bytes());
        match batch.check(&lock) {
            Ok(()) => prop_assert!(keys.iter().all(|k| slot(k) == slot(&lock))),
            Err(e) => {
                let text = e.to_string();
                if text.contains("is one of the lock") {
                    // One of the lock's own keys (its hash, counter, line): each holds its name.
                    prop_assert!(keys.iter().any(|k| k.contains(lock.as_str())), "{}", text);
                } else {
                    prop_assert!(keys.iter().any(|k| slot(k) != slot(&lock)));
                    prop_assert!(text.contains("share the lock's slot"), "{}", text);
                }
            }
        }
    }
}
