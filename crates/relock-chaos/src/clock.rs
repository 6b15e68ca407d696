//! Clock faults with libfaketime: a redis-server whose wall clock the harness can jump.
//!
//! Redis expires keys by the wall clock, so a forward jump ends every lease on that server at
//! once: a holder still believes it holds (its `valid_until` is on its own monotonic clock)
//! while another client takes the lock. That is the documented limit of a lease; the run
//! reports such overlaps and requires only that fencing still holds.

use std::path::{Path, PathBuf};

use relock_testkit::RedisServer;

/// libfaketime's preload library, if installed (Debian's `libfaketime`).
pub fn libfaketime() -> Option<PathBuf> {
    [
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/faketime/libfaketime.so.1",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

/// glibc, preloaded after libfaketime: Debian's redis-server is linked with jemalloc, which
/// deadlocks under libfaketime at start unless `malloc` resolves to glibc (libfaketime #130).
fn libc() -> Option<PathBuf> {
    [
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "/lib/aarch64-linux-gnu/libc.so.6",
        "/usr/lib/aarch64-linux-gnu/libc.so.6",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

/// Starts the single server; under libfaketime when it is installed, with the path of the
/// file holding its clock offset (`+0` at first). Only the wall clock is faked: Redis's
/// monotonic timers stay real, as in an NTP step.
pub fn start_server(dir: &Path) -> relock_testkit::Result<(RedisServer, Option<PathBuf>)> {
    let (Some(ft), Some(libc)) = (libfaketime(), libc()) else {
        return Ok((RedisServer::start()?, None));
    };
    let file = dir.join("server-clock");
    std::fs::write(&file, "+0\n").map_err(|e| relock_testkit::Error::Io {
        what: format!("writing {}", file.display()),
        source: e,
    })?;
    let env = [
        ("LD_PRELOAD", format!("{} {}", ft.display(), libc.display())),
        ("FAKETIME_TIMESTAMP_FILE", file.display().to_string()),
        ("FAKETIME_NO_CACHE", "1".into()),
        ("FAKETIME_DONT_FAKE_MONOTONIC", "1".into()),
    ];
    let server = RedisServer::start_with(relock_testkit::ServerOptions {
        env: env.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        ..Default::default()
    })?;
    Ok((server, Some(file)))
}

/// Moves the server's wall clock `secs` seconds further ahead (jumps add up).
pub fn jump(file: &std::path::Path, secs: u64) -> std::io::Result<()> {
    let now: u64 = std::fs::read_to_string(file)?
        .trim()
        .trim_start_matches('+')
        .trim_end_matches('s')
        .parse()
        .unwrap_or(0);
    std::fs::write(file, format!("+{}s\n", now + secs))
}

/// Removes the shared-memory files libfaketime made for process `pid`, which it removes itself
/// only on a normal exit: call it after a SIGKILL (the test kit stops servers that way).
pub fn forget(pid: u32) {
    for f in [
        format!("/dev/shm/faketime_shm_{pid}"),
        format!("/dev/shm/sem.faketime_sem_{pid}"),
    ] {
        let _ = std::fs::remove_file(f);
    }
}

/// The clock file of the client whose history is `history` (`client-N.jsonl`: `client-N.clock`),
/// for a client started with `FAKETIME_TIMESTAMP_FILE`: its offset from the real wall clock, in
/// seconds (`+0.037`).
pub fn client_clock(history: &Path) -> PathBuf {
    history.with_extension("clock")
}

/// Moves a client's wall clock (its [`client_clock`] file) `secs` seconds further ahead. Its
/// monotonic clock, and so its history's times, stay real.
pub fn jump_client(file: &Path, secs: f64) -> std::io::Result<()> {
    let now: f64 = std::fs::read_to_string(file)?
        .trim()
        .trim_start_matches('+')
        .trim_end_matches('s')
        .parse()
        .unwrap_or(0.0);
    std::fs::write(file, format!("{:+.3}\n", now + secs))
}
