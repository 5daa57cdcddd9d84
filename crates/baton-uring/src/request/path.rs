//! [`PathRequest`]: the namespace requests, each owning the C strings of its paths until its
//! final completion (lifecycle rule U8). All paths are relative to the current directory.

use std::ffi::CString;

use io_uring::{opcode, squeue, types};

/// The directory relative paths start from.
const CWD: types::Fd = types::Fd(libc::AT_FDCWD);

/// A namespace request. Every one is retained (lifecycle rule U5): it changes the file system
/// as a write changes a file, and a cancel could not undo it.
#[derive(Debug)]
pub(crate) enum PathRequest {
    /// `mkdirat(AT_FDCWD, path, mode)`.
    Mkdir { path: CString, mode: u32 },
    /// `renameat2(AT_FDCWD, from, AT_FDCWD, to, flags)`.
    Rename {
        from: CString,
        to: CString,
        flags: u32,
    },
    /// `unlinkat(AT_FDCWD, path, flags)`: a file, or a directory with `AT_REMOVEDIR`.
    Unlink { path: CString, flags: i32 },
    /// `linkat(AT_FDCWD, original, AT_FDCWD, link, flags)`.
    Link {
        original: CString,
        link: CString,
        flags: i32,
    },
    /// `symlinkat(target, AT_FDCWD, link)`.
    Symlink { target: CString, link: CString },
}

impl PathRequest {
    /// The io_uring opcode and its name.
    pub(super) fn opcode(&self) -> (u8, &'static str) {
        match self {
            PathRequest::Mkdir { .. } => (opcode::MkDirAt::CODE, "IORING_OP_MKDIRAT"),
            PathRequest::Rename { .. } => (opcode::RenameAt::CODE, "IORING_OP_RENAMEAT"),
            PathRequest::Unlink { .. } => (opcode::UnlinkAt::CODE, "IORING_OP_UNLINKAT"),
            PathRequest::Link { .. } => (opcode::LinkAt::CODE, "IORING_OP_LINKAT"),
            PathRequest::Symlink { .. } => (opcode::SymlinkAt::CODE, "IORING_OP_SYMLINKAT"),
        }
    }

    /// The SQE, without its `user_data`. Its pointers target the heap bytes of this request's
    /// `CString`s, which stay put while the request moves.
    pub(super) fn prepare(&self) -> squeue::Entry {
        match self {
            PathRequest::Mkdir { path, mode } => {
                opcode::MkDirAt::new(CWD, path.as_ptr()).mode(*mode).build()
            }
            PathRequest::Rename { from, to, flags } => {
                opcode::RenameAt::new(CWD, from.as_ptr(), CWD, to.as_ptr())
                    .flags(*flags)
                    .build()
            }
            PathRequest::Unlink { path, flags } => opcode::UnlinkAt::new(CWD, path.as_ptr())
                .flags(*flags)
                .build(),
            PathRequest::Link {
                original,
                link,
                flags,
            } => opcode::LinkAt::new(CWD, original.as_ptr(), CWD, link.as_ptr())
                .flags(*flags)
                .build(),
            PathRequest::Symlink { target, link } => {
                opcode::SymlinkAt::new(CWD, target.as_ptr(), link.as_ptr()).build()
            }
        }
    }
}
