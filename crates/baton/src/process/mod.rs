//! Child processes: [`Command`] spawns, [`Child::wait`] waits on the ring, and piped standard
//! streams are Baton streams ([`ChildStdin`], [`ChildStdout`], [`ChildStderr`]).
//!
//! A child's exit is awaited through a pidfd (`pidfd_open(2)`, Linux 5.3+) that the ring
//! polls, so waiting blocks no thread and needs no `SIGCHLD` handler. A piped stream is a real
//! pipe (`pipe2(2)`, as std's and tokio's are), so the child can do with it all it does with
//! a pipe (`cat /dev/stdin`, `echo x > /dev/stderr`, `splice`); our end is read and written
//! by the ring at the pipe's own position (`IORING_OP_READ`/`WRITE` with offset −1), and its
//! reads are cancel-safe as a socket's are (bytes a dropped read got come with the next).
//! Writes are retained and keep their order. A write to a child that closed its input fails
//! with `BrokenPipe`; as for any pipe, the kernel also raises `SIGPIPE`, which Rust programs
//! ignore by default (an embedder that does not should ignore it too, as with std's pipes).
//!
//! ```
//! use baton::io::AsyncReadExt;
//! use baton::process::{Command, Stdio};
//! # fn main() -> std::io::Result<()> {
//! let rt = baton::Runtime::new()?;
//! rt.block_on(async {
//!     let mut child = Command::new("echo").arg("hello").stdout(Stdio::piped()).spawn()?;
//!     let mut stdout = child.stdout.take().expect("piped");
//!     let (res, out) = stdout.read_to_end(Vec::new()).await;
//!     res?;
//!     assert_eq!(out, b"hello\n");
//!     assert!(child.wait().await?.success());
//!     Ok(())
//! })
//! # }
//! ```

mod child;
mod pipe;

use std::ffi::OsStr;
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
pub use std::process::{ExitStatus, Output};

pub use child::{Child, ChildStderr, ChildStdin, ChildStdout};

/// How a child's standard stream is set up: inherited (the default for `spawn`), a pipe whose
/// other end is a Baton stream (`piped`), or `/dev/null` (`null`).
#[derive(Debug)]
pub struct Stdio(Kind);

#[derive(Debug)]
enum Kind {
    Inherit,
    Piped,
    Null,
}

impl Stdio {
    /// The child uses the parent's stream.
    pub fn inherit() -> Stdio {
        Stdio(Kind::Inherit)
    }

    /// The parent gets a Baton stream to the child's stream ([`Child::stdin`], ...).
    pub fn piped() -> Stdio {
        Stdio(Kind::Piped)
    }

    /// The child's stream is `/dev/null`.
    pub fn null() -> Stdio {
        Stdio(Kind::Null)
    }
}

/// A process to spawn: `std::process::Command`'s builder, spawning onto the current runtime.
#[derive(Debug)]
pub struct Command {
    std: std::process::Command,
    stdio: [Option<Stdio>; 3],
    kill_on_drop: bool,
}

impl Command {
    /// A command running `program` (looked up in `PATH` as `std` does).
    pub fn new(program: impl AsRef<OsStr>) -> Command {
        Command {
            std: std::process::Command::new(program),
            stdio: [None, None, None],
            kill_on_drop: false,
        }
    }

    /// Adds an argument.
    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Command {
        self.std.arg(arg);
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.std.args(args);
        self
    }

    /// Sets an environment variable for the child.
    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Command {
        self.std.env(key, value);
        self
    }

    /// Removes an environment variable from the child's environment.
    pub fn env_remove(&mut self, key: impl AsRef<OsStr>) -> &mut Command {
        self.std.env_remove(key);
        self
    }

    /// Starts the child with an empty environment (then add with [`env`](Command::env)).
    pub fn env_clear(&mut self) -> &mut Command {
        self.std.env_clear();
        self
    }

    /// The child's working directory.
    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Command {
        self.std.current_dir(dir);
        self
    }

    /// The child's standard input.
    pub fn stdin(&mut self, stdio: Stdio) -> &mut Command {
        self.stdio[0] = Some(stdio);
        self
    }

    /// The child's standard output.
    pub fn stdout(&mut self, stdio: Stdio) -> &mut Command {
        self.stdio[1] = Some(stdio);
        self
    }

    /// The child's standard error.
    pub fn stderr(&mut self, stdio: Stdio) -> &mut Command {
        self.stdio[2] = Some(stdio);
        self
    }

    /// Kills the child (`SIGKILL`) when its [`Child`] is dropped before it exited. Off by
    /// default: a dropped child runs on, and the runtime reaps it when it exits.
    pub fn kill_on_drop(&mut self, kill: bool) -> &mut Command {
        self.kill_on_drop = kill;
        self
    }

    /// Spawns the child. Standard streams not set are inherited.
    ///
    /// # Errors
    ///
    /// The OS error of starting it (`NotFound` for a missing program, as `std`), of the
    /// pipes, or of `pidfd_open(2)`; [`Error::NotInRuntime`](crate::Error)
    /// outside a runtime.
    pub fn spawn(&mut self) -> io::Result<Child> {
        self.spawn_with([Kind::Inherit, Kind::Inherit, Kind::Inherit])
    }

    /// Runs the child to its exit with inherited streams (unless set) and returns its status.
    ///
    /// # Errors
    ///
    /// As [`spawn`](Command::spawn) and [`Child::wait`].
    ///
    /// # Cancel safety
    ///
    /// Dropping the future after the child was spawned leaves the child running (or kills it,
    /// with [`kill_on_drop`](Command::kill_on_drop)); the runtime reaps it once it exits, and
    /// its status is lost with the future.
    pub async fn status(&mut self) -> io::Result<ExitStatus> {
        let mut child = self.spawn()?;
        drop(child.stdin.take());
        child.wait().await
    }

    /// Runs the child to its exit, capturing its output and error streams (standard input is
    /// `/dev/null` unless set), and returns them with its status.
    ///
    /// # Errors
    ///
    /// As [`spawn`](Command::spawn) and [`Child::wait`].
    ///
    /// # Cancel safety
    ///
    /// As [`status`](Command::status); the output read so far is lost with the future.
    pub async fn output(&mut self) -> io::Result<Output> {
        self.spawn_with([Kind::Null, Kind::Piped, Kind::Piped])?
            .wait_with_output()
            .await
    }

    /// Spawns with `defaults` for the streams not set.
    fn spawn_with(&mut self, defaults: [Kind; 3]) -> io::Result<Child> {
        let handle = crate::context::require("process::Command::spawn")?;
        let mut ours: [Option<OwnedFd>; 3] = [None, None, None];
        for (index, default) in defaults.into_iter().enumerate() {
            let kind = self.stdio[index].take().map_or(default, |s| s.0);
            let theirs = match kind {
                Kind::Inherit => std::process::Stdio::inherit(),
                Kind::Null => std::process::Stdio::null(),
                Kind::Piped => {
                    let (mine, child_end) = pipe::pipe_pair(index == 0)?;
                    ours[index] = Some(mine);
                    std::process::Stdio::from(child_end)
                }
            };
            match index {
                0 => self.std.stdin(theirs),
                1 => self.std.stdout(theirs),
                _ => self.std.stderr(theirs),
            };
        }
        let child = self.std.spawn();
        // The builder keeps the child's ends otherwise; a later spawn sets new ones.
        self.std
            .stdin(std::process::Stdio::inherit())
            .stdout(std::process::Stdio::inherit())
            .stderr(std::process::Stdio::inherit());
        Child::new(child?, ours, self.kill_on_drop, handle)
    }
}
