//! Property tests of how the exclusive kinds read their acquire and heartbeat replies (the
//! status script's are in `status`): any integers, of any length and value, are read as the
//! grammar in `attempt::AcquireCall` says, or as a reply it never sends; none panics. A
//! coalesced batch's part (any reply) is read as its own script's reply or an error.

use fred::error::ErrorKind;
use fred::types::Value;
use proptest::prelude::*;

use crate::client::decode_prop::{convert_all, message, number, numbers, text, value};
use crate::exclusive::attempt::{read_grant, Reply};
use crate::exclusive::channel::{read as read_message, Message};
use crate::exclusive::coalesce;
use crate::exclusive::fair::call::{read_reply, ticket_in_line, FairOutcome};
use crate::exclusive::fair::channel;
use crate::exclusive::fair::channel::{read as read_fair_message, Message as FairMessage};
use crate::exclusive::fair::heartbeat::beat;

/// The shapes the acquire scripts send: `[1, token]`, `[3, token, pttl]` (a token is always
/// positive), `[0, pttl]` and a fair lock's `[0, pttl or bound, ticket, -1 | -2 | wait, held or
/// behind]`.
fn sent_by_a_script(reply: &[i64]) -> bool {
    matches!(reply, [1, t] | [3, t, _] if *t > 0)
        || matches!(reply, [0, _] | [0, _, _, -2, _] | [0, _, _, _, 0 | 1])
}

/// A fair lock's reply: any pttl, ticket and wait, with the place tags it sends.
fn fair_reply() -> impl Strategy<Value = Vec<i64>> {
    (
        number(),
        number(),
        prop_oneof![Just(-2), Just(-1), number()],
        number(),
    )
        .prop_map(|(pttl, ticket, wait, behind)| vec![0, pttl, ticket, wait, behind])
}

fn any_reply() -> impl Strategy<Value = Vec<i64>> {
    prop_oneof![
        numbers(),
        fair_reply(),
        (prop_oneof![Just(1), Just(3)], number(), number()).prop_map(|(tag, token, pttl)| {
            if tag == 1 {
                vec![1, token]
            } else {
                vec![3, token, pttl]
            }
        }),
    ]
}

proptest! {
    #[test]
    fn any_part_of_a_coalesced_batch_is_a_reply_or_an_error(v in value()) {
        if let Ok(r) = coalesce::part(v.clone()) {
            convert_all(&r);
        }
        convert_all(&v);
    }

    #[test]
    fn a_coalesced_batchs_tagged_part_is_its_scripts_reply(
        tag in text(),
        rest in prop::collection::vec(value(), 0..4),
    ) {
        let len = rest.len();
        let mut parts = vec![Value::String(tag.clone().into())];
        parts.extend(rest.clone());
        let r = coalesce::part(Value::Array(parts));
        // Compared as text: a double that is NaN is not equal to itself.
        let shown = |v: Option<Value>| format!("{v:?}");
        match (tag.as_str(), len) {
            ("ok", 2) => prop_assert_eq!(shown(r.ok()), shown(Some(Value::Array(rest)))),
            ("ok", 1) if rest[0] == Value::Integer(-1) => prop_assert_eq!(r.ok(), Some(Value::Null)),
            ("ok", 1) => prop_assert_eq!(shown(r.ok()), shown(Some(rest[0].clone()))),
            ("err", 1) => prop_assert_eq!(r.map_err(|e| e.kind().clone()), Err(ErrorKind::Unknown)),
            _ => prop_assert_eq!(r.map_err(|e| e.kind().clone()), Err(ErrorKind::Protocol)),
        }
    }

    #[test]
    fn a_channel_message_names_a_grant_only_with_a_positive_token(payload in ".{0,60}") {
        let (field, token) = channel::parse_named(&payload);
        match token {
            Some(t) => {
                prop_assert!(t > 0);
                prop_assert_eq!(format!("{field}={t}"), payload.clone());
            }
            None => prop_assert_eq!(field, payload.as_str()),
        }
    }

    #[test]
    fn any_message_on_a_locks_channel_wakes_as_the_format_says(text in message()) {
        match read_message(&text) {
            Message::Shortened => prop_assert_eq!(text.as_str(), "1"),
            Message::Other => prop_assert!(text.contains(':')),
            Message::Released => prop_assert!(text != "1" && !text.contains(':')),
        }
    }

    #[test]
    fn any_message_on_a_fair_channel_wakes_as_the_format_says(text in message()) {
        match read_fair_message(&text) {
            FairMessage::Shortened => prop_assert_eq!(text.as_str(), "1"),
            FairMessage::Named(field, token) => {
                prop_assert!(text.contains(':'));
                match token {
                    Some(t) => {
                        let named = format!("{field}={t}");
                        prop_assert!(t > 0 && text == named);
                    }
                    None => prop_assert_eq!(field, text.as_str()),
                }
            }
            FairMessage::Released => prop_assert!(text != "1" && !text.contains(':')),
        }
    }

    #[test]
    fn any_acquire_reply_is_read_as_the_grammar_says(reply in any_reply()) {
        let read = read_reply(&reply);
        match (read, reply.as_slice()) {
            (Reply::Granted { token, handed_ms: None }, &[1, t]) => prop_assert_eq!(token, t),
            (Reply::Granted { token, handed_ms: Some(ms) }, &[3, t, pttl]) => {
                prop_assert!(pttl > 0);
                prop_assert_eq!((token, ms), (t, pttl as u64));
            }
            (Reply::HandedWithoutLease(p), &[3, _, pttl]) => prop_assert!(p == pttl && pttl <= 0),
            (Reply::Kind(FairOutcome::OutOfLine), &[0, _, _, -2, _]) => {}
            (Reply::Held(p), &[0, pttl]) => prop_assert_eq!(p, pttl),
            (Reply::Held(p), &[0, pttl, _, wait, 0]) => prop_assert!(p == pttl && wait != -2),
            (Reply::Kind(FairOutcome::Behind(b)), &[0, bound, _, wait, 1]) => prop_assert!(b == bound && wait != -2),
            (Reply::Unexpected, r) => prop_assert!(!sent_by_a_script(r)),
            (read, r) => prop_assert!(false, "{:?} read as {:?}", r, read),
        }
    }

    #[test]
    fn a_plain_reply_is_one_of_the_shared_shapes_or_unexpected(reply in any_reply()) {
        let plain: Reply<std::convert::Infallible> = read_grant(&reply);
        match (plain, reply.as_slice()) {
            (Reply::Unexpected, _) => {}
            (Reply::Granted { .. } | Reply::HandedWithoutLease(_), &[1 | 3, ..]) => {}
            (Reply::Held(p), &[0, pttl]) => prop_assert_eq!(p, pttl),
            (read, r) => prop_assert!(false, "{:?} read as {:?}", r, read),
        }
        // Where the shared shapes are read, the fair lock reads them the same.
        if !matches!(plain, Reply::Unexpected) {
            prop_assert_eq!(format!("{:?}", plain), format!("{:?}", read_reply(&reply)));
        }
    }

    #[test]
    fn a_fair_waiter_stays_in_line_only_with_a_ticket_and_not_out_of_line(reply in any_reply()) {
        match ticket_in_line(&reply) {
            Some(ticket) => {
                prop_assert!(matches!(reply.as_slice(), &[0, _, t, wait, _] if t == ticket && wait != -2));
                let left_line = matches!(read_reply(&reply), Reply::Granted { .. } | Reply::Kind(FairOutcome::OutOfLine));
                prop_assert!(!left_line);
            }
            None => prop_assert!(!matches!(reply.as_slice(), [0, _, _, wait, _] if *wait != -2)),
        }
    }

    #[test]
    fn any_heartbeat_answer_keeps_in_line_or_says_try(answer in number()) {
        let (in_line, try_now) = beat(answer);
        match answer {
            1 => prop_assert_eq!((in_line, try_now), (true, false)),
            0 => prop_assert_eq!((in_line, try_now), (false, true)),
            _ => prop_assert_eq!((in_line, try_now), (true, true)),
        }
    }
}

#[test]
fn the_acquire_grammar() {
    let t = 1_700_000_000_000_000;
    assert_eq!(
        read_reply(&[1, t]),
        Reply::Granted {
            token: t,
            handed_ms: None
        }
    );
    assert_eq!(
        read_reply(&[3, t, 250]),
        Reply::Granted {
            token: t,
            handed_ms: Some(250)
        }
    );
    assert_eq!(read_reply(&[3, t, -1]), Reply::HandedWithoutLease(-1));
    assert_eq!(read_reply(&[0, 900]), Reply::Held(900));
    assert_eq!(read_reply(&[0, 900, 4, -1, 0]), Reply::Held(900));
    assert_eq!(
        read_reply(&[0, 40, 4, 300, 1]),
        Reply::Kind(FairOutcome::Behind(40))
    );
    assert_eq!(
        read_reply(&[0, 900, 4, -2, 0]),
        Reply::Kind(FairOutcome::OutOfLine)
    );
    for bad in [
        &[][..],
        &[7],
        &[1],
        &[1, t, 0],
        &[0, 1, 2],
        &[0, 1, 2, 3, 2],
        &[1, 0],
        &[1, -5],
        &[3, 0, 250],
        &[3, i64::MIN, -1],
    ] {
        assert_eq!(read_reply(bad), Reply::Unexpected, "{bad:?}");
    }
}
