//! [`Child`]: a spawned process, its exit awaited through a pidfd on the ring, and its piped
//! standard streams.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};
use std::process::{ExitStatus, Output};
use std::sync::Arc;

use baton_uring::ops;

use crate::error::convert;
use crate::handle::Handle;
use crate::io::{AsyncRead, AsyncReadExt, AsyncWrite, BufResult, IoBuf, IoBufMut};
use crate::io::{IoVecBuf, IoVecBufMut};
use crate::process::pipe::Pipe;

/// A spawned child process.
///
/// Dropping a `Child` before it exited leaves it running (or kills it, with
/// [`kill_on_drop`](super::Command::kill_on_drop)); either way the runtime reaps it once it
/// exits, so it does not linger as a zombie.
#[derive(Debug)]
pub struct Child {
    /// `None` once reaped.
    process: Option<std::process::Child>,
    /// Readable once the process exited. Invariant: refers to `process`, which is not reaped
    /// while the pidfd is in use, so the pid cannot be reused under it.
    pidfd: Arc<OwnedFd>,
    status: Option<ExitStatus>,
    kill_on_drop: bool,
    handle: Handle,
    /// The child's standard input, when piped.
    pub stdin: Option<ChildStdin>,
    /// The child's standard output, when piped.
    pub stdout: Option<ChildStdout>,
    /// The child's standard error, when piped.
    pub stderr: Option<ChildStderr>,
}

impl Child {
    pub(super) fn new(
        mut process: std::process::Child,
        [stdin, stdout, stderr]: [Option<OwnedFd>; 3],
        kill_on_drop: bool,
        handle: Handle,
    ) -> io::Result<Child> {
        let pidfd = match pidfd_open(process.id()) {
            Ok(pidfd) => Arc::new(pidfd),
            Err(err) => {
                // Without a pidfd the child could never be waited for here: end it rather
                // than leave it running unowned (and a zombie once it exits).
                let _ = process.kill();
                let _ = process.wait();
                return Err(err);
            }
        };
        let stream = |fd: Option<OwnedFd>| fd.map(|fd| Pipe::new(fd, handle.clone()));
        let (stdin, stdout, stderr) = (stream(stdin), stream(stdout), stream(stderr));
        Ok(Child {
            process: Some(process),
            pidfd,
            status: None,
            kill_on_drop,
            handle,
            stdin: stdin.map(|pipe| ChildStdin { pipe, shut: false }),
            stdout: stdout.map(|pipe| ChildStdout { pipe }),
            stderr: stderr.map(|pipe| ChildStderr { pipe }),
        })
    }

    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.process.as_ref().map_or(0, std::process::Child::id)
    }

    /// Waits for the child to exit (the ring polls its pidfd) and returns its status; later
    /// calls return the same status. Standard input is *not* closed first: drop
    /// [`stdin`](Child::stdin) for a child that reads to the end.
    ///
    /// # Errors
    ///
    /// The OS error of `waitpid(2)`, or [`Error::Closed`](crate::Error::Closed) when the
    /// runtime shut down first.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: the child is unaffected, and a later `wait` still gets its status.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(status);
            }
            let op = ops::poll_readable(Arc::clone(&self.pidfd));
            convert(op.bind_borrowed(self.handle.driver()).await)?;
        }
    }

    /// The child's status if it exited, without waiting.
    ///
    /// # Errors
    ///
    /// The OS error of `waitpid(2)`.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        let Some(process) = self.process.as_mut() else {
            return Ok(None);
        };
        let status = process.try_wait()?;
        self.status = status;
        Ok(status)
    }

    /// Sends `SIGKILL` to the child (unless it already exited) without waiting for it.
    ///
    /// # Errors
    ///
    /// The OS error of `kill(2)`.
    pub fn start_kill(&mut self) -> io::Result<()> {
        if self.try_wait()?.is_some() {
            return Ok(());
        }
        match self.process.as_mut() {
            Some(process) => process.kill(),
            None => Ok(()),
        }
    }

    /// Kills the child and waits for it to exit.
    ///
    /// # Errors
    ///
    /// As [`start_kill`](Child::start_kill) and [`wait`](Child::wait).
    ///
    /// # Cancel safety
    ///
    /// The signal is sent at the first poll; dropping the future after that only stops the
    /// wait, which a later [`wait`](Child::wait) resumes (the exit status is not lost).
    pub async fn kill(&mut self) -> io::Result<()> {
        self.start_kill()?;
        self.wait().await.map(drop)
    }

    /// Closes standard input, reads standard output and error to their ends (at the same
    /// time, so a child filling one while the other is unread cannot deadlock), and waits.
    ///
    /// # Errors
    ///
    /// The first error of the reads or the wait.
    ///
    /// # Cancel safety
    ///
    /// Not cancel-safe: it consumes the `Child`, so dropping the future drops what was read so
    /// far and the child's streams (the runtime still reaps the child once it exits).
    pub async fn wait_with_output(mut self) -> io::Result<Output> {
        drop(self.stdin.take());
        let stdout = self.stdout.take();
        let stderr = self.stderr.take();
        let err_reader = stderr.map(|mut stderr| {
            self.handle
                .spawn(async move { stderr.read_to_end(Vec::new()).await })
        });
        let out = match stdout {
            Some(mut stdout) => {
                let (res, out) = stdout.read_to_end(Vec::new()).await;
                res?;
                out
            }
            None => Vec::new(),
        };
        let err = match err_reader {
            Some(reader) => {
                let (res, err) = reader.await.map_err(io::Error::other)?;
                res?;
                err
            }
            None => Vec::new(),
        };
        let status = self.wait().await?;
        Ok(Output {
            status,
            stdout: out,
            stderr: err,
        })
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.try_wait().ok().flatten().is_some() {
            return;
        }
        if self.kill_on_drop {
            let _ = self.start_kill();
        }
        // Reaped by a task once it exits, so no zombie stays behind.
        let Some(mut process) = self.process.take() else {
            return;
        };
        let pidfd = Arc::clone(&self.pidfd);
        let handle = self.handle.clone();
        let reaper = self.handle.try_spawn(async move {
            loop {
                if !matches!(process.try_wait(), Ok(None)) {
                    return;
                }
                let op = ops::poll_readable(Arc::clone(&pidfd));
                if op.bind_borrowed(handle.driver()).await.is_err() {
                    return;
                }
            }
        });
        // A runtime shutting down refuses the task: the child is left to the OS then.
        drop(reaper);
    }
}

/// `pidfd_open(2)`: a descriptor that becomes readable when process `pid` exits.
fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    let pid = libc::pid_t::try_from(pid).map_err(io::Error::other)?;
    // SAFETY: pidfd_open has no memory-safety preconditions; the result is checked below.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        let err = io::Error::last_os_error();
        return Err(io::Error::new(
            err.kind(),
            format!("pidfd_open failed ({err}); waiting for a child needs Linux 5.3 or later"),
        ));
    }
    let fd = i32::try_from(fd).map_err(io::Error::other)?;
    // SAFETY: `fd` was just returned by pidfd_open and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The child's standard input: write to it; drop it (or `shutdown`) to close it, so a child
/// that reads to the end ends.
#[derive(Debug)]
pub struct ChildStdin {
    pipe: Pipe,
    /// `shutdown` closed the pipe for the child; writes are refused.
    shut: bool,
}

macro_rules! child_output {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name {
            pipe: Pipe,
        }

        impl AsyncRead for $name {
            fn read<B: IoBufMut>(
                &mut self,
                buf: B,
            ) -> impl std::future::Future<Output = BufResult<usize, B>> + Send {
                self.pipe.read(buf)
            }

            fn read_vectored<V: IoVecBufMut>(
                &mut self,
                bufs: V,
            ) -> impl std::future::Future<Output = BufResult<usize, V>> + Send {
                self.pipe.read_vectored(bufs)
            }
        }
    };
}

child_output!(
    /// The child's standard output. Reads are cancel-safe: bytes a dropped read got come with
    /// the next one.
    ChildStdout
);
child_output!(
    /// The child's standard error. Reads are cancel-safe, as [`ChildStdout`]'s.
    ChildStderr
);

macro_rules! as_fd {
    ($($name:ident),+) => {
        $(impl AsFd for $name {
            /// Our end of the pipe (after [`ChildStdin`]'s `shutdown`, `/dev/null`).
            fn as_fd(&self) -> BorrowedFd<'_> {
                self.pipe.as_fd()
            }
        })+
    };
}

as_fd!(ChildStdin, ChildStdout, ChildStderr);

impl ChildStdin {
    /// The refusal of a write after `shutdown`: std's error for a closed pipe.
    fn shut_error() -> io::Error {
        io::Error::new(
            io::ErrorKind::BrokenPipe,
            "the child's standard input was shut down; no more can be written to it",
        )
    }
}

impl AsyncWrite for ChildStdin {
    async fn write<B: IoBuf>(&mut self, buf: B) -> BufResult<usize, B> {
        if self.shut {
            return (Err(Self::shut_error()), buf);
        }
        self.pipe.write(buf).await
    }

    async fn write_vectored<V: IoVecBuf>(&mut self, bufs: V) -> BufResult<usize, V> {
        if self.shut {
            return (Err(Self::shut_error()), bufs);
        }
        self.pipe.write_vectored(bufs).await
    }

    fn flush(&mut self) -> impl std::future::Future<Output = io::Result<()>> + Send {
        std::future::ready(Ok(()))
    }

    /// Waits for the writes still running, then closes the pipe for the child, which reads the
    /// end of its input; later writes fail with `BrokenPipe`. A second `shutdown` is `Ok`.
    async fn shutdown(&mut self) -> io::Result<()> {
        if self.shut {
            return Ok(());
        }
        self.pipe.writes_settled().await;
        self.pipe.close_for_child()?;
        self.shut = true;
        Ok(())
    }
}
