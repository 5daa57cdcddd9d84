//! Path operations: the namespace requests `mkdirat`, `renameat`, `unlinkat`, `linkat` and
//! `symlinkat`, all relative to the current directory (`AT_FDCWD`).
//!
//! Each owns its paths as `CString`s until the final completion (lifecycle rule U8). They change
//! the file system the way a write changes a file, so they are **retained** (lifecycle rule U5):
//! once registered, dropping the future does not cancel the request — the driver submits it
//! and lets it finish, and shutdown waits for it. An async cancel could not undo a rename the
//! kernel already made, and reporting "cancelled" for one that happened would be a lie.
//!
//! A path holding a NUL byte is `InvalidInput`, refused before anything is submitted.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::unit;
use crate::operation::Op;
use crate::request::{PathRequest, Request};

/// Why a path was refused: the kernel reads it as a C string, which ends at the first NUL.
pub(crate) const PATH_HAS_NUL: &str = "the path contains a NUL byte, which the kernel would read as the end of the path: pass a path without NUL bytes";

/// `path` as the C string the kernel reads, or `None` when it holds a NUL byte.
pub(crate) fn path_cstring(path: &Path) -> Option<CString> {
    CString::new(path.as_os_str().as_bytes()).ok()
}

/// A path request, or one refused with [`PATH_HAS_NUL`] when any of its paths held a NUL byte.
fn path_op(data: Option<PathRequest>) -> Op<io::Result<()>> {
    match data {
        Some(data) => Op::new(Request::Path(data), unit),
        None => Op::invalid(Request::Nop, PATH_HAS_NUL, unit),
    }
}

/// `mkdirat(AT_FDCWD, path, mode)`: creates a directory (`mode` is masked by the umask, as
/// `mkdir(2)` does; `std::fs::create_dir` passes `0o777`). Retained.
pub fn mkdirat(path: impl AsRef<Path>, mode: u32) -> Op<io::Result<()>> {
    path_op(path_cstring(path.as_ref()).map(|path| PathRequest::Mkdir { path, mode }))
}

/// `renameat2(AT_FDCWD, from, AT_FDCWD, to, flags)`: renames `from` to `to`, replacing `to`
/// unless `flags` says otherwise (`RENAME_NOREPLACE`, `RENAME_EXCHANGE`). Across file systems
/// the kernel refuses with `EXDEV` (`ErrorKind::CrossesDevices`). Retained.
pub fn renameat(from: impl AsRef<Path>, to: impl AsRef<Path>, flags: u32) -> Op<io::Result<()>> {
    let paths = path_cstring(from.as_ref()).zip(path_cstring(to.as_ref()));
    path_op(paths.map(|(from, to)| PathRequest::Rename { from, to, flags }))
}

/// `unlinkat(AT_FDCWD, path, flags)`: removes a file, or with `AT_REMOVEDIR` an empty
/// directory. Retained.
pub fn unlinkat(path: impl AsRef<Path>, flags: i32) -> Op<io::Result<()>> {
    path_op(path_cstring(path.as_ref()).map(|path| PathRequest::Unlink { path, flags }))
}

/// `linkat(AT_FDCWD, original, AT_FDCWD, link, flags)`: makes `link` a new name of
/// `original` (a symlink itself unless `flags` holds `AT_SYMLINK_FOLLOW`, as
/// `std::fs::hard_link` does on Linux). Retained.
pub fn linkat(
    original: impl AsRef<Path>,
    link: impl AsRef<Path>,
    flags: i32,
) -> Op<io::Result<()>> {
    let paths = path_cstring(original.as_ref()).zip(path_cstring(link.as_ref()));
    path_op(paths.map(|(original, link)| PathRequest::Link {
        original,
        link,
        flags,
    }))
}

/// `symlinkat(target, AT_FDCWD, link)`: makes `link` a symbolic link whose contents are
/// `target` (which need not exist). Retained.
pub fn symlinkat(target: impl AsRef<Path>, link: impl AsRef<Path>) -> Op<io::Result<()>> {
    let paths = path_cstring(target.as_ref()).zip(path_cstring(link.as_ref()));
    path_op(paths.map(|(target, link)| PathRequest::Symlink { target, link }))
}
