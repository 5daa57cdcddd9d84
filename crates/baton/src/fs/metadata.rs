//! [`Metadata`] and [`FileType`]: what `statx(2)` says about a file, with `std`'s accessors.
//!
//! `std::fs::Metadata` cannot be built from a `statx` buffer (it has no public constructor),
//! so the ring's answer needs a type of its own. This one holds exactly the fields `std` reads
//! from the same system call on Linux, and `std`'s answer converts into it (`From`) — which
//! is what the blocking-pool fallback does — so a Baton `Metadata` and a `std` one of the same file
//! agree accessor by accessor: [`len`](Metadata::len), [`file_type`](Metadata::file_type),
//! [`permissions`](Metadata::permissions), the times, and every
//! `MetadataExt` field (`dev`, `ino`, `mode`, `nlink`, `uid`,
//! `gid`, `rdev`, `size`, the seconds and nanoseconds of each time, `blksize`, `blocks`).

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A point in time as the kernel reports it: seconds since the epoch (negative before it) and
/// nanoseconds into that second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Timestamp {
    sec: i64,
    nsec: u32,
}

impl Timestamp {
    fn from_statx(ts: libc::statx_timestamp) -> Timestamp {
        Timestamp {
            sec: ts.tv_sec,
            nsec: ts.tv_nsec,
        }
    }

    /// From the seconds and nanoseconds of `MetadataExt` (`nsec` is always in `0..1e9`).
    fn from_parts(sec: i64, nsec: i64) -> Timestamp {
        Timestamp {
            sec,
            nsec: u32::try_from(nsec).unwrap_or(0),
        }
    }

    fn from_system_time(time: SystemTime) -> Timestamp {
        match time.duration_since(UNIX_EPOCH) {
            Ok(after) => Timestamp {
                sec: i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
                nsec: after.subsec_nanos(),
            },
            Err(before) => {
                let before = before.duration();
                let secs = i64::try_from(before.as_secs()).unwrap_or(i64::MAX);
                match before.subsec_nanos() {
                    0 => Timestamp {
                        sec: -secs,
                        nsec: 0,
                    },
                    nanos => Timestamp {
                        sec: -secs - 1,
                        nsec: 1_000_000_000 - nanos,
                    },
                }
            }
        }
    }

    fn to_system_time(self) -> io::Result<SystemTime> {
        let whole = Duration::from_secs(self.sec.unsigned_abs());
        let base = if self.sec >= 0 {
            UNIX_EPOCH.checked_add(whole)
        } else {
            UNIX_EPOCH.checked_sub(whole)
        };
        base.and_then(|t| t.checked_add(Duration::from_nanos(u64::from(self.nsec))))
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    "the file's timestamp does not fit in a SystemTime",
                )
            })
    }
}

/// A file's metadata, from `statx(2)` on the ring (or `std` on the blocking pool where the
/// kernel lacks `IORING_OP_STATX`); returned by [`metadata`](super::metadata()),
/// [`symlink_metadata`](super::symlink_metadata), [`File::metadata`](super::File::metadata) and
/// [`DirEntry::metadata`](super::DirEntry::metadata).
///
/// Its accessors are `std::fs::Metadata`'s, and it implements
/// [`std::os::unix::fs::MetadataExt`], so code written against `std`'s type reads the same:
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// use std::os::unix::fs::MetadataExt;
/// let rt = baton::Runtime::new()?;
/// # let path = std::env::temp_dir().join(format!("baton-doc-metadata-type-{}", std::process::id()));
/// rt.block_on(async {
///     baton::fs::write(&path, b"four").await?;
///     let meta = baton::fs::metadata(&path).await?;
///     assert!(meta.is_file() && meta.len() == 4);
///     assert_eq!(meta.ino(), std::fs::metadata(&path)?.ino());
///     assert_eq!(meta, baton::fs::Metadata::from(std::fs::metadata(&path)?));
///     baton::fs::remove_file(&path).await
/// })
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    dev: u64,
    ino: u64,
    mode: u32,
    nlink: u64,
    uid: u32,
    gid: u32,
    rdev: u64,
    size: u64,
    atime: Timestamp,
    mtime: Timestamp,
    ctime: Timestamp,
    /// `None` when the file system does not record a birth time.
    btime: Option<Timestamp>,
    blksize: u64,
    blocks: u64,
}

impl Metadata {
    /// What `statx` with `STATX_ALL` filled in, read as `std` reads it: the device numbers
    /// through `makedev`, the birth time only when the kernel set `STATX_BTIME`.
    pub(crate) fn from_statx(stx: &libc::statx) -> Metadata {
        Metadata {
            dev: libc::makedev(stx.stx_dev_major, stx.stx_dev_minor),
            ino: stx.stx_ino,
            mode: u32::from(stx.stx_mode),
            nlink: u64::from(stx.stx_nlink),
            uid: stx.stx_uid,
            gid: stx.stx_gid,
            rdev: libc::makedev(stx.stx_rdev_major, stx.stx_rdev_minor),
            size: stx.stx_size,
            atime: Timestamp::from_statx(stx.stx_atime),
            mtime: Timestamp::from_statx(stx.stx_mtime),
            ctime: Timestamp::from_statx(stx.stx_ctime),
            btime: (stx.stx_mask & libc::STATX_BTIME != 0)
                .then(|| Timestamp::from_statx(stx.stx_btime)),
            blksize: u64::from(stx.stx_blksize),
            blocks: stx.stx_blocks,
        }
    }

    /// The file's type.
    pub fn file_type(&self) -> FileType {
        FileType::from_mode(self.mode)
    }

    /// Whether this is a directory.
    pub fn is_dir(&self) -> bool {
        self.file_type().is_dir()
    }

    /// Whether this is a regular file.
    pub fn is_file(&self) -> bool {
        self.file_type().is_file()
    }

    /// Whether this is a symbolic link (only [`symlink_metadata`](super::symlink_metadata)
    /// can say so: [`metadata`](super::metadata()) follows links).
    pub fn is_symlink(&self) -> bool {
        self.file_type().is_symlink()
    }

    /// The size in bytes (for a symlink, the length of its target).
    #[allow(
        clippy::len_without_is_empty,
        reason = "std::fs::Metadata has no is_empty"
    )]
    pub fn len(&self) -> u64 {
        self.size
    }

    /// The permission bits (with the file type bits, as `std` keeps them).
    pub fn permissions(&self) -> std::fs::Permissions {
        std::fs::Permissions::from_mode(self.mode)
    }

    /// The last modification time.
    ///
    /// # Errors
    ///
    /// `InvalidData` if the time does not fit in a [`SystemTime`].
    pub fn modified(&self) -> io::Result<SystemTime> {
        self.mtime.to_system_time()
    }

    /// The last access time.
    ///
    /// # Errors
    ///
    /// As [`modified`](Metadata::modified).
    pub fn accessed(&self) -> io::Result<SystemTime> {
        self.atime.to_system_time()
    }

    /// The creation (birth) time.
    ///
    /// # Errors
    ///
    /// `Unsupported` when the file system does not record it (as `std` reports), or as
    /// [`modified`](Metadata::modified).
    pub fn created(&self) -> io::Result<SystemTime> {
        match self.btime {
            Some(btime) => btime.to_system_time(),
            None => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "creation time is not available for the filesystem",
            )),
        }
    }
}

impl From<std::fs::Metadata> for Metadata {
    /// `std`'s answer, field for field (the blocking-pool fallback's conversion).
    fn from(meta: std::fs::Metadata) -> Metadata {
        Metadata {
            dev: meta.dev(),
            ino: meta.ino(),
            mode: meta.mode(),
            nlink: meta.nlink(),
            uid: meta.uid(),
            gid: meta.gid(),
            rdev: meta.rdev(),
            size: meta.size(),
            atime: Timestamp::from_parts(meta.atime(), meta.atime_nsec()),
            mtime: Timestamp::from_parts(meta.mtime(), meta.mtime_nsec()),
            ctime: Timestamp::from_parts(meta.ctime(), meta.ctime_nsec()),
            btime: meta.created().ok().map(Timestamp::from_system_time),
            blksize: meta.blksize(),
            blocks: meta.blocks(),
        }
    }
}

impl MetadataExt for Metadata {
    fn dev(&self) -> u64 {
        self.dev
    }
    fn ino(&self) -> u64 {
        self.ino
    }
    fn mode(&self) -> u32 {
        self.mode
    }
    fn nlink(&self) -> u64 {
        self.nlink
    }
    fn uid(&self) -> u32 {
        self.uid
    }
    fn gid(&self) -> u32 {
        self.gid
    }
    fn rdev(&self) -> u64 {
        self.rdev
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn atime(&self) -> i64 {
        self.atime.sec
    }
    fn atime_nsec(&self) -> i64 {
        i64::from(self.atime.nsec)
    }
    fn mtime(&self) -> i64 {
        self.mtime.sec
    }
    fn mtime_nsec(&self) -> i64 {
        i64::from(self.mtime.nsec)
    }
    fn ctime(&self) -> i64 {
        self.ctime.sec
    }
    fn ctime_nsec(&self) -> i64 {
        i64::from(self.ctime.nsec)
    }
    fn blksize(&self) -> u64 {
        self.blksize
    }
    fn blocks(&self) -> u64 {
        self.blocks
    }
}

/// A file's type: [`Metadata::file_type`], [`DirEntry::file_type`](super::DirEntry::file_type).
/// Its accessors are `std::fs::FileType`'s, and it implements
/// [`std::os::unix::fs::FileTypeExt`]; a `std` one converts into it.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// rt.block_on(async {
///     let root = baton::fs::metadata("/").await?.file_type();
///     assert!(root.is_dir() && !root.is_file() && !root.is_symlink());
///     assert_eq!(root, baton::fs::FileType::from(std::fs::metadata("/")?.file_type()));
///     Ok(())
/// })
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileType {
    /// The `S_IFMT` bits of the mode.
    format: u32,
}

impl FileType {
    pub(crate) fn from_mode(mode: u32) -> FileType {
        FileType {
            format: mode & libc::S_IFMT,
        }
    }

    /// Whether this is a directory.
    pub fn is_dir(&self) -> bool {
        self.format == libc::S_IFDIR
    }

    /// Whether this is a regular file.
    pub fn is_file(&self) -> bool {
        self.format == libc::S_IFREG
    }

    /// Whether this is a symbolic link.
    pub fn is_symlink(&self) -> bool {
        self.format == libc::S_IFLNK
    }
}

impl From<std::fs::FileType> for FileType {
    fn from(ty: std::fs::FileType) -> FileType {
        let format = [
            (ty.is_dir(), libc::S_IFDIR),
            (ty.is_file(), libc::S_IFREG),
            (ty.is_symlink(), libc::S_IFLNK),
            (ty.is_block_device(), libc::S_IFBLK),
            (ty.is_char_device(), libc::S_IFCHR),
            (ty.is_fifo(), libc::S_IFIFO),
            (ty.is_socket(), libc::S_IFSOCK),
        ]
        .into_iter()
        .find_map(|(is, format)| is.then_some(format))
        .unwrap_or(0);
        FileType { format }
    }
}

impl FileTypeExt for FileType {
    fn is_block_device(&self) -> bool {
        self.format == libc::S_IFBLK
    }
    fn is_char_device(&self) -> bool {
        self.format == libc::S_IFCHR
    }
    fn is_fifo(&self) -> bool {
        self.format == libc::S_IFIFO
    }
    fn is_socket(&self) -> bool {
        self.format == libc::S_IFSOCK
    }
}
