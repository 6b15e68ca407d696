//! A run started with `--name billing` is shown by name, process id and host wherever another
//! command sees its hold: `relock status` (text and `--json`) and the conflict line of a run
//! that finds the lock taken. The owner field itself is unchanged (Redisson's shape), and a
//! lease is said to end "unless its holder renews it".

use std::process::{Command, Stdio};
use std::time::Duration;

use relock_testkit::{wait_until, RedisServer};

use crate::common::{relock_run, RELOCK};

#[tokio::test]
async fn status_and_the_conflict_line_name_a_holder_that_named_itself() {
    let server = RedisServer::start().expect("start redis-server");
    let url = server.url();
    let mut holder = Command::new(RELOCK)
        .args([
            "run",
            "--url",
            &url,
            "--name",
            "billing",
            "cli-named",
            "sleep",
            "30",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = holder.id();
    wait_until(
        Duration::from_secs(5),
        "the run to hold the lock",
        || async { server.cmd(&["EXISTS", "cli-named"]).unwrap().as_int() == Some(1) },
    )
    .await
    .unwrap();

    let out = Command::new(RELOCK)
        .args(["status", "--url", &url, "cli-named"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("`billing`, pid {pid} on ")),
        "{text}"
    );
    assert!(text.contains("unless its holder renews it"), "{text}");

    let out = Command::new(RELOCK)
        .args(["status", "--url", &url, "--json", "cli-named"])
        .output()
        .unwrap();
    let all: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let h = &all[0]["holders"][0];
    assert_eq!(h["client"]["name"], "billing");
    assert_eq!(h["client"]["pid"], pid);
    assert_eq!(h["layout"], "relock", "the owner field keeps its shape");

    let (code, _, err) = relock_run(&url, &["--no-wait", "cli-named", "true"]);
    assert_eq!(code, Some(75));
    assert!(err.contains(&format!("`billing` (pid {pid} on ")), "{err}");

    let _ = Command::new("kill").arg(pid.to_string()).status();
    holder.wait().unwrap();
}
