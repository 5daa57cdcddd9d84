//! Errors: runtime failures carried inside `io::Error`, and ring set-up failures.

use std::io;

/// A runtime failure of an operation, carried as the inner error of an [`io::Error`] (the facade
/// re-exports it as `baton::Error`). Downcast with `err.get_ref()?.downcast_ref::<Error>()`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The driver that owns the operation has closed or was dropped.
    #[error(
        "the Baton driver owning this operation has closed; create the operation on a running runtime"
    )]
    Closed,
    /// The operation's deadline passed before it completed.
    #[error("the operation's deadline passed before it completed")]
    Timeout,
    /// The running kernel does not support the io_uring opcode the operation needs.
    #[error(
        "this kernel's io_uring does not support {opcode}; upgrade the kernel or use the blocking pool"
    )]
    Unsupported {
        /// The opcode's name, e.g. `"IORING_OP_STATX"`.
        opcode: &'static str,
    },
    /// No driver is entered on the polling thread and the operation was not bound to one.
    #[error(
        "no Baton driver is entered on this thread; poll the operation inside a runtime or build it from a DriverHandle"
    )]
    NoDriver,
}

impl Error {
    /// Wraps this error into an [`io::Error`] of a matching kind.
    pub fn into_io(self) -> io::Error {
        let kind = match self {
            Error::Closed => io::ErrorKind::NotConnected,
            Error::Timeout => io::ErrorKind::TimedOut,
            Error::Unsupported { .. } => io::ErrorKind::Unsupported,
            Error::NoDriver => io::ErrorKind::Other,
        };
        io::Error::new(kind, self)
    }

    /// Returns the Baton error inside `err`, if it carries one.
    pub fn from_io(err: &io::Error) -> Option<&Error> {
        err.get_ref()?.downcast_ref::<Error>()
    }
}

impl From<Error> for io::Error {
    fn from(err: Error) -> io::Error {
        err.into_io()
    }
}

/// Why [`Driver::new`](crate::Driver::new) could not set up a ring.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// `ring_entries` was zero.
    #[error("ring_entries must be at least 1")]
    ZeroEntries,
    /// `ring_entries` exceeds what the kernel accepts.
    #[error("ring_entries {requested} exceeds the kernel's maximum of {max}")]
    TooManyEntries {
        /// What the configuration asked for.
        requested: u32,
        /// The kernel's limit (`IORING_MAX_ENTRIES`).
        max: u32,
    },
    /// `max_in_flight` was zero.
    #[error("max_in_flight must be at least 1")]
    ZeroInFlight,
    /// The kernel refused to lock the ring's memory.
    #[error(
        "io_uring set-up ran out of locked memory ({source}); raise `ulimit -l` (RLIMIT_MEMLOCK) or use fewer ring_entries"
    )]
    Memlock {
        /// The OS error (ENOMEM).
        source: io::Error,
    },
    /// io_uring is disabled or forbidden for this process.
    #[error(
        "io_uring is disabled or forbidden for this process ({source}); check the seccomp filter or container runtime policy (Docker's default profile blocks io_uring), the sysctl kernel.io_uring_disabled, and membership of the group in kernel.io_uring_group"
    )]
    Disabled {
        /// The OS error (EPERM, ENOSYS or EACCES).
        source: io::Error,
    },
    /// The kernel lacks a feature the driver needs.
    #[error("this kernel's io_uring lacks {feature}; Baton needs Linux 5.11 or newer")]
    MissingFeature {
        /// The feature's name.
        feature: &'static str,
    },
    /// The wake-up eventfd could not be created.
    #[error("could not create the driver's wake-up eventfd: {source}")]
    Eventfd {
        /// The OS error.
        source: io::Error,
    },
    /// Any other set-up failure.
    #[error("io_uring set-up failed: {source}")]
    Os {
        /// The OS error.
        source: io::Error,
    },
}
