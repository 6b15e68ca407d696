//! An observation retries a connection error or a timeout, but ends with an error that
//! retrying cannot mend (here a key of another type under the election record's name): the
//! error is its last item, then `None`, instead of retrying in silence forever.

use std::time::Duration;

use relock::Error;
use relock_tests::*;

#[tokio::test]
async fn an_observation_ends_with_an_error_that_retrying_cannot_mend() {
    let server = server();
    let c = client(&server).await;
    server
        .cmd(&["SET", "relock_election:{e11}", "application data"])
        .unwrap();
    let mut changes = c.election("e11").observe();
    let first = bounded(Duration::from_secs(5), "the first item", changes.next()).await;
    assert!(
        matches!(first, Some(Err(Error::WrongType { .. }))),
        "{first:?}"
    );
    let then = bounded(Duration::from_secs(5), "the end", changes.next()).await;
    assert!(then.is_none(), "{then:?}");
    let data = server.cmd(&["GET", "relock_election:{e11}"]).unwrap();
    assert_eq!(data.as_string().as_deref(), Some("application data"));
    c.shutdown().await;
    server.cmd(&["DEL", "relock_election:{e11}"]).unwrap();
    assert_nothing_left(&server).await;
}
