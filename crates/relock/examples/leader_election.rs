//! Leader election: three replicas campaign; one leads (with a term, a fencing token that
//! strictly increases across leaders), the others wait as standbys in line. Each leader does
//! its term's work, then resigns, and the first standby leads at once. An observer prints
//! every change.
//!
//! ```sh
//! REDIS_URL=redis://127.0.0.1:6379 cargo run -p relock-redis --example leader_election
//! ```

use std::time::Duration;

use relock::LeaderEvent;

#[tokio::main]
async fn main() -> relock::Result<()> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let client = relock::Client::connect(url).await?;
    let election = client.election("example:scheduler");

    // The observation starts with the current leader, then reports each change: the first
    // leader works until the observer has reported it (an observation starts in the
    // background, and a term that ends before its first read would not be reported).
    let (reported, _) = tokio::sync::watch::channel(false);
    let first_seen = reported.clone();
    let mut changes = election.observe();
    let watcher = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(Ok(event)) = changes.next().await {
            match &event {
                LeaderEvent::Elected(l) => println!("elected: {} (term {})", l.value, l.term),
                LeaderEvent::Resigned { term } => println!("resigned: term {term}"),
                other => println!("{other:?}"),
            }
            seen.push(event);
            first_seen.send_replace(true);
            if seen.len() == 6 {
                break; // three terms: elected and resigned each
            }
        }
        seen
    });

    let mut replicas = Vec::new();
    for replica in ["replica-a", "replica-b", "replica-c"] {
        let election = election.clone();
        let mut reported = reported.subscribe();
        replicas.push(tokio::spawn(async move {
            let leader = election.campaign(replica).await?;
            let term = leader.term();
            let _ = tokio::time::timeout(Duration::from_secs(10), reported.wait_for(|r| *r)).await;
            // The term's work: every write carries the term, so that a resource can refuse a
            // deposed leader's. Stop at once if leadership is lost.
            tokio::select! {
                _ = leader.lost() => eprintln!("{replica}: leadership lost"),
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
            leader.resign().await?;
            Ok::<_, relock::Error>(term)
        }));
    }
    let mut terms = Vec::new();
    for r in replicas {
        terms.push(r.await.expect("a replica's task")?);
    }
    terms.sort_unstable();
    terms.dedup();
    assert_eq!(
        terms.len(),
        3,
        "each replica led once, in a term of its own"
    );

    let seen = tokio::time::timeout(Duration::from_secs(10), watcher)
        .await
        .expect("the observer saw every change")
        .expect("the observer's task");
    let elected = seen
        .iter()
        .filter(|e| matches!(e, LeaderEvent::Elected(_)))
        .count();
    assert_eq!(elected, 3);
    assert!(election.leader().await?.is_none());
    client.shutdown().await;
    Ok(())
}
