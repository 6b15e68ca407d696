//! A child process holding the lock (watchdog lease 1 s) is SIGKILLed; another client gets the
//! lock within lease + 1 s, with a larger token.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use relock_tests::*;

#[tokio::test]
async fn a_killed_holder_process_frees_the_lock_within_its_lease() {
    let server = server();
    let mut child = Command::new(env!("CARGO_BIN_EXE_relock-test-holder"))
        .args([&server.url(), "t23", "1000"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let child_token: u64 = line
        .trim()
        .strip_prefix("HELD ")
        .expect("holder prints HELD <token>")
        .parse()
        .unwrap();

    let c = client(&server).await;
    // Held and renewed by the child well past its lease.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        c.lock("t23").try_lock().await.unwrap().is_none(),
        "the child's watchdog keeps it"
    );

    child.kill().unwrap();
    child.wait().unwrap();
    let killed = Instant::now();
    let g = bounded(
        Duration::from_secs(5),
        "takeover",
        c.lock("t23").try_lock_for(Duration::from_secs(3)),
    )
    .await
    .unwrap()
    .expect("taken over");
    let takeover = killed.elapsed();
    assert!(
        takeover <= Duration::from_secs(2),
        "takeover took {takeover:?} (lease 1 s)"
    );
    assert!(g.fencing_token() > child_token);
    g.unlock().await.unwrap();
    assert_nothing_left(&server).await;
}
