//! Calls that change the file system: create and remove directories, remove files, rename,
//! link, copy. Single-syscall calls are ring requests (`mkdirat`, `unlinkat`, `renameat`,
//! `linkat`, `symlinkat`) with `std` on the blocking pool where the kernel lacks the opcode;
//! `remove_dir_all` and `copy` run `std` on the pool.
//!
//! All of them finish once first polled, even if their future is dropped (fallback rule Y1):
//! a rename or an unlink is an effect, like a write, and a cancel could not take it back.

use std::io;
use std::path::{Path, PathBuf};

use baton_uring::ops;

use super::fallback::{OnDrop, check_path, on_pool, pool_path, ring_or_pool};
use crate::context;
use crate::handle::Handle;

/// The mode `std::fs::create_dir` asks for: every permission, less the process's umask.
const DIR_MODE: u32 = 0o777;

/// Creates the directory `path` (`mkdirat(2)` on the ring), as `std::fs::create_dir` does.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// # let dir = std::env::temp_dir().join(format!("baton-doc-create-dir-{}", std::process::id()));
/// rt.block_on(async {
///     baton::fs::create_dir(&dir).await?;
///     assert!(baton::fs::metadata(&dir).await?.is_dir());
///     let again = baton::fs::create_dir(&dir).await.unwrap_err();
///     assert_eq!(again.kind(), std::io::ErrorKind::AlreadyExists);
///     baton::fs::remove_dir(&dir).await
/// })
/// # }
/// ```
///
/// # Errors
///
/// `AlreadyExists` if something is there, `NotFound` if the parent is missing,
/// `NotADirectory` if a parent is a file, `InvalidInput` for a path with a NUL byte (refused
/// before anything is submitted); any other OS error as `std` reports it;
/// [`Error::NotInRuntime`](crate::Error::NotInRuntime) outside a runtime.
///
/// # Cancel safety
///
/// Retained: once polled, the directory is created even if the future is dropped (fallback
/// rule Y1). Calling it again after a drop reports `AlreadyExists`.
pub async fn create_dir(path: impl AsRef<Path>) -> io::Result<()> {
    let handle = context::require("fs::create_dir")?;
    mkdir(&handle, path.as_ref()).await
}

async fn mkdir(handle: &Handle, path: &Path) -> io::Result<()> {
    check_path(path)?;
    let ring = ops::mkdirat(path, DIR_MODE).bind_borrowed(handle.driver());
    ring_or_pool(handle, "fs::create_dir", OnDrop::Finish, ring, || {
        let path = path.to_owned();
        move || std::fs::create_dir(path)
    })
    .await
}

/// Whether `path` is a directory, following symlinks (`Path::is_dir`, on the ring).
async fn is_dir(handle: &Handle, path: &Path) -> bool {
    super::path_query::stat(handle, path, super::path_query::Follow::Yes)
        .await
        .is_ok_and(|meta| meta.is_dir())
}

/// Creates `path` and every missing parent, as `std::fs::create_dir_all` does; a directory
/// already there is success.
///
/// It composes ring requests rather than running `std` on the pool: the common case (the
/// parent exists) is a single `mkdirat`, and each missing parent costs one more, with no pool
/// thread held across the walk.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// # let root = std::env::temp_dir().join(format!("baton-doc-create-dir-all-{}", std::process::id()));
/// rt.block_on(async {
///     baton::fs::create_dir_all(root.join("a/b/c")).await?;
///     baton::fs::create_dir_all(root.join("a/b")).await?; // already there: fine
///     assert!(baton::fs::metadata(root.join("a/b/c")).await?.is_dir());
///     baton::fs::remove_dir_all(&root).await
/// })
/// # }
/// ```
///
/// # Errors
///
/// As [`create_dir`], except that an existing directory is not one; `AlreadyExists` when a
/// component exists and is not a directory.
///
/// # Cancel safety
///
/// Not cancel-safe as a whole: each directory it started creating is created (fallback rule Y1),
/// but a drop between two leaves the tree partly made. It is idempotent: call it again.
pub async fn create_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    let handle = context::require("fs::create_dir_all")?;
    let path = path.as_ref();
    if path.as_os_str().is_empty() {
        return Ok(());
    }
    // Walk up until a mkdir succeeds or meets a directory, then create the rest on the way
    // back down (deepest last), as std does.
    let mut missing = Vec::new();
    let mut at = path;
    loop {
        match mkdir(&handle, at).await {
            Ok(()) => break,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                missing.push(at);
                match at.parent() {
                    Some(parent) if !parent.as_os_str().is_empty() => at = parent,
                    _ => return Err(err),
                }
            }
            Err(_) if is_dir(&handle, at).await => break,
            Err(err) => return Err(err),
        }
    }
    for dir in missing.into_iter().rev() {
        match mkdir(&handle, dir).await {
            Ok(()) => {}
            Err(_) if is_dir(&handle, dir).await => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// Removes the empty directory `path` (`unlinkat(2)` with `AT_REMOVEDIR` on the ring), as
/// `std::fs::remove_dir` does.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// # let dir = std::env::temp_dir().join(format!("baton-doc-remove-dir-{}", std::process::id()));
/// rt.block_on(async {
///     baton::fs::create_dir(&dir).await?;
///     baton::fs::remove_dir(&dir).await?;
///     assert!(!baton::fs::try_exists(&dir).await?);
///     Ok(())
/// })
/// # }
/// ```
///
/// # Errors
///
/// `DirectoryNotEmpty`, `NotFound`, `NotADirectory` (for a file), `InvalidInput` for a NUL
/// byte; any other OS error as `std` reports it.
///
/// # Cancel safety
///
/// Retained: once polled, the removal happens even if the future is dropped.
pub async fn remove_dir(path: impl AsRef<Path>) -> io::Result<()> {
    let handle = context::require("fs::remove_dir")?;
    let path = path.as_ref();
    check_path(path)?;
    let ring = ops::unlinkat(path, libc::AT_REMOVEDIR).bind_borrowed(handle.driver());
    ring_or_pool(&handle, "fs::remove_dir", OnDrop::Finish, ring, || {
        let path = path.to_owned();
        move || std::fs::remove_dir(path)
    })
    .await
}

/// Removes the file at `path` (`unlinkat(2)` on the ring), as `std::fs::remove_file` does.
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
/// # Errors
///
/// `NotFound`, `IsADirectory` (use [`remove_dir`]), `InvalidInput` for a NUL byte; any other
/// OS error as `std` reports it; an error saying the runtime is missing or shutting down.
///
/// # Cancel safety
///
/// Retained: once polled, the removal happens even if the future is dropped.
pub async fn remove_file(path: impl AsRef<Path>) -> io::Result<()> {
    let handle = context::require("fs::remove_file")?;
    let path = path.as_ref();
    check_path(path)?;
    let ring = ops::unlinkat(path, 0).bind_borrowed(handle.driver());
    ring_or_pool(&handle, "fs::remove_file", OnDrop::Finish, ring, || {
        let path = path.to_owned();
        move || std::fs::remove_file(path)
    })
    .await
}

/// Removes `path` and everything under it, as `std::fs::remove_dir_all` does — on the blocking
/// pool, with `std`'s implementation, which walks the tree through directory descriptors so a
/// symlink swapped in mid-walk cannot redirect it outside the tree (CVE-2022-21658). A symlink
/// at `path` itself is removed, not followed.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// # let root = std::env::temp_dir().join(format!("baton-doc-remove-dir-all-{}", std::process::id()));
/// rt.block_on(async {
///     baton::fs::create_dir_all(root.join("nested/deeper")).await?;
///     baton::fs::write(root.join("nested/file"), b"x").await?;
///     baton::fs::remove_dir_all(&root).await?;
///     assert!(!baton::fs::try_exists(&root).await?);
///     Ok(())
/// })
/// # }
/// ```
///
/// # Errors
///
/// `NotFound`, `NotADirectory`, `InvalidInput` for a NUL byte (before anything runs), or the
/// first OS error of the walk.
///
/// # Cancel safety
///
/// Retained: once polled, the removal runs to its end even if the future is dropped (fallback
/// rule Y1).
pub async fn remove_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    const FUNCTION: &str = "fs::remove_dir_all";
    let (handle, path) = pool_path(FUNCTION, path.as_ref())?;
    on_pool(&handle, FUNCTION, OnDrop::Finish, move || {
        std::fs::remove_dir_all(path)
    })
    .await
}

/// Renames `from` to `to`, replacing `to` if it exists (`renameat(2)` on the ring), as
/// `std::fs::rename` does.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// # let from = std::env::temp_dir().join(format!("baton-doc-rename-a-{}", std::process::id()));
/// # let to = std::env::temp_dir().join(format!("baton-doc-rename-b-{}", std::process::id()));
/// rt.block_on(async {
///     baton::fs::write(&from, b"moved").await?;
///     baton::fs::rename(&from, &to).await?;
///     assert_eq!(baton::fs::read(&to).await?, b"moved");
///     baton::fs::remove_file(&to).await
/// })
/// # }
/// ```
///
/// # Errors
///
/// `CrossesDevices` when `from` and `to` are on different file systems (copy and remove
/// instead), `NotFound`, `NotADirectory`, `DirectoryNotEmpty` (a directory onto a non-empty
/// one), `IsADirectory`, `InvalidInput` for a NUL byte; any other OS error as `std` reports it.
///
/// # Cancel safety
///
/// Retained: once polled, the rename happens even if the future is dropped.
pub async fn rename(from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<()> {
    two_paths(
        "fs::rename",
        (from.as_ref(), to.as_ref()),
        |from, to| ops::renameat(from, to, 0),
        std::fs::rename,
    )
    .await
}

/// Makes `link` a new name of the file `original` (`linkat(2)` on the ring; a symlink
/// `original` is linked itself, as `std::fs::hard_link` does on Linux).
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// # let original = std::env::temp_dir().join(format!("baton-doc-hard-link-a-{}", std::process::id()));
/// # let link = std::env::temp_dir().join(format!("baton-doc-hard-link-b-{}", std::process::id()));
/// rt.block_on(async {
///     baton::fs::write(&original, b"shared").await?;
///     baton::fs::hard_link(&original, &link).await?;
///     assert_eq!(baton::fs::read(&link).await?, b"shared");
///     baton::fs::remove_file(&link).await?;
///     baton::fs::remove_file(&original).await
/// })
/// # }
/// ```
///
/// # Errors
///
/// `AlreadyExists` if `link` exists, `NotFound` if `original` does not, `CrossesDevices`
/// across file systems, `InvalidInput` for a NUL byte; any other OS error as `std` reports it.
///
/// # Cancel safety
///
/// Retained: once polled, the link is made even if the future is dropped.
pub async fn hard_link(original: impl AsRef<Path>, link: impl AsRef<Path>) -> io::Result<()> {
    two_paths(
        "fs::hard_link",
        (original.as_ref(), link.as_ref()),
        |original, link| ops::linkat(original, link, 0),
        std::fs::hard_link,
    )
    .await
}

/// Makes `link` a symbolic link to `original` (`symlinkat(2)` on the ring), as
/// `std::os::unix::fs::symlink` does; `original` need not exist.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// # let link = std::env::temp_dir().join(format!("baton-doc-symlink-{}", std::process::id()));
/// rt.block_on(async {
///     baton::fs::symlink("/", &link).await?;
///     assert!(baton::fs::symlink_metadata(&link).await?.is_symlink());
///     assert!(baton::fs::metadata(&link).await?.is_dir()); // followed to "/"
///     baton::fs::remove_file(&link).await
/// })
/// # }
/// ```
///
/// # Errors
///
/// `AlreadyExists` if `link` exists, `NotFound` if its parent does not, `InvalidInput` for a
/// NUL byte; any other OS error as `std` reports it.
///
/// # Cancel safety
///
/// Retained: once polled, the link is made even if the future is dropped.
pub async fn symlink(original: impl AsRef<Path>, link: impl AsRef<Path>) -> io::Result<()> {
    two_paths(
        "fs::symlink",
        (original.as_ref(), link.as_ref()),
        |original, link| ops::symlinkat(original, link),
        std::os::unix::fs::symlink,
    )
    .await
}

/// The one shape of the calls on two paths (`rename`, `hard_link`, `symlink`): both refused
/// for a NUL byte before anything runs, then the ring's `request` on them, or `std_twin` on
/// the blocking pool where the kernel lacks the opcode; finished once polled (Y1).
async fn two_paths(
    function: &'static str,
    (first, second): (&Path, &Path),
    request: impl FnOnce(&Path, &Path) -> baton_uring::Op<io::Result<()>>,
    std_twin: fn(PathBuf, PathBuf) -> io::Result<()>,
) -> io::Result<()> {
    let handle = context::require(function)?;
    check_path(first)?;
    check_path(second)?;
    let ring = request(first, second).bind_borrowed(handle.driver());
    ring_or_pool(&handle, function, OnDrop::Finish, ring, || {
        let (first, second) = (first.to_owned(), second.to_owned());
        move || std_twin(first, second)
    })
    .await
}

/// Copies the contents and permissions of the file `from` to `to`, creating or truncating it,
/// and returns the number of bytes copied — `std::fs::copy` on the blocking pool, which copies
/// inside the kernel (`copy_file_range`, reflinks where the file system has them) without the
/// bytes ever reaching this process.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// # let from = std::env::temp_dir().join(format!("baton-doc-copy-a-{}", std::process::id()));
/// # let to = std::env::temp_dir().join(format!("baton-doc-copy-b-{}", std::process::id()));
/// rt.block_on(async {
///     baton::fs::write(&from, b"copied").await?;
///     assert_eq!(baton::fs::copy(&from, &to).await?, 6);
///     assert_eq!(baton::fs::read(&to).await?, b"copied");
///     baton::fs::remove_file(&from).await?;
///     baton::fs::remove_file(&to).await
/// })
/// # }
/// ```
///
/// # Errors
///
/// `NotFound` if `from` is missing, `InvalidInput` if it is not a regular file or a path holds
/// a NUL byte (before anything runs), or the OS error of reading or writing.
///
/// # Cancel safety
///
/// Retained: once polled, the copy runs to its end even if the future is dropped (fallback
/// rule Y1).
pub async fn copy(from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<u64> {
    const FUNCTION: &str = "fs::copy";
    let (from, to) = (from.as_ref(), to.as_ref());
    check_path(from)?;
    check_path(to)?;
    let handle = context::require(FUNCTION)?;
    let (from, to) = (from.to_owned(), to.to_owned());
    on_pool(&handle, FUNCTION, OnDrop::Finish, move || {
        std::fs::copy(from, to)
    })
    .await
}
