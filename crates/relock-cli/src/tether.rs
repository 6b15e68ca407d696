//! Ties the command's life to `relock`'s, as `flock(1)` ties the lock to the command's: when
//! the `relock` that holds the lock for a command dies by any means (SIGKILL, the OOM killer,
//! a crash), the command and everything in its process group are killed, so that nothing runs
//! on without the lock once its lease ends and the next holder begins.
//!
//! Two mechanisms, because neither covers every case alone:
//! - **The parent-death signal** (Linux): the command gets SIGKILL from the kernel as soon as
//!   `relock` dies. It reaches only the command itself, not what the command started.
//! - **A guard process** for the command's process group (every Unix): a small `/bin/sh`
//!   started before the command, holding the read end of a pipe whose write end only `relock`
//!   has. `relock` dying closes the pipe; the guard then kills the whole group. When the
//!   command ends normally, `relock` tells the guard so, and it exits without killing. The
//!   guard ignores the terminal's signals and sits in a process group of its own, so a
//!   Ctrl-C or a `kill` of `relock`'s group does not take it down first.
//!
//! Not covered: a `relock` killed in the microseconds between starting the command and
//! telling the guard its group (on Linux the command itself still dies; what it started in
//! that instant may not), processes the command moved out of its group (`setsid`, a double
//! fork into a new group), and the guard itself being killed by name.

use std::process::Stdio;

use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, Command};

/// The guard: reads the group, then waits. A line `done` means the command ended while
/// `relock` lived; end of input without it means `relock` died: kill the group.
const GUARD: &str = "trap '' INT TERM HUP QUIT TSTP TTIN TTOU
read group || exit 0
read end
[ \"$end\" = done ] || kill -KILL -\"$group\" 2>/dev/null
exit 0";

/// The guard of one command's process group; see the module's docs.
pub(crate) struct Tether {
    guard: Child,
    pipe: Option<ChildStdin>,
    watching: bool,
}

impl Tether {
    /// Starts the guard (before the command, so that a command never runs unguarded).
    pub(crate) fn start() -> std::io::Result<Tether> {
        let mut guard = Command::new("/bin/sh")
            .args(["-c", GUARD])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Out of relock's group: a signal to that group (Ctrl-C) must not end it first.
            .process_group(0)
            .spawn()?;
        let pipe = guard.stdin.take();
        Ok(Tether {
            guard,
            pipe,
            watching: false,
        })
    }

    /// Tells the guard the command's process group (the command's pid).
    pub(crate) async fn watch(&mut self, group: u32) -> std::io::Result<()> {
        let Some(pipe) = self.pipe.as_mut() else {
            return Err(std::io::ErrorKind::BrokenPipe.into());
        };
        pipe.write_all(format!("{group}\n").as_bytes()).await?;
        pipe.flush().await?;
        self.watching = true;
        Ok(())
    }

    /// The command ended while `relock` lives: the guard exits without killing anything.
    /// (Before [`watch`](Self::watch), the closed pipe alone tells it so.)
    pub(crate) async fn release(mut self) {
        if let (Some(mut pipe), true) = (self.pipe.take(), self.watching) {
            let _ = pipe.write_all(b"done\n").await;
            let _ = pipe.flush().await;
        }
        let _ = tokio::time::timeout(std::time::Duration::from_secs(1), self.guard.wait()).await;
    }
}

/// Sets the parent-death signal in the command's process before it `exec`s: SIGKILL when the
/// thread that started it (the runtime's thread, which lives as long as `relock`) ends.
#[cfg(target_os = "linux")]
pub(crate) fn die_with_parent(command: &mut Command) {
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before exec and calls only prctl(2) and
    // getppid(2), which are async-signal-safe; it allocates nothing.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)?;
            // relock died before the signal was set: nothing will send it now.
            if nix::unistd::getppid().as_raw() as u32 != parent {
                return Err(std::io::Error::from_raw_os_error(nix::libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Elsewhere only the guard covers the command (see the module's docs).
#[cfg(not(target_os = "linux"))]
pub(crate) fn die_with_parent(_command: &mut Command) {}
