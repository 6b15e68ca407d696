//! Property tests of how the coordination kinds read their scripts' replies: a fenced key's
//! write and read (any values: nested, not numbers, not UTF-8), an election's record (any
//! strings, of any length) and a job's keep. Each is read as its script says, or is a typed
//! error; none panics.

use fred::types::Value;
use proptest::prelude::*;

use crate::client::decode_prop::{is_unexpected, number, text, unexpected, value};
use crate::coordination::{election, fenced, job};
use crate::error::Error;
use crate::hold::guard::KeepOutcome;

fn two_values() -> impl Strategy<Value = Vec<Value>> {
    prop_oneof![
        prop::collection::vec(value(), 0..4),
        (value(), value()).prop_map(|(a, b)| vec![a, b]),
        (number(), text())
            .prop_map(|(ok, fence)| { vec![Value::Integer(ok), Value::String(fence.into())] }),
    ]
}

proptest! {
    #[test]
    fn any_fenced_set_reply_is_written_refused_or_unexpected(
        reply in two_values(),
        token in any::<u64>(),
    ) {
        match fenced::read_set(&reply, "f", token, || unexpected("fenced set")) {
            Ok(()) => prop_assert!(reply.len() == 2 && reply[0].as_i64() == Some(1)),
            Err(Error::StaleToken { key, token: t, highest }) => {
                prop_assert!(reply.len() == 2 && reply[0].as_i64() != Some(1));
                prop_assert_eq!((key.as_str(), t), ("f", token));
                let fence = reply[1].as_string().and_then(|s| s.parse().ok());
                prop_assert_eq!(highest, fence.unwrap_or(u64::MAX));
            }
            Err(e) => prop_assert!(reply.len() != 2 && is_unexpected(&e), "{:?}", e),
        }
    }

    #[test]
    fn any_fenced_get_reply_is_a_value_or_a_typed_error(reply in two_values()) {
        match fenced::read_get(&reply, "f", || unexpected("fenced get")) {
            Ok(None) => prop_assert!(reply.is_empty()),
            Ok(Some((text, fence))) => {
                prop_assert_eq!(reply.len(), 2);
                prop_assert_eq!(reply[1].as_string().and_then(|s| s.parse().ok()), Some(fence));
                let value = reply[0].as_str();
                prop_assert_eq!(value.as_deref(), Some(text.as_str()));
            }
            Err(Error::WrongType { key }) => prop_assert!(key == "f" && reply.len() == 2),
            Err(Error::InvalidArgument { .. }) => {
                prop_assert!(matches!(&reply[0], Value::Bytes(b) if std::str::from_utf8(b).is_err()));
            }
            Err(e) => prop_assert!(is_unexpected(&e), "{:?}", e),
        }
    }

    #[test]
    fn any_election_record_is_a_leader_or_none(
        parts in prop::collection::vec(text(), 0..9),
    ) {
        let read = election::record::read_snapshot(&parts);
        let part = |i: usize| parts.get(i).map_or("", String::as_str);
        prop_assert_eq!(read.leader.is_some(), part(0) == "1");
        if let Some(leader) = &read.leader {
            prop_assert_eq!(leader.term, part(1).parse().unwrap_or(0));
            prop_assert_eq!(leader.lease_left.is_some(), part(4).parse::<i64>().is_ok_and(|p| p >= 0));
        }
        if read.resigned.is_some() {
            prop_assert_eq!(part(6), "resigned");
        }
    }

    #[test]
    fn any_keep_reply_is_kept_not_alone_or_gone(reply in number()) {
        let expected = match reply {
            1 => KeepOutcome::Kept,
            2 => KeepOutcome::NotAlone,
            _ => KeepOutcome::Gone,
        };
        prop_assert_eq!(job::keep_outcome(reply), expected);
    }
}
