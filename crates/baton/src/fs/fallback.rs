//! Ring first, blocking pool second: how a file-system call runs.
//!
//! A call with a ring request awaits it; when the running kernel lacks the opcode, the driver
//! refuses the request at registration — nothing was submitted, nothing happened — with
//! `Unsupported`, and the call runs its `std` twin on the blocking pool instead
//! ([`ring_or_pool`]). Calls the ring cannot express (listing a directory, copying, resolving a
//! path, removing a tree) go to the pool directly ([`on_pool`]).
//!
//! Rules (cited from this module's siblings as "fallback rule Y1"):
//!
//! Y1. A call that changes the file system finishes once its future was first polled, even if
//!    the future is then dropped ([`OnDrop::Finish`]): on the ring its request is retained
//!    (lifecycle rule U5); on the pool a relay task owns the job's handle, so a job still queued
//!    is not cancelled by the drop.
//!
//! Y2. A call that only looks ([`OnDrop::Cancel`]) is cancelled by a drop: its ring request gets
//!    an async cancel, its pool job is cancelled if it has not started.
//!
//! Y3. A path is checked for NUL bytes before anything is submitted, on either road, and
//!    refused with `InvalidInput`, the same message both ways.

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};

use crate::context;
use crate::error::{BlockingError, Error, convert};
use crate::handle::Handle;

/// What dropping a call's future does to work not finished yet (Y1 and Y2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OnDrop {
    /// The call only looks: cancel it.
    Cancel,
    /// The call changes the file system: finish it.
    Finish,
}

/// Y3's message; the driver refuses NUL paths with the same words.
const PATH_HAS_NUL: &str = "the path contains a NUL byte, which the kernel would read as the end of the path: pass a path without NUL bytes";

/// Y3: `InvalidInput` if `path` holds a NUL byte.
pub(super) fn check_path(path: &Path) -> io::Result<()> {
    if path.as_os_str().as_encoded_bytes().contains(&0) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, PATH_HAS_NUL));
    }
    Ok(())
}

/// The start of a call that runs `std` on the blocking pool with its own copy of `path`:
/// `path` refused for a NUL byte before anything runs ([`check_path`]), then the current
/// runtime (`function` names the call when there is none), and the path to move to the pool.
pub(super) fn pool_path(function: &'static str, path: &Path) -> io::Result<(Handle, PathBuf)> {
    check_path(path)?;
    let handle = context::require(function)?;
    Ok((handle, path.to_owned()))
}

/// Whether `err` says the kernel lacks the request's opcode.
fn unsupported(err: &io::Error) -> bool {
    matches!(Error::from_io(err), Some(Error::Unsupported { .. }))
}

/// Awaits the ring request `ring`; if the kernel lacks its opcode, runs the job that
/// `fallback` makes on the pool instead (`fallback` is called only then, so the ring road
/// copies no path).
pub(super) async fn ring_or_pool<T, J>(
    handle: &Handle,
    function: &'static str,
    on_drop: OnDrop,
    ring: impl Future<Output = io::Result<T>>,
    fallback: impl FnOnce() -> J,
) -> io::Result<T>
where
    T: Send + 'static,
    J: FnOnce() -> io::Result<T> + Send + 'static,
{
    match on_ring(ring).await {
        Err(err) if unsupported(&err) => on_pool(handle, function, on_drop, fallback()).await,
        done => done,
    }
}

/// Awaits a ring request, converting driver errors into Baton's. Under `cfg(test)` the
/// `knob::refuse_ring` guard makes it refuse as a kernel without the opcode would, before the
/// request is ever polled (so nothing is registered).
async fn on_ring<T>(ring: impl Future<Output = io::Result<T>>) -> io::Result<T> {
    #[cfg(test)]
    if knob::refusing() {
        drop(ring);
        return Err(Error::Unsupported {
            opcode: "the request (refused by the cfg(test) knob)",
        }
        .into_io());
    }
    convert(ring.await)
}

/// Runs `job` on `handle`'s blocking pool, dropped as `on_drop` says (Y1 and Y2).
pub(super) async fn on_pool<T, J>(
    handle: &Handle,
    function: &'static str,
    on_drop: OnDrop,
    job: J,
) -> io::Result<T>
where
    T: Send + 'static,
    J: FnOnce() -> io::Result<T> + Send + 'static,
{
    let job = handle.spawn_blocking(job);
    let outcome = match on_drop {
        OnDrop::Cancel => job.await,
        // Y1: the relay task, not this future, owns the job's handle.
        OnDrop::Finish => match handle.spawn(job).await {
            Ok(outcome) => outcome,
            Err(join) if join.is_cancelled() => Err(BlockingError::Closed),
            Err(join) => Err(BlockingError::Panicked {
                message: join.to_string(),
            }),
        },
    };
    outcome.unwrap_or_else(|err| Err(err.into_io_for(function)))
}

/// The `cfg(test)` knob that makes [`on_ring`] refuse every request on this thread, as a
/// kernel without the opcodes would, so the facade's fallback runs on a kernel that has them.
#[cfg(test)]
pub(crate) mod knob {
    use std::cell::Cell;

    thread_local! {
        static REFUSING: Cell<bool> = const { Cell::new(false) };
    }

    pub(super) fn refusing() -> bool {
        REFUSING.with(Cell::get)
    }

    /// Refuses ring requests polled on this thread until the guard drops.
    pub(crate) fn refuse_ring() -> Refusing {
        REFUSING.with(|r| r.set(true));
        Refusing
    }

    /// Ends [`refuse_ring`] when dropped.
    #[derive(Debug)]
    pub(crate) struct Refusing;

    impl Drop for Refusing {
        fn drop(&mut self) {
            REFUSING.with(|r| r.set(false));
        }
    }
}
