//! Property tests of how the counting kinds read their scripts' replies and a count read with
//! GET: any integers, of any length and value, and any text, are read as the scripts' replies
//! say, or as a reply they never send (a typed error at the call); none panics, and no count
//! read is below 0.

use std::time::Duration;

use proptest::prelude::*;

use crate::client::decode_prop::{message, number, numbers, text};
use crate::counting::channel::{read_count, read_opened, Count};
use crate::counting::{add, counts, permit_semaphore, semaphore_request};

/// A reply of two integers, the counting scripts' shape, tagged 0 to 2 or any number.
fn pair() -> impl Strategy<Value = Vec<i64>> {
    prop_oneof![
        numbers(),
        (prop_oneof![0i64..3, number()], number()).prop_map(|(tag, n)| vec![tag, n]),
    ]
}

proptest! {
    #[test]
    fn any_message_on_a_counting_channel_wakes_as_its_format_says(text in message()) {
        match read_count(&text) {
            Count::Available(n) => {
                let sent = text.trim().parse::<i64>();
                prop_assert_eq!(sent.map(|k| k.max(0) as u64), Ok(n));
            }
            Count::Unreadable => prop_assert!(text.trim().parse::<i64>().is_err()),
        }
        prop_assert_eq!(read_opened(&text), text != "1");
    }

    #[test]
    fn any_semaphore_acquire_reply_is_taken_too_few_or_unexpected(reply in pair()) {
        match (semaphore_request::read_acquire(&reply), reply.as_slice()) {
            (Some(semaphore_request::Attempt::Taken), &[1, _]) => {}
            (Some(semaphore_request::Attempt::TooFew(n)), &[0, available]) => prop_assert_eq!(n, available),
            (None, r) => prop_assert!(!matches!(r, [0 | 1, _])),
            (read, r) => prop_assert!(false, "{:?} read as {:?}", r, read),
        }
    }

    #[test]
    fn any_permits_acquire_reply_is_a_grant_a_wait_or_unexpected(reply in pair()) {
        match (permit_semaphore::read_acquire(&reply), reply.as_slice()) {
            (Some(permit_semaphore::Attempt::Granted(())), &[1, _]) => {}
            (Some(permit_semaphore::Attempt::FreesIn(wait)), &[0, ms]) => {
                prop_assert!(ms > 0);
                prop_assert_eq!(wait, Duration::from_millis(ms as u64));
            }
            (Some(permit_semaphore::Attempt::NoneFree), &[0, ms]) => prop_assert!(ms <= 0),
            (None, r) => prop_assert!(!matches!(r, [0 | 1, _])),
            (read, r) => prop_assert!(false, "{:?} read as {:?}", r, read),
        }
    }

    #[test]
    fn any_permits_count_reply_is_two_counts_of_at_least_0_or_unexpected(reply in pair()) {
        match (permit_semaphore::read_counts(&reply), reply.as_slice()) {
            (Some((available, acquired)), &[a, b]) => {
                prop_assert_eq!(available, u64::try_from(a).unwrap_or(0));
                prop_assert_eq!(acquired, u64::try_from(b).unwrap_or(0));
            }
            (None, r) => prop_assert!(r.len() != 2),
            (read, r) => prop_assert!(false, "{:?} read as {:?}", r, read),
        }
    }

    #[test]
    fn any_add_reply_is_added_refused_or_unexpected(reply in pair()) {
        match (add::read_add(&reply), reply.as_slice()) {
            (Some(Ok(n)), &[1, available]) | (Some(Err(n)), &[0, available]) => {
                prop_assert_eq!(n, available)
            }
            (None, r) => prop_assert!(!matches!(r, [0 | 1, _])),
            (read, r) => prop_assert!(false, "{:?} read as {:?}", r, read),
        }
    }

    #[test]
    fn any_count_read_is_at_least_0_or_wrong_type(value in proptest::option::of(text())) {
        match counts::parse_count(value.clone(), "k") {
            Ok(n) => {
                let sent = value.map_or(Ok(0), |v| v.parse::<i64>());
                prop_assert_eq!(sent.map(|s| s.max(0) as u64), Ok(n));
            }
            Err(e) => {
                prop_assert!(matches!(e, crate::Error::WrongType { .. }), "{:?}", e);
                prop_assert!(value.is_some_and(|v| v.parse::<i64>().is_err()));
            }
        }
    }
}
