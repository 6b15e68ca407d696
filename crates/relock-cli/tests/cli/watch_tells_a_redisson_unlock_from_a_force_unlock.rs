//! `relock watch` labels a Redisson unlock (`hincrby -1`, `del`, publish) as a release and a
//! force-unlock (`del`, publish, no field change) as a deletion, and prints one line per
//! change, never a `passed` for a hold it saw.

use std::process::Command;
use std::time::Duration;

use relock_testkit::RedisServer;

use super::common;

use common::RELOCK;
const OWNER: &str = "7d0c51e2-93b4-4f7a-8c2e-5a6b7c8d9e0f:61";
/// Redisson's RLock unlock script (RedissonLock.unlockInnerAsync), as it runs.
const REDISSON_UNLOCK: &str = "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; \
    local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); \
    if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; \
    else redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; end; return nil;";

#[test]
fn watch_tells_a_redisson_unlock_from_a_force_unlock() {
    let server = RedisServer::start().expect("start redis-server");
    let mut watch = common::Watch::start(
        &server.url(),
        "cli-rl",
        &["--enable-notifications", "--count", "4", "--for", "25s"],
    );
    assert_eq!(watch.next()["event"], "free");
    let take = || {
        server.cmd(&["HSET", "cli-rl", OWNER, "1"]).unwrap();
        server.cmd(&["PEXPIRE", "cli-rl", "30000"]).unwrap();
    };
    take();
    let e = watch.next();
    assert_eq!(
        (e["event"].as_str(), e["layout"].as_str()),
        (Some("acquired"), Some("redisson")),
        "{e}"
    );
    let unlocked = server
        .cmd(&[
            "EVAL",
            REDISSON_UNLOCK,
            "2",
            "cli-rl",
            "redisson_lock__channel:{cli-rl}",
            "0",
            "30000",
            OWNER,
        ])
        .unwrap();
    assert_eq!(unlocked.as_int(), Some(1));
    let e = watch.next();
    assert_eq!(
        (e["event"].as_str(), e["field"].as_str()),
        (Some("released"), Some(OWNER)),
        "{e}"
    );

    take();
    assert_eq!(watch.next()["event"], "acquired");
    let out = Command::new(RELOCK)
        .args(["force-unlock", "--yes", "cli-rl", "--url", &server.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let e = watch.next();
    assert_eq!(
        (e["event"].as_str(), e["field"].as_str()),
        (Some("deleted"), Some(OWNER)),
        "{e}"
    );
    assert_eq!(watch.wait().0, Some(0));
    assert!(
        watch.quiet_for(Duration::from_millis(300)),
        "nothing after the 4th"
    );
}
