//! Shared by the command's scenarios: `relock run` to its end, and `relock watch` as a child
//! process whose JSON lines are read on a thread of their own (a test's runtime must go on
//! while it waits for a line).

#![allow(dead_code)] // not every scenario uses every helper

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

pub const RELOCK: &str = env!("CARGO_BIN_EXE_relock");

/// A running `relock watch NAME --url URL --json ARGS…`.
pub struct Watch {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Watch {
    pub fn start(url: &str, name: &str, args: &[&str]) -> Watch {
        let mut child = Command::new(RELOCK)
            .args(["watch", name, "--url", url, "--json"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Watch { child, lines }
    }

    /// The next line, as JSON, within 10 s.
    pub fn next(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(10))
            .expect("a line from relock watch within 10 s");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Whether no line comes within `d`.
    pub fn quiet_for(&self, d: Duration) -> bool {
        self.lines.recv_timeout(d).is_err()
    }

    /// Waits for it to exit: its exit code and what it wrote to stderr.
    pub fn wait(&mut self) -> (Option<i32>, String) {
        let code = self.child.wait().unwrap().code();
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            e.read_to_string(&mut err).unwrap();
        }
        (code, err)
    }
}

/// The server's notify-keyspace-events flags.
pub fn flags(server: &relock_testkit::RedisServer) -> String {
    match server
        .cmd(&["CONFIG", "GET", "notify-keyspace-events"])
        .unwrap()
    {
        relock_testkit::Value::Array(Some(v)) => match v.get(1) {
            Some(relock_testkit::Value::Bulk(Some(b))) => String::from_utf8_lossy(b).into(),
            other => panic!("unexpected reply {other:?}"),
        },
        other => panic!("unexpected reply {other:?}"),
    }
}

/// `relock run --url URL ARGS…` to its end: its exit code, stdout and stderr.
pub fn relock_run(url: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(RELOCK)
        .args(["run", "--url", url])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
