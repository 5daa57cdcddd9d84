//! Files on the ring: [`File`], [`OpenOptions`], and the whole-file helpers [`read`],
//! [`write()`] and [`remove_file`].
//!
//! Opens, reads, writes, syncs and closes are io_uring requests on the runtime's worker
//! (`baton-uring`); `remove_file` has no ring request in the driver and runs on the blocking
//! pool instead. All of them need a runtime: called outside one they fail with
//! [`Error::NotInRuntime`](crate::Error::NotInRuntime).

mod file;
mod open_options;
mod stream;

pub use file::{File, StartedSync};
pub use open_options::OpenOptions;

use std::io;
use std::path::Path;

use crate::io::IoBuf;

use baton_completion::RejectReason;

use crate::blocking;
use crate::error::BlockingError;

/// How much more room [`read`] reserves once its buffer is full (the file kept going).
const READ_CHUNK: usize = 64 * 1024;

/// How much room past the file's size [`read`] reserves up front to learn whether the file
/// ended where its size said (the common case reads 0 bytes there).
const EOF_PROBE: usize = 512;

/// Reads the whole file at `path`.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// # let rt = baton::Runtime::new()?;
/// # let path = std::env::temp_dir().join(format!("baton-doc-read-{}", std::process::id()));
/// rt.block_on(async {
///     baton::fs::write(&path, b"contents").await?;
///     assert_eq!(baton::fs::read(&path).await?, b"contents");
///     baton::fs::remove_file(&path).await
/// })
/// # }
/// ```
///
/// # Errors
///
/// The OS error of opening or reading, or [`Error::NotInRuntime`](crate::Error::NotInRuntime)
/// outside a runtime.
///
/// # Cancel safety
///
/// Dropping the future cancels the read in flight and closes the file; nothing persists,
/// so it can simply be called again.
pub async fn read(path: impl AsRef<Path>) -> io::Result<Vec<u8>> {
    let file = File::open(path).await?;
    let hint = file.metadata().map_or(0, |meta| meta.len());
    let first = usize::try_from(hint).unwrap_or(usize::MAX).max(1);
    // The reads go into the room after the contents of one growing buffer (no zero-fill, no
    // copy). The
    // first asks for the whole file plus a small probe, so a file that ends where its size said
    // needs no second allocation to learn that it ended.
    let mut data = Vec::with_capacity(first.saturating_add(EOF_PROBE));
    loop {
        if data.len() == data.capacity() {
            data.reserve(READ_CHUNK);
        }
        let offset = data.len() as u64;
        let filled = data.len();
        let (res, slice) = file.read_at(data.slice(filled..), offset).await;
        data = slice.into_inner();
        if res? == 0 {
            return Ok(data);
        }
    }
}

/// Writes `contents` to the file at `path`, creating or truncating it.
///
/// # Errors
///
/// The OS error of opening or writing, or [`Error::NotInRuntime`](crate::Error::NotInRuntime)
/// outside a runtime.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// # let path = std::env::temp_dir().join(format!("baton-doc-write-{}", std::process::id()));
/// rt.block_on(async {
///     baton::fs::write(&path, "hello").await?;
///     assert_eq!(std::fs::read(&path)?, b"hello");
///     baton::fs::remove_file(&path).await
/// })
/// # }
/// ```
///
/// # Cancel safety
///
/// Not cancel-safe: a drop after the file was created may leave it truncated or partly
/// written (each write that started still lands). Await it to completion.
pub async fn write(path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> io::Result<()> {
    let file = File::create(path).await?;
    let (res, _buf) = file.write_all_at(contents.as_ref().to_vec(), 0).await;
    res?;
    file.close().await
}

/// Removes the file at `path` (on the blocking pool: the driver has no unlink request).
///
/// # Errors
///
/// The OS error of `unlink(2)`, or an error saying the runtime is missing or shutting down.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// # let path = std::env::temp_dir().join(format!("baton-doc-remove-{}", std::process::id()));
/// rt.block_on(async {
///     baton::fs::write(&path, b"x").await?;
///     baton::fs::remove_file(&path).await?;
///     assert!(baton::fs::read(&path).await.is_err());
///     Ok(())
/// })
/// # }
/// ```
///
/// # Cancel safety
///
/// Once the blocking pool started the removal, dropping the future does not stop it; a
/// removal still queued is cancelled.
pub async fn remove_file(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref().to_owned();
    match blocking::spawn_blocking(move || std::fs::remove_file(path)).await {
        Ok(result) => result,
        Err(err) => Err(blocking_to_io(err)),
    }
}

/// Turns a blocking job's failure into the `io::Error` a file helper returns.
fn blocking_to_io(err: BlockingError) -> io::Error {
    match err {
        BlockingError::NotInRuntime => crate::Error::NotInRuntime {
            function: "fs::remove_file",
        }
        .into_io(),
        BlockingError::Closed => crate::Error::Closed.into_io(),
        BlockingError::Rejected {
            reason: RejectReason::ShuttingDown | RejectReason::Detached,
        } => crate::Error::ShuttingDown.into_io(),
        other => io::Error::other(other),
    }
}
