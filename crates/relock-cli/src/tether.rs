//! Ties the command's life to `relock`'s, as `flock(1)` ties the lock to the command's: when
//! the `relock` that holds the lock for a command dies by any means (SIGKILL, the OOM killer,
//! a crash), the command and everything in its process group are killed, so that nothing runs
//! on without the lock once its lease ends and the next holder begins.
//!
//! Two mechanisms, because neither covers every case alone:
//! - **The parent-death signal** (Linux): the command gets SIGKILL from the kernel as soon as
//!   `relock` dies. It reaches only the command itself, not what the command started.
//! - **A guard process** for the command's process group (every Unix): a small `/bin/sh`
//!   started before the command, holding the read end of a pipe whose write end `relock` holds
//!   (and the command's own process, until it `exec`s: the end is close-on-exec). The command's
//!   process writes its pid (its process group) into that pipe before it `exec`s, so the guard
//!   knows the group before the command can start anything. `relock` dying closes the pipe;
//!   the guard then kills the whole group. When the command ends normally, `relock` tells the
//!   guard so, and it exits without killing. The guard ignores the terminal's signals and sits
//!   in a process group of its own, so a Ctrl-C or a `kill` of `relock`'s group does not take
//!   it down first. A guard already gone when the command starts fails the start: the command
//!   is not run.
//!
//! Why the command tells the guard its group, not `relock`: `relock` learns the pid only once
//! `spawn` returns, and a `relock` paused or killed just then would leave what the command
//! started in that moment unguarded. Written from the command's side, before `exec`, there is
//! no such moment: a `relock` that dies before the write leaves a command that never `exec`s
//! on Linux (the parent-death signal, or the check after setting it), and elsewhere a command
//! whose group the guard kills once the pipe's last write end closes at its `exec`.
//!
//! When the command cannot be started (not found, not executable), its process may already
//! have announced its pid, which is then free again: `relock` writes `done` before doing
//! anything else, so the guard never kills a group that is no longer the command's.
//!
//! Not covered: processes the command moved out of its group (`setsid`, a double fork into a
//! new group); the guard itself being killed by name; a `relock` killed in the moment between
//! a failed start, or the end of a command whose whole group has ended, and its `done` (the
//! guard would signal a group id that is free again); a start
//! that tokio reports as failed after the command began (it cannot watch the new process),
//! where the command runs on unguarded. Without a guard (`--foreground`, where the command
//! shares `relock`'s group), only the parent-death signal covers it.

use std::os::fd::{AsRawFd, RawFd};
use std::process::Stdio;

use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, Command};

/// The guard: remembers the group the command announces; a line `done` means the command
/// ended (or never started) while `relock` lived; end of input without it means `relock`
/// died: kill the group, if one was announced.
const GUARD: &str = "trap '' INT TERM HUP QUIT TSTP TTIN TTOU
group=
while read -r line; do
  case $line in
    done) exit 0 ;;
    ''|*[!0-9]*) ;;
    *) group=$line ;;
  esac
done
[ -n \"$group\" ] && kill -KILL -\"$group\" 2>/dev/null
exit 0";

/// The guard of one command's process group; see the module's docs.
pub(crate) struct Tether {
    guard: Child,
    pipe: Option<ChildStdin>,
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
        Ok(Tether { guard, pipe })
    }

    /// The pipe's write end, for the command to announce its group on.
    fn announce_fd(&self) -> Option<RawFd> {
        self.pipe.as_ref().map(|p| p.as_raw_fd())
    }

    /// Whether the guard has already exited (it was killed): then it guards nothing.
    pub(crate) fn is_gone(&mut self) -> bool {
        matches!(self.guard.try_wait(), Ok(Some(_)))
    }

    /// The command ended (or never started) while `relock` lives: the guard exits without
    /// killing anything.
    pub(crate) async fn release(mut self) {
        if let Some(mut pipe) = self.pipe.take() {
            let _ = pipe.write_all(b"done\n").await;
            let _ = pipe.flush().await;
        }
        let _ = tokio::time::timeout(std::time::Duration::from_secs(1), self.guard.wait()).await;
    }
}

/// Ties `command` to `relock`: on Linux, the parent-death signal, set in the command's process
/// before it `exec`s (SIGKILL when the thread that started it, the runtime's thread, which
/// lives as long as `relock`, ends); with a `tether`, the command's pid written to its guard.
pub(crate) fn tie(command: &mut Command, tether: Option<&Tether>) {
    #[cfg(target_os = "linux")]
    let parent = std::process::id();
    let announce = tether.and_then(Tether::announce_fd);
    // SAFETY: the closure runs in the forked child before exec and calls only prctl(2),
    // getppid(2), getpid(2), signal(2) and write(2), which are async-signal-safe; it formats
    // the pid into a buffer on the stack and allocates nothing (an error it returns is made
    // from a raw errno, which does not allocate).
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || {
            #[cfg(target_os = "linux")]
            {
                nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                    .map_err(std::io::Error::from)?;
                // relock died before the signal was set: nothing will send it now.
                if nix::unistd::getppid().as_raw() as u32 != parent {
                    return Err(std::io::Error::from_raw_os_error(nix::libc::ESRCH));
                }
            }
            if let Some(fd) = announce {
                let mut line = [0u8; 24];
                let len = pid_line(nix::libc::getpid() as u32, &mut line);
                // A gone guard must fail the spawn (EPIPE), not kill this child by SIGPIPE;
                // the default comes back before exec either way.
                nix::libc::signal(nix::libc::SIGPIPE, nix::libc::SIG_IGN);
                let written = nix::libc::write(fd, line.as_ptr().cast(), len);
                let errno = std::io::Error::last_os_error();
                nix::libc::signal(nix::libc::SIGPIPE, nix::libc::SIG_DFL);
                if written != len as isize {
                    return Err(if written < 0 {
                        errno
                    } else {
                        std::io::Error::from_raw_os_error(nix::libc::EIO)
                    });
                }
            }
            Ok(())
        });
    }
}

/// Writes `pid` and a newline into `buf` (no allocation: this runs between fork and exec);
/// returns the length.
fn pid_line(mut pid: u32, buf: &mut [u8; 24]) -> usize {
    let mut digits = [0u8; 10];
    let mut n = 0;
    loop {
        digits[n] = b'0' + (pid % 10) as u8;
        n += 1;
        pid /= 10;
        if pid == 0 {
            break;
        }
    }
    for i in 0..n {
        buf[i] = digits[n - 1 - i];
    }
    buf[n] = b'\n';
    n + 1
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use relock_testkit::wait_until;

    use super::{pid_line, tie, Tether};

    #[test]
    fn a_pid_is_written_as_its_digits_and_a_newline() {
        for (pid, want) in [
            (0, "0\n"),
            (7, "7\n"),
            (31993, "31993\n"),
            (u32::MAX, "4294967295\n"),
        ] {
            let mut buf = [0u8; 24];
            let len = pid_line(pid, &mut buf);
            assert_eq!(std::str::from_utf8(&buf[..len]).unwrap(), want);
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("relock-tether-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A command in a group of its own, tied to `tether`, that starts `sleep` and writes its
    /// pid to `dir/child.pid`.
    fn command(dir: &Path, tether: &Tether) -> tokio::process::Command {
        let mut command = tokio::process::Command::new("/bin/sh");
        command
            .args(["-c", "sleep 600 & echo $! > \"$0/child.pid\"; wait"])
            .arg(dir)
            .process_group(0);
        tie(&mut command, Some(tether));
        command
    }

    /// Starts [`command`] and waits for its child: the command and the child's pid.
    async fn started(dir: &Path, tether: &Tether) -> (tokio::process::Child, i32) {
        let child = command(dir, tether).spawn().unwrap();
        let pid_file = dir.join("child.pid");
        wait_until(Duration::from_secs(10), "the command's child", || async {
            std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n'))
        })
        .await
        .unwrap();
        let pid = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        (child, pid)
    }

    /// Kills the command's child when the test ends, passed or failed.
    struct Reap(i32);
    impl Drop for Reap {
        fn drop(&mut self) {
            if !alive(self.0) {
                return;
            }
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.0),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }

    fn alive(pid: i32) -> bool {
        // A zombie is no longer running: it waits only for its parent to read its status.
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                !s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
            .unwrap_or_else(|_| {
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
            })
    }

    /// The guard knows the command's group from the command itself: with no word from relock
    /// after the spawn, a closed pipe still ends the command and what it started.
    #[tokio::test]
    async fn the_guard_kills_the_group_the_command_announced_when_the_pipe_closes() {
        let dir = scratch("announce");
        let tether = Tether::start().unwrap();
        let (mut child, sleeper) = started(&dir, &tether).await;
        let _reap = Reap(sleeper);
        assert!(alive(sleeper));
        // relock dies: its end of the pipe closes without `done`.
        drop(tether);
        let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
            .await
            .expect("the command killed by the guard")
            .unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(nix::libc::SIGKILL), "{status:?}");
        wait_until(
            Duration::from_secs(10),
            "the command's child killed",
            || async { !alive(sleeper) },
        )
        .await
        .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A guard that is gone before the command starts: the start fails and nothing runs.
    #[tokio::test]
    async fn a_command_whose_guard_is_gone_is_not_run() {
        let dir = scratch("gone");
        let mut tether = Tether::start().unwrap();
        tether.guard.start_kill().unwrap();
        tether.guard.wait().await.unwrap();
        let err = command(&dir, &tether).spawn().unwrap_err();
        assert_eq!(err.raw_os_error(), Some(nix::libc::EPIPE), "{err:?}");
        assert!(tether.is_gone());
        assert!(!dir.join("child.pid").exists(), "the command ran");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Ended normally: `done`, and the guard exits without killing the group.
    #[tokio::test]
    async fn a_released_guard_exits_and_kills_nothing() {
        let dir = scratch("released");
        let tether = Tether::start().unwrap();
        let (mut child, sleeper) = started(&dir, &tether).await;
        let _reap = Reap(sleeper);
        let guard = tether.guard.id().unwrap() as i32;
        tether.release().await;
        assert!(!alive(guard), "the guard outlived its release");
        assert!(alive(sleeper), "the guard killed the command's child");
        // Clean up: the command's whole group.
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(child.id().unwrap() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        child.wait().await.unwrap();
        wait_until(
            Duration::from_secs(10),
            "the test's own processes gone",
            || async { !alive(sleeper) },
        )
        .await
        .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
