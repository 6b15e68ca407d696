//! The command's messages name its flags and `docs/cli.md`, not the library's builders and
//! guides; `relock status` answers every name it was given, with an error entry for a name
//! that is not a lock, instead of losing the others.

use relock_testkit::RedisServer;

use crate::common::relock_run;
use crate::common::RELOCK;

#[tokio::test]
async fn the_command_speaks_of_its_flags_and_status_answers_every_name() {
    let server = RedisServer::start().expect("start redis-server");
    let url = server.url();
    server
        .cmd(&["HSET", "orders:99", "status", "paid"])
        .unwrap();

    // A data hash under the name: the hint is the shell's, not the library's.
    let (code, _, err) = relock_run(&url, &["--no-wait", "orders:99", "true"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("not a lock"), "{err}");
    assert!(err.contains("a prefix of your own in the name"), "{err}");
    for library in ["ClientBuilder", "relock::guide", "Duration::"] {
        assert!(!err.contains(library), "{library} in: {err}");
    }

    // status of a held lock and of the data hash: both answered, exit 2.
    let client = relock::Client::connect(url.clone()).await.unwrap();
    let held = client.lock("cli-speaks").lock().await.unwrap();
    let out = std::process::Command::new(RELOCK)
        .args(["status", "--url", &url, "--json", "cli-speaks", "orders:99"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let all: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let all = all.as_array().unwrap();
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(all[0]["name"], "cli-speaks");
    assert_eq!(all[0]["held"], true);
    assert_eq!(all[1]["name"], "orders:99");
    assert!(
        all[1]["error"].as_str().unwrap().contains("not a lock"),
        "{all:?}"
    );
    // The text form says the same, the error on stderr.
    let out = std::process::Command::new(RELOCK)
        .args(["status", "--url", &url, "cli-speaks", "orders:99"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("cli-speaks"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("orders:99"));
    held.unlock().await.unwrap();
    client.shutdown().await;
}
