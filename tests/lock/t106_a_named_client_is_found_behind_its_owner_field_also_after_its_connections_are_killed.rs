//! A client given a name (`ClientBuilder::client_name`) names its connections on the server,
//! so `Lock::describe_owner` finds who holds a lock (name, host, process id), also after its
//! connections were killed and came back. A client without a name, and Redisson's fields,
//! describe as `None`; a bad name is refused before connecting.

use std::time::Duration;

use relock::Error;
use relock_tests::*;

#[tokio::test]
async fn a_named_client_is_found_behind_its_owner_field_also_after_its_connections_are_killed() {
    let server = server();
    let named = relock::Client::builder()
        .url(server.url())
        .client_name("billing-7")
        .command_timeout(Duration::from_secs(1))
        .build()
        .await
        .unwrap();
    let plain = client(&server).await;
    let guard = named.lock("t106").lock().await.unwrap();
    let owner = guard.owner().to_string();
    let who = plain
        .lock("t106")
        .describe_owner(&owner)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (who.name.as_str(), who.pid),
        ("billing-7", std::process::id())
    );
    assert!(!who.host.is_empty() && who.addr.contains(':'), "{who:?}");

    // Its connections are killed; they come back named.
    assert!(server.client_kill_type("normal").unwrap() >= 1);
    wait_until(
        Duration::from_secs(5),
        "the name back after the reconnect",
        || async {
            matches!(
                plain.lock("t106").describe_owner(&owner).await,
                Ok(Some(w)) if w.name == "billing-7"
            )
        },
    )
    .await
    .unwrap();

    let other = plain.lock("t106:b").lock().await.unwrap();
    assert_eq!(
        plain
            .lock("t106:b")
            .describe_owner(other.owner())
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        plain
            .lock("t106")
            .describe_owner("0b4c59d3-b59f-4456-be8d-1bdbb4722725:57")
            .await
            .unwrap(),
        None
    );
    other.unlock().await.unwrap();
    guard.unlock().await.unwrap();

    let bad = relock::Client::builder()
        .url(server.url())
        .client_name("has space")
        .build()
        .await;
    assert!(
        matches!(
            bad,
            Err(Error::InvalidArgument {
                name: "client_name",
                ..
            })
        ),
        "{bad:?}"
    );
    named.shutdown().await;
    plain.shutdown().await;
    assert_nothing_left(&server).await;
}
