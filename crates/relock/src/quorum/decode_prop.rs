//! Property tests of how a quorum lock reads a node's vote: any integers, of any length and
//! value, are a grant with its token, a hold by another with its TTL, or a reply the acquire
//! script never sends; none panics.

use std::time::Duration;

use proptest::prelude::*;

use crate::client::decode_prop::{number, numbers};
use crate::quorum::vote::{read_vote, Ballot};

proptest! {
    #[test]
    fn any_vote_reply_is_a_grant_a_hold_or_unexpected(
        reply in prop_oneof![
            numbers(),
            (prop_oneof![Just(0), Just(1)], number()).prop_map(|(tag, n)| vec![tag, n]),
        ],
    ) {
        match (read_vote(&reply), reply.as_slice()) {
            (Ballot::Granted(token), &[1, t]) => prop_assert!(t > 0 && token == t as u64),
            (Ballot::Held(None), &[0, pttl]) => prop_assert!(pttl < 0),
            (Ballot::Held(Some(ttl)), &[0, pttl]) => {
                prop_assert_eq!(ttl, Duration::from_millis(pttl as u64));
                prop_assert!(pttl >= 0);
            }
            (Ballot::Unexpected, r) => prop_assert!(!matches!(r, [0, _]) && !matches!(r, [1, t] if *t > 0)),
            (read, r) => prop_assert!(false, "{:?} read as {:?}", r, read),
        }
    }
}

#[test]
fn votes() {
    assert_eq!(read_vote(&[1, 42]), Ballot::Granted(42));
    assert_eq!(
        read_vote(&[0, 1500]),
        Ballot::Held(Some(Duration::from_millis(1500)))
    );
    assert_eq!(read_vote(&[0, -1]), Ballot::Held(None));
    assert_eq!(read_vote(&[0, 1, 2]), Ballot::Unexpected);
    assert_eq!(read_vote(&[1, 0]), Ballot::Unexpected);
    assert_eq!(read_vote(&[1, -7]), Ballot::Unexpected);
    assert_eq!(read_vote(&[]), Ballot::Unexpected);
}
