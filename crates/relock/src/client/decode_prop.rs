//! Property tests of how the client room reads what a server sends: channel messages, a
//! guarded batch's reply, a batch script's one answer per item,
//! and fred's conversion of any reply into the types the scripts' callers ask for. No input
//! panics; each is read as something defined, or is a typed error. The strategies here serve
//! every room's `decode_prop`.

use fred::error::{Error as Fred, ErrorKind};
use fred::types::{Map, Value};
use proptest::prelude::*;

use crate::client::guarded;
use crate::client::pubsub::payload;
use crate::client::scripts;
use crate::error::Error;

/// A number as a script sends it, or as a broken server might: small ones (every shape's
/// tags), any other, and the extremes.
pub(crate) fn number() -> impl Strategy<Value = i64> {
    prop_oneof![
        6 => -3i64..4,
        2 => any::<i64>(),
        1 => Just(i64::MIN),
        1 => Just(i64::MAX),
    ]
}

/// A reply read as integers: any length up to 7, which covers every shape the scripts send.
pub(crate) fn numbers() -> impl Strategy<Value = Vec<i64>> {
    prop::collection::vec(number(), 0..8)
}

/// Text as a reply or message may carry it: tags and numbers (huge, negative, not numbers),
/// and any other.
pub(crate) fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("1".to_string()),
        Just("0".to_string()),
        Just("2".to_string()),
        Just("-1".to_string()),
        Just("ok".to_string()),
        Just("err".to_string()),
        Just("resigned".to_string()),
        Just("99999999999999999999999".to_string()),
        Just("1e308".to_string()),
        Just("NaN".to_string()),
        number().prop_map(|n| n.to_string()),
        ".{0,12}",
    ]
}

/// Any reply a server could send: nested arrays and maps of numbers, text, bytes that are not
/// UTF-8, nil.
pub(crate) fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        Just(Value::Queued),
        number().prop_map(Value::Integer),
        any::<f64>().prop_map(Value::Double),
        any::<bool>().prop_map(Value::Boolean),
        text().prop_map(|s| Value::String(s.into())),
        prop::collection::vec(any::<u8>(), 0..8).prop_map(|b| Value::Bytes(b.into())),
    ];
    leaf.prop_recursive(3, 48, 7, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec((".{0,4}", inner), 0..4)
                .prop_map(|pairs| Value::Map(Map::try_from(pairs).unwrap_or_else(|_| Map::new()))),
        ]
    })
}

/// A reply of a shape its script never sends, as the callers report it.
pub(crate) fn unexpected(what: &str) -> Error {
    Error::Redis {
        operation: "test",
        server: "redis://s".into(),
        source: Fred::new(ErrorKind::Protocol, what.to_string()),
    }
}

/// Whether `e` is the error [`unexpected`] makes.
pub(crate) fn is_unexpected(e: &Error) -> bool {
    matches!(e, Error::Redis { source, .. } if *source.kind() == ErrorKind::Protocol)
}

/// What channels carry, and what they should not: numbers of any size and sign, with spaces,
/// fair waiters' fields with `=` anywhere, any text.
pub(crate) fn message() -> impl Strategy<Value = String> {
    prop_oneof![
        text(),
        " {0,2}-?[0-9]{1,25} {0,2}",
        "[a-z0-9=:-]{0,16}",
        "[a-f0-9-]{1,8}:[0-9]{1,20}(=[0-9-]{0,22})?",
        ".{0,40}",
    ]
}

/// Every conversion the scripts' callers ask fred for.
pub(crate) fn convert_all(v: &Value) {
    let _ = v.clone().convert::<i64>();
    let _ = v.clone().convert::<Option<i64>>();
    let _ = v.clone().convert::<Vec<i64>>();
    let _ = v.clone().convert::<Vec<String>>();
    let _ = v.clone().convert::<Vec<Value>>();
    let _ = v.clone().convert::<(i64, Option<String>, i64)>();
}

proptest! {
    #[test]
    fn any_message_value_is_text_or_nothing(v in value()) {
        let text = payload(&v);
        if let Value::Bytes(b) = &v {
            prop_assert_eq!(text.as_bytes(), std::str::from_utf8(b).map_or(&b""[..], str::as_bytes));
        }
        if matches!(v, Value::Array(_) | Value::Map(_) | Value::Null) {
            prop_assert_eq!(text.as_ref(), "");
        }
    }

    #[test]
    fn any_guarded_reply_is_replies_or_a_typed_error(v in value()) {
        check_guarded(v)?;
    }

    #[test]
    fn any_guarded_status_and_parts_are_replies_or_a_typed_error(
        status in number(),
        parts in prop::collection::vec(value(), 0..6),
    ) {
        let mut reply = vec![Value::Integer(status)];
        reply.extend(parts);
        check_guarded(Value::Array(reply))?;
    }

    #[test]
    fn a_batch_reply_is_one_answer_per_item_or_a_cause(
        reply in prop::collection::vec(number(), 0..40),
        items in prop_oneof![0usize..40, Just(usize::MAX)],
    ) {
        match scripts::one_each(reply.clone(), items) {
            Ok(answers) => prop_assert!(answers.len() == items && answers == reply),
            Err(cause) => {
                prop_assert!(reply.len() != items);
                prop_assert!(cause.contains(&reply.len().to_string()));
            }
        }
    }
}

fn check_guarded(v: Value) -> std::result::Result<(), TestCaseError> {
    let sent = match &v {
        Value::Array(parts) => Some((parts.first().and_then(Value::as_i64), parts.len())),
        _ => None,
    };
    match guarded::read_reply(v, "g".into(), unexpected) {
        Ok(replies) => prop_assert_eq!(sent, Some((Some(1), replies.len() + 1))),
        Err(Error::LockLost { name }) => {
            prop_assert_eq!(name, "g");
            prop_assert_eq!(sent.and_then(|s| s.0), Some(0));
        }
        Err(Error::InvalidArgument { .. }) => prop_assert_eq!(sent.and_then(|s| s.0), Some(2)),
        Err(e) => prop_assert!(is_unexpected(&e), "{:?}", e),
    }
    Ok(())
}

#[test]
fn a_huge_batch_reply_is_read_once() {
    let reply = vec![i64::MIN; 1 << 20];
    assert_eq!(
        scripts::one_each(reply.clone(), 3),
        Err("unexpected reply of 1048576 items".into())
    );
    assert_eq!(
        scripts::one_each(reply, 1 << 20).map(|r| r.len()),
        Ok(1 << 20)
    );
}

#[test]
fn a_non_utf8_message_is_empty() {
    let v = Value::Bytes(vec![0xff, 0xfe, b':'].into());
    assert_eq!(payload(&v), "");
}
