//! [`read_dir`]: a directory's entries, streamed in batches from the blocking pool.
//!
//! The ring has no request for reading a directory (`getdents64`), so the listing runs on the
//! pool, one job per batch of [`BATCH`] entries: the job that opens the directory reads the
//! first batch, and as soon as the caller takes an entry from a batch, the job for the next one
//! starts. So the first entries arrive while the rest are still being read, at most one batch
//! is read ahead of the caller, and no pool thread waits on a slow consumer. Dropping the
//! [`ReadDir`] stops the listing: the batch being read is discarded when it arrives, and the
//! directory is closed with it.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::os::unix::fs::DirEntryExt;
use std::path::{Path, PathBuf};

use super::fallback::{OnDrop, on_pool, pool_path};
use super::path_query::{Follow, stat};
use super::{FileType, Metadata};
use crate::blocking::BlockingHandle;
use crate::context;
use crate::handle::Handle;

/// Entries per pool job.
const BATCH: usize = 256;

/// What one pool job read: up to [`BATCH`] entries, and the directory stream to go on with
/// (`None` once it ended).
struct Batch {
    entries: VecDeque<io::Result<DirEntry>>,
    rest: Option<std::fs::ReadDir>,
}

impl Batch {
    /// Runs on the pool: reads the next batch from `stream`.
    fn read(mut stream: std::fs::ReadDir) -> Batch {
        let mut entries = VecDeque::with_capacity(BATCH);
        while entries.len() < BATCH {
            match stream.next() {
                Some(entry) => entries.push_back(entry.map(DirEntry::from_std)),
                None => {
                    return Batch {
                        entries,
                        rest: None,
                    };
                }
            }
        }
        Batch {
            entries,
            rest: Some(stream),
        }
    }
}

/// Lists the directory at `path`, as `std::fs::read_dir` does (no `.` and `..`, in the order
/// the file system gives). The entries stream in batches: see [`ReadDir`].
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// # let dir = std::env::temp_dir().join(format!("baton-doc-read-dir-{}", std::process::id()));
/// rt.block_on(async {
///     baton::fs::create_dir(&dir).await?;
///     baton::fs::write(dir.join("a"), b"1").await?;
///     baton::fs::create_dir(dir.join("b")).await?;
///     let mut names = Vec::new();
///     let mut entries = baton::fs::read_dir(&dir).await?;
///     while let Some(entry) = entries.next_entry().await? {
///         names.push((entry.file_name(), entry.file_type().await?.is_dir()));
///     }
///     names.sort();
///     assert_eq!(names, [("a".into(), false), ("b".into(), true)]);
///     baton::fs::remove_dir_all(&dir).await
/// })
/// # }
/// ```
///
/// # Errors
///
/// `NotFound`, `NotADirectory`, `PermissionDenied`, `InvalidInput` for a NUL byte (before
/// anything runs); any other OS error of opening or reading the directory.
///
/// # Cancel safety
///
/// Cancel-safe: a dropped call still queued is cancelled; one that already opened the
/// directory closes it when its answer is dropped.
pub async fn read_dir(path: impl AsRef<Path>) -> io::Result<ReadDir> {
    const FUNCTION: &str = "fs::read_dir";
    let (handle, path) = pool_path(FUNCTION, path.as_ref())?;
    let first = on_pool(&handle, FUNCTION, OnDrop::Cancel, move || {
        std::fs::read_dir(path).map(Batch::read)
    })
    .await?;
    Ok(ReadDir {
        handle,
        entries: first.entries,
        rest: first.rest,
        next: None,
    })
}

/// A directory listing from [`read_dir`]; [`next_entry`](ReadDir::next_entry) yields the
/// entries one by one, as `std::fs::ReadDir`'s iterator does.
///
/// Each pool job reads a batch of 256 entries, and at most one batch is read ahead of the
/// caller. Dropping the `ReadDir` stops the listing and closes the directory (once the batch
/// being read, if any, arrives).
pub struct ReadDir {
    handle: Handle,
    /// Entries read, not yet taken.
    entries: VecDeque<io::Result<DirEntry>>,
    /// The directory stream, while no job reads from it and it has not ended.
    rest: Option<std::fs::ReadDir>,
    /// The job reading the next batch.
    next: Option<BlockingHandle<Batch>>,
}

impl fmt::Debug for ReadDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadDir")
            .field("buffered", &self.entries.len())
            .field("reading", &self.next.is_some())
            .field("ended", &(self.rest.is_none() && self.next.is_none()))
            .finish()
    }
}

impl ReadDir {
    /// The next entry, `Ok(None)` once the listing is done. An error reading the directory is
    /// returned once, in its place among the entries.
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// let rt = baton::Runtime::new()?;
    /// rt.block_on(async {
    ///     let mut entries = baton::fs::read_dir("/").await?;
    ///     let first = entries.next_entry().await?.expect("/ is not empty");
    ///     assert_eq!(first.path().parent(), Some(std::path::Path::new("/")));
    ///     Ok(())
    /// })
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// The OS error of reading the directory, or an error saying the runtime shut down.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: an entry is taken only when the call returns it, and a batch that
    /// arrives for a dropped call waits in the `ReadDir` for the next one. No entry is lost or
    /// repeated.
    pub async fn next_entry(&mut self) -> io::Result<Option<DirEntry>> {
        loop {
            if let Some(entry) = self.entries.pop_front() {
                self.read_ahead();
                return entry.map(Some);
            }
            if let Some(next) = &mut self.next {
                let batch = next.await;
                self.next = None;
                let batch = batch.map_err(|err| err.into_io_for("fs::ReadDir::next_entry"))?;
                self.entries = batch.entries;
                self.rest = batch.rest;
                continue;
            }
            if self.rest.is_none() {
                return Ok(None);
            }
            self.read_ahead();
        }
    }

    /// Starts the job for the next batch, unless one runs or the stream ended.
    fn read_ahead(&mut self) {
        if self.next.is_none()
            && let Some(stream) = self.rest.take()
        {
            self.next = Some(self.handle.spawn_blocking(move || Batch::read(stream)));
        }
    }
}

/// One entry of a [`ReadDir`], as `std::fs::DirEntry` gives it. It keeps no handle on the
/// directory: once the listing is dropped, the directory is closed, whatever entries live on.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// use std::os::unix::fs::{DirEntryExt, MetadataExt};
/// let rt = baton::Runtime::new()?;
/// # let dir = std::env::temp_dir().join(format!("baton-doc-dir-entry-{}", std::process::id()));
/// rt.block_on(async {
///     baton::fs::create_dir(&dir).await?;
///     baton::fs::symlink("/", dir.join("root")).await?;
///     let mut entries = baton::fs::read_dir(&dir).await?;
///     let entry = entries.next_entry().await?.expect("one entry");
///     assert_eq!(entry.file_name(), "root");
///     assert!(entry.file_type().await?.is_symlink()); // not followed
///     assert_eq!(entry.metadata().await?.ino(), entry.ino());
///     assert!(entries.next_entry().await?.is_none());
///     baton::fs::remove_dir_all(&dir).await
/// })
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct DirEntry {
    path: PathBuf,
    ino: u64,
    /// From the directory itself (`d_type`) or, where the file system does not say, an
    /// `lstat` on the pool while listing; `None` if that failed.
    file_type: Option<FileType>,
}

impl DirEntry {
    /// Runs on the pool: what the entry says about itself, and its type (no system call where
    /// the file system reports types in the listing, as most do).
    fn from_std(entry: std::fs::DirEntry) -> DirEntry {
        DirEntry {
            path: entry.path(),
            ino: entry.ino(),
            file_type: entry.file_type().ok().map(FileType::from),
        }
    }

    /// The full path: the directory given to [`read_dir`] joined with the entry's name.
    pub fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// The entry's name within its directory.
    pub fn file_name(&self) -> OsString {
        self.path
            .file_name()
            .map(OsString::from)
            .unwrap_or_default()
    }

    /// The entry's type, as the listing reported it; a symlink is reported as one.
    ///
    /// # Errors
    ///
    /// Where the listing could not tell, the error of asking `statx` now (`NotFound` if the
    /// entry is gone).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it changes nothing.
    pub async fn file_type(&self) -> io::Result<FileType> {
        match self.file_type {
            Some(file_type) => Ok(file_type),
            None => Ok(self.metadata().await?.file_type()),
        }
    }

    /// The entry's metadata, not following a symlink (as `std::fs::DirEntry::metadata`):
    /// [`symlink_metadata`](super::symlink_metadata) of [`path`](DirEntry::path), asked now.
    ///
    /// # Errors
    ///
    /// As [`symlink_metadata`](super::symlink_metadata) (`NotFound` if the entry is gone).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it changes nothing.
    pub async fn metadata(&self) -> io::Result<Metadata> {
        let handle = context::require("fs::DirEntry::metadata")?;
        stat(&handle, &self.path, Follow::No).await
    }
}

impl DirEntryExt for DirEntry {
    fn ino(&self) -> u64 {
        self.ino
    }
}
