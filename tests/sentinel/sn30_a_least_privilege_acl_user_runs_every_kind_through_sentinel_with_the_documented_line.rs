//! A user granted exactly the Sentinel line of `crates/relock/docs/operations.md` ("Least-privilege
//! ACL users"), set on both data servers (master and replica: either may be master after a
//! failover), runs every kind through Sentinel: the lock kinds acquire, wait and wake across
//! clients, renew, report their status and are force-unlocked; the counting kinds acquire, wait and
//! wake, and renew a permit. Neither data server refused anything (`ACL LOG` empty). The sentinels
//! get their own credentials (`sentinelUsername`, `sentinelPassword`).

use std::time::Duration;

use relock_testkit::RedisSentinel;
use relock_tests::*;

// Current-thread: the capture of warnings sees every task's events.
#[tokio::test]
async fn a_least_privilege_acl_user_runs_every_kind_through_sentinel_with_the_documented_line() {
    let set = RedisSentinel::start().expect("start a sentinel set-up");
    // The sentinels here have no users of their own: their default user takes any password.
    let url = format!(
        "{}&sentinelUsername=default&sentinelPassword=unused",
        set.url().replacen("://", "://app:app-pw@", 1)
    );
    let servers: Vec<&RedisServer> = set.servers().iter().collect();
    let left = acl::every_kind_as_least_privileged(
        &servers,
        &acl::sentinel(),
        &url,
        Duration::from_secs(1),
    )
    .await;
    let master = set.master().unwrap();
    for key in &left {
        master.cmd(&["DEL", key]).unwrap();
    }
    // The sentinels keep their own `__sentinel__:hello` channel; ours must be gone.
    wait_until(
        Duration::from_secs(5),
        "no keys and no lock channels left",
        || async {
            master.dbsize().unwrap() == 0
                && master
                    .pubsub_channels()
                    .unwrap()
                    .iter()
                    .all(|c| c.starts_with("__sentinel__"))
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}: {:?} {:?}", master.keys(), master.pubsub_channels()));
}
