//! [`OpenOptions`]: how a [`File`] is opened, as in `std::fs::OpenOptions`.

use std::io;
use std::path::Path;

use baton_uring::ops;

use crate::context;
use crate::error::convert;
use crate::fs::File;

/// Options for opening a [`File`], with the meaning of `std::fs::OpenOptions`; the open itself
/// runs on the ring.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// # let rt = baton::Runtime::new()?;
/// # let path = std::env::temp_dir().join(format!("baton-doc-options-{}", std::process::id()));
/// # rt.block_on(async {
/// let file = baton::fs::OpenOptions::new()
///     .read(true)
///     .write(true)
///     .create(true)
///     .open(&path)
///     .await?;
/// # drop(file);
/// # baton::fs::remove_file(&path).await
/// # })
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenOptions {
    read: bool,
    write: bool,
    append: bool,
    truncate: bool,
    create: bool,
    create_new: bool,
    mode: u32,
    custom_flags: i32,
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl OpenOptions {
    /// All options off; new files get mode `0o666` (before the umask).
    pub fn new() -> OpenOptions {
        OpenOptions {
            read: false,
            write: false,
            append: false,
            truncate: false,
            create: false,
            create_new: false,
            mode: 0o666,
            custom_flags: 0,
        }
    }

    /// Open for reading.
    pub fn read(&mut self, read: bool) -> &mut OpenOptions {
        self.read = read;
        self
    }

    /// Open for writing.
    pub fn write(&mut self, write: bool) -> &mut OpenOptions {
        self.write = write;
        self
    }

    /// Open for appending (implies writing).
    pub fn append(&mut self, append: bool) -> &mut OpenOptions {
        self.append = append;
        self
    }

    /// Truncate an existing file to length 0 (needs writing).
    pub fn truncate(&mut self, truncate: bool) -> &mut OpenOptions {
        self.truncate = truncate;
        self
    }

    /// Create the file if it does not exist (needs writing or appending).
    pub fn create(&mut self, create: bool) -> &mut OpenOptions {
        self.create = create;
        self
    }

    /// Create the file, failing if it exists (needs writing or appending).
    pub fn create_new(&mut self, create_new: bool) -> &mut OpenOptions {
        self.create_new = create_new;
        self
    }

    /// The permission bits of a newly created file.
    pub fn mode(&mut self, mode: u32) -> &mut OpenOptions {
        self.mode = mode;
        self
    }

    /// Extra `open(2)` flags (for example `libc::O_DIRECT`); the access mode bits are ignored.
    pub fn custom_flags(&mut self, flags: i32) -> &mut OpenOptions {
        self.custom_flags = flags;
        self
    }

    /// The `open(2)` flags these options stand for.
    fn flags(&self) -> io::Result<i32> {
        let writes = self.write || self.append;
        let access = match (self.read, writes) {
            (true, false) => libc::O_RDONLY,
            (false, true) => libc::O_WRONLY,
            (true, true) => libc::O_RDWR,
            (false, false) => {
                return Err(invalid("set at least one of read, write or append"));
            }
        };
        if (self.truncate || self.create || self.create_new) && !writes {
            return Err(invalid(
                "truncate, create and create_new need write(true) or append(true)",
            ));
        }
        // As std: with create_new the file is new, so there is nothing to truncate.
        if self.truncate && self.append && !self.create_new {
            return Err(invalid("truncate and append cannot both be set"));
        }
        let creation = if self.create_new {
            libc::O_CREAT | libc::O_EXCL
        } else {
            let create = if self.create { libc::O_CREAT } else { 0 };
            let truncate = if self.truncate { libc::O_TRUNC } else { 0 };
            create | truncate
        };
        let append = if self.append { libc::O_APPEND } else { 0 };
        Ok(access | creation | append | (self.custom_flags & !libc::O_ACCMODE))
    }

    /// Opens `path` with these options on the current runtime's ring.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a contradictory set of options or a path with a NUL byte, the OS
    /// error of `open(2)`, or [`Error::NotInRuntime`](crate::Error::NotInRuntime) outside a
    /// runtime.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the open; a file the kernel opened for it anyway is
    /// closed by the driver.
    pub async fn open(&self, path: impl AsRef<Path>) -> io::Result<File> {
        let handle = context::require("fs::OpenOptions::open")?;
        let flags = self.flags()?;
        let op = ops::open(path, flags, self.mode).bind_borrowed(handle.driver());
        let fd = convert(op.await)?;
        Ok(File::from_parts(fd, handle, flags & libc::O_APPEND != 0))
    }
}

fn invalid(message: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_is_o_rdonly() {
        assert_eq!(
            OpenOptions::new().read(true).flags().ok(),
            Some(libc::O_RDONLY)
        );
    }

    #[test]
    fn create_truncate_write() {
        let flags = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .flags()
            .ok();
        assert_eq!(flags, Some(libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC));
    }

    #[test]
    fn create_new_is_exclusive() {
        let flags = OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .flags();
        assert_eq!(
            flags.ok(),
            Some(libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_APPEND)
        );
    }

    #[test]
    fn no_access_mode_is_invalid_input() {
        let err = OpenOptions::new().flags().err().map(|e| e.kind());
        assert_eq!(err, Some(io::ErrorKind::InvalidInput));
    }

    #[test]
    fn create_without_write_is_invalid_input() {
        let err = OpenOptions::new().read(true).create(true).flags().err();
        assert_eq!(err.map(|e| e.kind()), Some(io::ErrorKind::InvalidInput));
    }
}
