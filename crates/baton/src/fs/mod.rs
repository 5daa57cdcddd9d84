//! Files on the ring: [`File`], [`OpenOptions`], and the whole-file helpers [`read`],
//! [`write()`] and [`remove_file`].
//!
//! Opens, reads, writes, syncs and closes are io_uring requests on the runtime's worker
//! (`baton-uring`); `remove_file` has no ring request in the driver and runs on the blocking
//! pool instead. All of them need a runtime: called outside one they fail with
//! [`Error::NotInRuntime`](crate::Error::NotInRuntime).

mod file;
mod open_options;

pub use file::{File, StartedSync};
pub use open_options::OpenOptions;

use std::io;
use std::path::Path;

use baton_completion::RejectReason;

use crate::blocking;
use crate::error::BlockingError;

/// How much [`read`] asks for at once after the first read (which asks for the whole file)
/// came back short or filled its buffer.
const READ_CHUNK: usize = 64 * 1024;

/// How much [`read`] asks for to learn whether the file ended where its size said: the common
/// case reads 0 bytes, so a large buffer would be allocated and zeroed for nothing.
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
pub async fn read(path: impl AsRef<Path>) -> io::Result<Vec<u8>> {
    let file = File::open(path).await?;
    let hint = file.metadata().map_or(0, |meta| meta.len());
    let first = usize::try_from(hint).unwrap_or(usize::MAX).max(1);
    let (res, mut data) = file.read_at(vec![0; first], 0).await;
    let mut offset = res?;
    data.truncate(offset);
    // The file may have grown since its size was read, or the first read may have been short.
    // Probe with a small buffer first; only a file that keeps going gets full-size chunks.
    let mut ask = EOF_PROBE;
    loop {
        let (res, chunk) = file.read_at(vec![0; ask], offset as u64).await;
        match res? {
            0 => return Ok(data),
            n => {
                data.extend_from_slice(&chunk[..n]);
                offset += n;
                ask = READ_CHUNK;
            }
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
