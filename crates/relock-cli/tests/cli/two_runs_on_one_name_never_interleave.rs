//! Two `relock run` processes on one name: the second runs its command only after the first
//! one's command ended, so their outputs never interleave; a fair run does the same.

use std::process::{Command, Stdio};

use relock_testkit::RedisServer;

const RELOCK: &str = env!("CARGO_BIN_EXE_relock");

#[tokio::test]
async fn two_runs_on_one_name_never_interleave() {
    let server = RedisServer::start().expect("start redis-server");
    for fair in [false, true] {
        let log = std::env::temp_dir().join(format!("relock-serial-{}-{fair}", std::process::id()));
        let _ = std::fs::remove_file(&log);
        let script = |who: &str| {
            format!(
                "echo start-{who} >> {0}; sleep 0.3; echo end-{who} >> {0}",
                log.display()
            )
        };
        let spawn = |who: &str| {
            let mut c = Command::new(RELOCK);
            c.args([
                "run",
                "cli-serial",
                "--url",
                &server.url(),
                "--shell",
                &script(who),
            ]);
            if fair {
                c.arg("--fair");
            }
            c.stdout(Stdio::null()).spawn().unwrap()
        };
        let (mut a, mut b) = (spawn("a"), spawn("b"));
        assert!(a.wait().unwrap().success());
        assert!(b.wait().unwrap().success());
        let lines: Vec<String> = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(lines.len(), 4, "{lines:?}");
        for pair in lines.chunks(2) {
            let who = pair[0].strip_prefix("start-").expect("a start first");
            assert_eq!(pair[1], format!("end-{who}"), "interleaved: {lines:?}");
        }
        assert_ne!(lines[0], lines[2], "both ran: {lines:?}");
        let _ = std::fs::remove_file(&log);
    }
}
