//! The history: what each client did and when, on the machine's `CLOCK_MONOTONIC`, which every
//! process on the machine shares (so the harness can merge the clients' files without any clock
//! correction). One JSON object per line, appended and flushed as it happens, so a client that
//! is paused or killed loses nothing it had recorded.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Nanoseconds on `CLOCK_MONOTONIC`.
pub type Nanos = i64;

/// Now, on `CLOCK_MONOTONIC`.
pub fn now() -> Nanos {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .expect("CLOCK_MONOTONIC is always readable on Linux");
    t.tv_sec() * 1_000_000_000 + t.tv_nsec()
}

/// `instant` (a `std::time::Instant`, which is `CLOCK_MONOTONIC` on Linux) in [`Nanos`].
pub fn at(instant: Instant) -> Nanos {
    let (now_i, now_n) = (Instant::now(), now());
    match instant.checked_duration_since(now_i) {
        Some(ahead) => now_n + ahead.as_nanos() as i64,
        None => now_n - now_i.duration_since(instant).as_nanos() as i64,
    }
}

/// One thing a client did.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "e", rename_all = "snake_case")]
pub enum Op {
    /// The client process started; `id` is its relock client id (the prefix of its fields).
    Start { id: String, pid: u32 },
    /// An acquire was invoked.
    Acquire,
    /// The acquire returned a guard. `read`: a read-write lock's read side (a shared hold);
    /// absent (every other hold, and histories written before the rw kind) means exclusive.
    Acquired {
        token: u64,
        valid_until: Nanos,
        #[serde(default, skip_serializing_if = "is_false")]
        read: bool,
    },
    /// The acquire gave up (`timeout`) or failed (the error).
    AcquireFailed { error: String },
    /// The fenced read returned `value` (`None`: the resource rejected the token).
    Read { token: u64, value: Option<i64> },
    /// The fenced write of `value` was accepted or rejected.
    Write {
        token: u64,
        value: i64,
        accepted: bool,
    },
    /// A resource call failed (connection), outcome unknown.
    ResourceError { token: u64, error: String },
    /// `lost()` resolved while the guard was held.
    Lost { token: u64 },
    /// The release was invoked; `valid_until` is the guard's at that moment.
    Release { token: u64, valid_until: Nanos },
    /// The release returned.
    Released { token: u64 },
    /// The release failed (`LockLost`, or a connection error after which relock retries it).
    ReleaseFailed { token: u64, error: String },
    /// A rate limiter granted one permit: the call was sent at `sent` and its reply received
    /// at the event's time, so the server granted it in between.
    Granted { sent: Nanos },
    /// A job's run finished early and its lock is kept until `until` (the run's acquire plus
    /// `at_least_for`): the occurrence stays taken, as if held, until then.
    Kept { token: u64, until: Nanos },
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One event: when, which client, which lock name, what.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Event {
    pub t: Nanos,
    pub c: u32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub n: String,
    #[serde(flatten)]
    pub op: Op,
}

/// Appends a client's events to its file.
#[derive(Debug)]
pub struct Recorder {
    client: u32,
    file: File,
}

impl Recorder {
    pub fn create(path: &Path, client: u32) -> std::io::Result<Self> {
        Ok(Recorder {
            client,
            file: File::create(path)?,
        })
    }

    /// Records `op` on `name` now.
    pub fn record(&mut self, name: &str, op: Op) {
        self.record_at(now(), name, op)
    }

    pub fn record_at(&mut self, t: Nanos, name: &str, op: Op) {
        let e = Event {
            t,
            c: self.client,
            n: name.to_owned(),
            op,
        };
        let mut line = serde_json::to_vec(&e).expect("events serialize");
        line.push(b'\n');
        // One write per event: a SIGKILL loses at most the event being written.
        if let Err(err) = self.file.write_all(&line) {
            eprintln!("relock-chaos client {}: cannot record: {err}", self.client);
        }
    }
}

/// Reads one client's file. A torn last line (the process died mid-write) is skipped.
pub fn read(path: &Path) -> std::io::Result<Vec<Event>> {
    let mut out = Vec::new();
    for line in BufReader::new(File::open(path)?).lines() {
        let line = line?;
        if let Ok(e) = serde_json::from_str::<Event>(&line) {
            out.push(e);
        }
    }
    Ok(out)
}

/// All clients' events, merged in time order (ties keep each client's own order).
pub fn merge(mut per_client: Vec<Vec<Event>>) -> Vec<Event> {
    let mut all: Vec<Event> = per_client.drain(..).flatten().collect();
    all.sort_by_key(|e| e.t);
    all
}
