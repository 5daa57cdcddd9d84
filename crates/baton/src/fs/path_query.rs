//! Calls that look at a path without changing anything: `metadata`, `symlink_metadata` and
//! `try_exists` (`statx(2)` on the ring, `std` on the blocking pool where the kernel lacks
//! `IORING_OP_STATX`), and `canonicalize` (`std` on the pool: resolving a path is a walk of
//! `readlink`s the ring has no request for).
//!
//! Dropping any of them cancels it (fallback rule Y2); nothing persists, so it can simply be
//! called again.

use std::io;
use std::path::{Path, PathBuf};

use baton_uring::ops;

use super::Metadata;
use super::fallback::{OnDrop, check_path, on_pool, pool_path, ring_or_pool};
use crate::context;
use crate::handle::Handle;

/// Whether a final symlink is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Follow {
    /// Describe what the link points to (`stat`).
    Yes,
    /// Describe the link itself (`lstat`).
    No,
}

/// `statx` of `path` on `handle`'s ring, following a final symlink or not.
pub(super) async fn stat(handle: &Handle, path: &Path, follow: Follow) -> io::Result<Metadata> {
    check_path(path)?;
    let (function, ring) = match follow {
        Follow::Yes => ("fs::metadata", ops::statx(path)),
        Follow::No => ("fs::symlink_metadata", ops::statx_nofollow(path)),
    };
    let ring = ring.bind_borrowed(handle.driver());
    let ring = async { ring.await.map(|stx| Metadata::from_statx(&stx)) };
    ring_or_pool(handle, function, OnDrop::Cancel, ring, || {
        let path = path.to_owned();
        move || {
            let meta = match follow {
                Follow::Yes => std::fs::metadata(path),
                Follow::No => std::fs::symlink_metadata(path),
            };
            meta.map(Metadata::from)
        }
    })
    .await
}

/// The metadata of the file at `path`, following symlinks (`statx(2)` on the ring), as
/// `std::fs::metadata` gives it.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// # let path = std::env::temp_dir().join(format!("baton-doc-metadata-{}", std::process::id()));
/// rt.block_on(async {
///     baton::fs::write(&path, b"12345").await?;
///     let meta = baton::fs::metadata(&path).await?;
///     assert!(meta.is_file());
///     assert_eq!(meta.len(), 5);
///     assert_eq!(meta.modified()?, std::fs::metadata(&path)?.modified()?);
///     baton::fs::remove_file(&path).await
/// })
/// # }
/// ```
///
/// # Errors
///
/// `NotFound`, `NotADirectory` (a parent is a file), `PermissionDenied`, `InvalidInput` for a
/// NUL byte (refused before anything is submitted); any other OS error as `std` reports it.
///
/// # Cancel safety
///
/// Cancel-safe: it changes nothing, so a dropped call can be made again.
pub async fn metadata(path: impl AsRef<Path>) -> io::Result<Metadata> {
    let handle = context::require("fs::metadata")?;
    stat(&handle, path.as_ref(), Follow::Yes).await
}

/// The metadata of `path` itself: a symlink is described, not followed (`statx(2)` with
/// `AT_SYMLINK_NOFOLLOW` on the ring), as `std::fs::symlink_metadata` gives it.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// # let link = std::env::temp_dir().join(format!("baton-doc-symlink-metadata-{}", std::process::id()));
/// rt.block_on(async {
///     baton::fs::symlink("/", &link).await?;
///     let meta = baton::fs::symlink_metadata(&link).await?;
///     assert!(meta.is_symlink());
///     assert_eq!(meta.len(), 1, "a symlink's length is its target's: \"/\"");
///     baton::fs::remove_file(&link).await
/// })
/// # }
/// ```
///
/// # Errors
///
/// As [`metadata`].
///
/// # Cancel safety
///
/// Cancel-safe, as [`metadata`].
pub async fn symlink_metadata(path: impl AsRef<Path>) -> io::Result<Metadata> {
    let handle = context::require("fs::symlink_metadata")?;
    stat(&handle, path.as_ref(), Follow::No).await
}

/// Whether `path` names an existing file or directory (following symlinks; a dangling link
/// is `false`), with an error when that cannot be told — as `std::fs::exists` does. It asks
/// `statx(2)` on the ring: the ring has the request, so it needs no pool thread.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// rt.block_on(async {
///     assert!(baton::fs::try_exists("/").await?);
///     assert!(!baton::fs::try_exists("/no/such/baton/path").await?);
///     Ok(())
/// })
/// # }
/// ```
///
/// # Errors
///
/// Any error of [`metadata`] but `NotFound` — `PermissionDenied` on a parent, say, or
/// `NotADirectory` when a parent is a file (as `std` reports it: the path cannot exist, yet
/// the question was malformed) — and `InvalidInput` for a NUL byte.
///
/// # Cancel safety
///
/// Cancel-safe, as [`metadata`].
pub async fn try_exists(path: impl AsRef<Path>) -> io::Result<bool> {
    let handle = context::require("fs::try_exists")?;
    match stat(&handle, path.as_ref(), Follow::Yes).await {
        Ok(_) => Ok(true),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(err),
    }
}

/// The absolute form of `path` with every symlink, `.` and `..` resolved, as
/// `std::fs::canonicalize` gives it (`realpath(3)` on the blocking pool).
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// rt.block_on(async {
///     let root = baton::fs::canonicalize("/tmp/../").await?;
///     assert_eq!(root, std::path::Path::new("/"));
///     Ok(())
/// })
/// # }
/// ```
///
/// # Errors
///
/// `NotFound` if a component is missing, `NotADirectory`, `InvalidInput` for a NUL byte
/// (before anything runs); any other OS error as `std` reports it.
///
/// # Cancel safety
///
/// Cancel-safe: a dropped call still queued is cancelled; one already running finishes on the
/// pool and its answer is dropped.
pub async fn canonicalize(path: impl AsRef<Path>) -> io::Result<PathBuf> {
    const FUNCTION: &str = "fs::canonicalize";
    let (handle, path) = pool_path(FUNCTION, path.as_ref())?;
    on_pool(&handle, FUNCTION, OnDrop::Cancel, move || {
        std::fs::canonicalize(path)
    })
    .await
}
