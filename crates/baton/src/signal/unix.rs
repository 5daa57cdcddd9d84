//! Unix signals as streams of deliveries: [`signal`] and [`Signal`].

use std::future::poll_fn;
use std::io;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::hub::Hub;
use super::registry::{self, SIGNALS};
use crate::context;

/// A signal to listen for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SignalKind(libc::c_int);

impl SignalKind {
    /// Any signal by number (`libc::SIGUSR1`, ...).
    pub const fn from_raw(signum: libc::c_int) -> SignalKind {
        SignalKind(signum)
    }

    /// The signal's number.
    pub const fn as_raw_value(self) -> libc::c_int {
        self.0
    }

    /// `SIGINT` (Ctrl-C in a terminal).
    pub const fn interrupt() -> SignalKind {
        SignalKind(libc::SIGINT)
    }

    /// `SIGTERM` (a polite request to stop: what `kill` and service managers send).
    pub const fn terminate() -> SignalKind {
        SignalKind(libc::SIGTERM)
    }

    /// `SIGHUP` (the terminal went away; by convention also "reload the configuration").
    pub const fn hangup() -> SignalKind {
        SignalKind(libc::SIGHUP)
    }

    /// `SIGQUIT`.
    pub const fn quit() -> SignalKind {
        SignalKind(libc::SIGQUIT)
    }

    /// `SIGUSR1`.
    pub const fn user_defined1() -> SignalKind {
        SignalKind(libc::SIGUSR1)
    }

    /// `SIGUSR2`.
    pub const fn user_defined2() -> SignalKind {
        SignalKind(libc::SIGUSR2)
    }

    /// `SIGWINCH` (the terminal was resized).
    pub const fn window_change() -> SignalKind {
        SignalKind(libc::SIGWINCH)
    }

    /// `SIGCHLD` (a child process changed state).
    pub const fn child() -> SignalKind {
        SignalKind(libc::SIGCHLD)
    }

    /// `SIGPIPE` (a write to a pipe without a reader; sockets here never raise it).
    pub const fn pipe() -> SignalKind {
        SignalKind(libc::SIGPIPE)
    }

    /// `SIGALRM`.
    pub const fn alarm() -> SignalKind {
        SignalKind(libc::SIGALRM)
    }
}

/// Signals a handler must not take over: the kernel does not let one catch `SIGKILL` or
/// `SIGSTOP`, and returning from a handler of a fault (`SIGSEGV`, `SIGBUS`, `SIGILL`,
/// `SIGFPE`) re-runs the faulting instruction forever.
const FORBIDDEN: [libc::c_int; 6] = [
    libc::SIGKILL,
    libc::SIGSTOP,
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
];

/// Listens for `kind` on the current runtime. Each [`Signal`] sees every delivery that
/// happens after it was created, wherever the kernel delivers it; deliveries while it is not
/// polling coalesce into one.
///
/// The first listener of a signal installs a process-wide handler that stays for the
/// process's life and replaces the signal's default action (for `SIGINT` and `SIGTERM`:
/// ending the process), as tokio's does.
///
/// ```
/// use baton::signal::unix::{SignalKind, signal};
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// rt.block_on(async {
///     let mut hangups = signal(SignalKind::hangup())?;
///     // SAFETY: kill(2) to this process has no memory-safety preconditions.
///     unsafe { libc::kill(libc::getpid(), libc::SIGHUP) };
///     assert_eq!(hangups.recv().await, Some(()));
///     Ok(())
/// })
/// # }
/// ```
///
/// # Errors
///
/// `InvalidInput` for a signal number out of range or one that cannot be handled (`SIGKILL`,
/// `SIGSTOP`, and the fault signals); the OS error of `sigaction(2)` or `eventfd(2)`;
/// [`Error::NotInRuntime`](crate::Error::NotInRuntime) outside a runtime.
pub fn signal(kind: SignalKind) -> io::Result<Signal> {
    let signum = usize::try_from(kind.0)
        .ok()
        .filter(|s| (1..SIGNALS).contains(s))
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("signal number {} is out of range (1..=64)", kind.0),
            )
        })?;
    if FORBIDDEN.contains(&kind.0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "signal {} cannot be handled (SIGKILL, SIGSTOP and fault signals are refused)",
                kind.0
            ),
        ));
    }
    let handle = context::require("signal::unix::signal")?;
    let hub = Hub::of(&handle)?;
    // Counted before installing: a delivery racing the installation is seen either way.
    let seen = registry::deliveries(signum);
    registry::install(signum)?;
    Ok(Signal { hub, signum, seen })
}

/// Deliveries of one signal, as a stream: [`recv`](Signal::recv) resolves once per batch of
/// deliveries since the last one.
#[derive(Debug)]
pub struct Signal {
    hub: Arc<Hub>,
    signum: usize,
    /// The delivery count this listener has seen.
    seen: u64,
}

impl Signal {
    /// Waits for the next delivery: `Some(())`, or `None` once the runtime shut down.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: a delivery that happens while no `recv` is waiting is seen by the next.
    pub async fn recv(&mut self) -> Option<()> {
        poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// [`recv`](Signal::recv) as a poll method, for hand-written futures and streams.
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<()>> {
        if self.take_delivery() {
            return Poll::Ready(Some(()));
        }
        if self.hub.is_closed() {
            return Poll::Ready(None);
        }
        self.hub.register(cx.waker());
        // Looked at again after registering: a delivery (or a close) in between woke nobody.
        if self.take_delivery() {
            return Poll::Ready(Some(()));
        }
        if self.hub.is_closed() {
            return Poll::Ready(None);
        }
        Poll::Pending
    }

    fn take_delivery(&mut self) -> bool {
        let now = registry::deliveries(self.signum);
        if now == self.seen {
            return false;
        }
        self.seen = now;
        true
    }
}
