//! Files and the file system on the ring: [`File`], [`OpenOptions`], the whole-file helpers
//! [`read`], [`read_to_string`] and [`write()`], and `std::fs`'s path calls as async functions
//! of the same names and shapes.
//!
//! | call | how it runs | where the kernel lacks the opcode |
//! |---|---|---|
//! | [`File`] open, read, write, sync, close | ring | — (Baton needs these) |
//! | [`metadata()`], [`symlink_metadata`], [`try_exists`], [`File::metadata`] | ring `statx` | `std` on the pool |
//! | [`create_dir`], [`create_dir_all`] | ring `mkdirat` (one per missing directory) | `std::fs::create_dir` on the pool |
//! | [`remove_file`], [`remove_dir`] | ring `unlinkat` | `std` on the pool |
//! | [`rename`], [`hard_link`], [`symlink`] | ring `renameat`, `linkat`, `symlinkat` | `std` on the pool |
//! | [`File::set_len`], [`File::sync_range`] | ring `ftruncate` (6.9+), `sync_file_range` | the system call on the pool |
//! | [`read_dir()`], [`copy`], [`canonicalize`], [`remove_dir_all`] | `std` on the pool | — |
//!
//! A missing opcode is found by the driver's probe at start-up: the request is refused before
//! anything is submitted, and the call runs its `std` twin on the blocking pool instead, so the
//! answer and its errors are the same either way. Errors carry `std`'s
//! [`ErrorKind`](std::io::ErrorKind) for the same input (`NotFound`, `AlreadyExists`,
//! `NotADirectory`, `DirectoryNotEmpty`, `CrossesDevices`, ...); a path holding a NUL byte is
//! `InvalidInput`, refused before anything is submitted.
//!
//! **Dropping a future.** A call that changes the file system (create, remove, rename, link,
//! copy, `set_len`, `sync_range`) finishes once it was first polled, even if its future is then
//! dropped — as a dropped write still lands: on the ring its request is retained, on the pool
//! its job is not cancelled. A call that only looks (`metadata`, `read_dir`, `canonicalize`,
//! ...) is cancelled by a drop. Each call's `# Cancel safety` section says which.
//!
//! All of them need a runtime: called outside one they fail with
//! [`Error::NotInRuntime`](crate::Error::NotInRuntime).

mod fallback;
mod file;
mod file_inode;
mod metadata;
mod open_options;
mod path_ops;
mod path_query;
mod read_dir;
mod stream;

pub use file::{File, StartedSync};
pub use metadata::{FileType, Metadata};
pub use open_options::OpenOptions;
pub use path_ops::{
    copy, create_dir, create_dir_all, hard_link, remove_dir, remove_dir_all, remove_file, rename,
    symlink,
};
pub use path_query::{canonicalize, metadata, symlink_metadata, try_exists};
pub use read_dir::{DirEntry, ReadDir, read_dir};

#[cfg(test)]
pub(crate) use fallback::knob;

use std::io;
use std::path::Path;

use crate::io::IoBuf;

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
    let hint = file.len_now().unwrap_or(0);
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

/// Reads the whole file at `path` as UTF-8 text, as `std::fs::read_to_string` does.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// # let path = std::env::temp_dir().join(format!("baton-doc-read-to-string-{}", std::process::id()));
/// rt.block_on(async {
///     baton::fs::write(&path, "héllo").await?;
///     assert_eq!(baton::fs::read_to_string(&path).await?, "héllo");
///     baton::fs::write(&path, [0xff, 0xfe]).await?;
///     let err = baton::fs::read_to_string(&path).await.unwrap_err();
///     assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
///     baton::fs::remove_file(&path).await
/// })
/// # }
/// ```
///
/// # Errors
///
/// As [`read`], and `InvalidData` if the contents are not UTF-8.
///
/// # Cancel safety
///
/// As [`read`]: dropping it cancels the read in flight; nothing persists.
pub async fn read_to_string(path: impl AsRef<Path>) -> io::Result<String> {
    let bytes = read(path).await?;
    String::from_utf8(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}
