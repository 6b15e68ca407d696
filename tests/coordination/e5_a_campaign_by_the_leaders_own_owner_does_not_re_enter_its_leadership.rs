//! Review finding, reproduced and fixed: `campaign`/`try_campaign` took the fair lock with
//! `lock()`/`try_lock()`, which re-enter a live hold of the same owner (Reentrancy::PerTask's
//! task, an `Owner::scope`, or the leadership's own `lock_guard().scope`): a second campaign
//! from the leader's task got a second `Leadership` of the same term, and its resignation
//! marked the record resigned while the first still led. Now such a campaign is refused with a
//! typed error naming the term, and the first leadership is untouched.

use std::time::Duration;

use relock::Error;
use relock_tests::*;

fn refused<T: std::fmt::Debug>(r: relock::Result<T>, term: u64) {
    match r {
        Err(Error::InvalidArgument { name, reason }) => {
            assert_eq!(name, "campaign");
            assert!(reason.contains(&format!("term {term}")), "{reason}");
        }
        other => panic!("expected the campaign refused, got {other:?}"),
    }
}

#[tokio::test]
async fn a_campaign_by_the_leaders_own_task_does_not_re_enter_its_leadership() {
    let server = server();
    let a = relock::Client::builder()
        .url(server.url())
        .reentrancy(relock::Reentrancy::PerTask)
        .command_timeout(Duration::from_secs(1))
        .build()
        .await
        .unwrap();
    let d = client(&server).await;
    let name = "e5";
    let e = a.election(name);
    let la = e.campaign("a").await.unwrap();
    refused(e.try_campaign("a-again").await, la.term());
    refused(e.campaign("a-again").await, la.term());
    assert_eq!(
        server
            .cmd(&["HGET", name, la.lock_guard().owner()])
            .unwrap(),
        relock_testkit::Value::Bulk(Some(b"1".to_vec()))
    );
    let now = d.election(name).leader().await.unwrap();
    assert_eq!(
        now.as_ref().map(|l| (l.term, l.value.as_str())),
        Some((la.term(), "a"))
    );
    // Another task of the same client is another owner: it waits as a standby.
    let other = {
        let e = e.clone();
        tokio::spawn(async move { e.campaign_for(Duration::from_millis(200), "b").await })
    };
    assert!(other.await.unwrap().unwrap().is_none());
    la.proclaim("a2").await.unwrap();
    la.resign().await.unwrap();
    a.shutdown().await;
    d.shutdown().await;
}

#[tokio::test]
async fn a_campaign_in_the_leaderships_scope_does_not_re_enter_it() {
    let server = server();
    let a = client(&server).await;
    let d = client(&server).await;
    let name = "e5b";
    let e = a.election(name);
    let la = e.campaign("a").await.unwrap();
    let second = la
        .lock_guard()
        .scope(bounded(
            Duration::from_secs(1),
            "a campaign",
            e.campaign_for(Duration::from_millis(200), "again"),
        ))
        .await;
    refused(second, la.term());
    let now = d.election(name).leader().await.unwrap();
    assert_eq!(
        now.as_ref().map(|l| (l.term, l.value.as_str())),
        Some((la.term(), "a"))
    );
    la.resign().await.unwrap();
    a.shutdown().await;
    d.shutdown().await;
}
