//! [`Error`]: the runtime-specific failures carried inside `std::io::Error`, and
//! [`BlockingError`]: why a blocking job produced no value.
//!
//! Every `io::Error` that the facade returns for a runtime reason (the runtime closed, a deadline
//! passed, no runtime on this thread, the runtime shutting down) carries an [`Error`] as its
//! inner error, so callers can tell those apart from operating-system errors:
//!
//! ```
//! # fn check(err: &std::io::Error) {
//! match baton::Error::from_io(err) {
//!     Some(baton::Error::Closed) => { /* the runtime is gone: stop */ }
//!     Some(other) => eprintln!("runtime error: {other}"),
//!     None => eprintln!("OS error: {err}"),
//! }
//! # }
//! ```

use std::io;

use baton_cancel::QuarantineBound;
use baton_completion::{IdentityError, RejectReason};

/// A runtime failure, carried as the inner error of an [`io::Error`]; downcast with
/// [`Error::from_io`] (or `err.get_ref().and_then(|e| e.downcast_ref::<baton::Error>())`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The runtime that owns the operation has shut down (or was dropped).
    #[error(
        "the Baton runtime owning this operation has shut down; create the operation on a \
         running runtime"
    )]
    Closed,
    /// The operation's deadline passed before it completed.
    #[error("the operation's deadline passed before it completed")]
    Timeout,
    /// A runtime-only function was called outside a runtime.
    #[error(
        "`{function}` needs a Baton runtime: call this inside `Runtime::block_on` or a task \
         spawned on a Baton runtime (from other threads, go through a `baton::Handle`)"
    )]
    NotInRuntime {
        /// The function that was called.
        function: &'static str,
    },
    /// The runtime is shutting down and accepts no new work.
    #[error("the Baton runtime is shutting down and accepts no new work")]
    ShuttingDown,
    /// The running kernel does not support an io_uring opcode the operation needs.
    #[error(
        "this kernel's io_uring does not support {opcode}; upgrade the kernel or do this work \
         with `baton::blocking::spawn_blocking`"
    )]
    Unsupported {
        /// The opcode's name, e.g. `"IORING_OP_STATX"`.
        opcode: &'static str,
    },
    /// The runtime could not be set up.
    #[error("the Baton runtime could not start: {reason}")]
    Setup {
        /// What failed, and what to do about it.
        reason: String,
    },
}

impl Error {
    /// The Baton error inside `err`, if it carries one.
    pub fn from_io(err: &io::Error) -> Option<&Error> {
        err.get_ref()?.downcast_ref::<Error>()
    }

    /// Whether `err` says the runtime was closed.
    pub fn is_closed(err: &io::Error) -> bool {
        matches!(Error::from_io(err), Some(Error::Closed))
    }

    /// Whether `err` says a deadline passed.
    pub fn is_timeout(err: &io::Error) -> bool {
        matches!(Error::from_io(err), Some(Error::Timeout))
    }

    /// Wraps this error into an [`io::Error`] of a matching kind.
    pub fn into_io(self) -> io::Error {
        let kind = match &self {
            Error::Closed | Error::ShuttingDown => io::ErrorKind::NotConnected,
            Error::Timeout => io::ErrorKind::TimedOut,
            Error::NotInRuntime { .. } | Error::Setup { .. } => io::ErrorKind::Other,
            Error::Unsupported { .. } => io::ErrorKind::Unsupported,
        };
        io::Error::new(kind, self)
    }
}

impl From<Error> for io::Error {
    fn from(err: Error) -> io::Error {
        err.into_io()
    }
}

impl From<baton_uring::Error> for Error {
    fn from(err: baton_uring::Error) -> Error {
        match err {
            baton_uring::Error::Timeout => Error::Timeout,
            baton_uring::Error::Unsupported { opcode } => Error::Unsupported { opcode },
            baton_uring::Error::NoDriver => Error::NotInRuntime {
                function: "an I/O operation",
            },
            // `Closed`, and any failure a newer driver adds: the runtime can no longer serve it.
            _ => Error::Closed,
        }
    }
}

/// Re-labels a driver error inside `err` as a [`baton::Error`](Error), keeping OS errors as
/// they are, so every runtime failure the facade returns downcasts to one type.
pub(crate) fn convert_io(err: io::Error) -> io::Error {
    match baton_uring::Error::from_io(&err) {
        Some(inner) => Error::from(inner.clone()).into_io(),
        None => err,
    }
}

/// Applies [`convert_io`] to a result.
pub(crate) fn convert<T>(result: io::Result<T>) -> io::Result<T> {
    result.map_err(convert_io)
}

/// Why a blocking job produced no value (the error of awaiting a
/// [`BlockingHandle`](crate::blocking::BlockingHandle)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BlockingError {
    /// The job was cancelled before it started (its body never ran): through its handle, by a
    /// pool that could not keep it (a lane left without threads), or, for a job started on the
    /// worker of a runtime with a shared executor and still queued there, by that worker's
    /// closure at shutdown. A job the runtime's own pool withdrew at shutdown is
    /// [`Closed`](BlockingError::Closed) instead.
    #[error("the blocking job was cancelled before it started")]
    Cancelled,
    /// The job panicked; the panic was caught on the pool thread.
    #[error("the blocking job panicked: {message}")]
    Panicked {
        /// The panic message.
        message: String,
    },
    /// A quarantined job outlived the bound it declared; it may still be running.
    #[error("the quarantined job outlived its bound ({bound}) and may still be running")]
    BoundExceeded {
        /// The bound it declared.
        bound: QuarantineBound,
    },
    /// The blocking pool refused the job (full queue, shutting down, ...).
    #[error("the blocking pool refused the job: {reason}")]
    Rejected {
        /// Why.
        reason: RejectReason,
    },
    /// The runtime ran out of completion identities for new jobs.
    #[error("the blocking job could not get a completion identity: {0}")]
    Identities(#[from] IdentityError),
    /// The runtime shut down before the job's result could be delivered: its shutdown withdrew
    /// the job before it started (its body never ran), or the worker closed before the result
    /// reached the handle (the body ran, or runs on, and its result is dropped), or the job was
    /// started on a runtime already shut down.
    #[error(
        "the Baton runtime shut down before the blocking job's result was delivered; keep the \
         runtime alive until its blocking jobs finish"
    )]
    Closed,
    /// There was no runtime to run the job on.
    #[error(
        "`spawn_blocking` needs a Baton runtime: call it inside `Runtime::block_on` or a task \
         spawned on a Baton runtime, or use `Handle::spawn_blocking`"
    )]
    NotInRuntime,
}

/// A blocking job that produced no value is an I/O failure to code that returns `io::Result`,
/// so `spawn_blocking(..).await?` works there. The runtime's own refusals become [`Error`]s
/// (`Closed`, `ShuttingDown`, `NotInRuntime`, with their kinds); the job's own failures
/// (cancelled, panicked, bound exceeded, ...) are kept whole as the payload of an
/// [`ErrorKind::Other`](io::ErrorKind::Other) error.
impl From<BlockingError> for io::Error {
    fn from(err: BlockingError) -> io::Error {
        err.into_io_for("blocking::spawn_blocking")
    }
}

impl BlockingError {
    /// Whether the job was cancelled before it ran.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, BlockingError::Cancelled)
    }

    /// Whether the job panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self, BlockingError::Panicked { .. })
    }

    /// The `io::Error` a call that ran its work on the blocking pool (`function`, named in a
    /// not-in-runtime message) returns for this failure: the runtime's own errors become
    /// [`Error`]s, the job's are carried as they are.
    pub(crate) fn into_io_for(self, function: &'static str) -> io::Error {
        match self {
            BlockingError::NotInRuntime => Error::NotInRuntime { function }.into_io(),
            BlockingError::Closed => Error::Closed.into_io(),
            BlockingError::Rejected {
                reason: RejectReason::ShuttingDown | RejectReason::Detached,
            } => Error::ShuttingDown.into_io(),
            other => io::Error::other(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_closed_becomes_baton_closed() {
        let err = convert_io(baton_uring::Error::Closed.into_io());
        assert_eq!(Error::from_io(&err), Some(&Error::Closed));
        assert_eq!(err.kind(), io::ErrorKind::NotConnected);
    }

    #[test]
    fn driver_timeout_becomes_baton_timeout() {
        let err = convert_io(baton_uring::Error::Timeout.into_io());
        assert!(Error::is_timeout(&err));
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    }

    #[test]
    fn os_errors_pass_through_unchanged() {
        let err = convert_io(io::Error::from_raw_os_error(libc::ENOENT));
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
        assert!(Error::from_io(&err).is_none());
    }

    #[test]
    fn not_in_runtime_says_what_to_do() {
        let message = Error::NotInRuntime {
            function: "fs::read",
        }
        .to_string();
        assert!(message.contains("Runtime::block_on"), "{message}");
        assert!(message.contains("fs::read"), "{message}");
    }
}
