//! End to end: `baton::fs::metadata`, `symlink_metadata` and `File::metadata` (statx on the
//! ring) equal to `std`'s answer for the same file, accessor by accessor; and the `File` calls
//! that change the inode (`set_len`) or its writeback (`sync_range`).

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::PathBuf;

use baton::fs::{self, File, Metadata};
use baton_tests::{Scratch, assert_kind, in_scratch, runtime_with_scratch};

/// Asserts that `ours` and `std` describe the same file the same way, accessor by accessor.
fn assert_same(what: &str, ours: &Metadata, std: &std::fs::Metadata) {
    let std_type = std.file_type();
    let ours_type = ours.file_type();
    let types = [
        (ours_type.is_dir(), std_type.is_dir()),
        (ours_type.is_file(), std_type.is_file()),
        (ours_type.is_symlink(), std_type.is_symlink()),
        (ours_type.is_block_device(), std_type.is_block_device()),
        (ours_type.is_char_device(), std_type.is_char_device()),
        (ours_type.is_fifo(), std_type.is_fifo()),
        (ours_type.is_socket(), std_type.is_socket()),
    ];
    for (i, (a, b)) in types.into_iter().enumerate() {
        assert_eq!(a, b, "{what}: file type predicate {i}");
    }
    assert_eq!(ours.is_dir(), std.is_dir(), "{what}: is_dir");
    assert_eq!(ours.is_file(), std.is_file(), "{what}: is_file");
    assert_eq!(ours.is_symlink(), std.is_symlink(), "{what}: is_symlink");
    assert_eq!(ours.len(), std.len(), "{what}: len");
    assert_eq!(ours.permissions(), std.permissions(), "{what}: permissions");
    let time = |r: io::Result<std::time::SystemTime>| r.map_err(|e| e.kind());
    assert_eq!(
        time(ours.modified()),
        time(std.modified()),
        "{what}: modified"
    );
    assert_eq!(
        time(ours.accessed()),
        time(std.accessed()),
        "{what}: accessed"
    );
    assert_eq!(time(ours.created()), time(std.created()), "{what}: created");
    let ext = |m: &dyn MetadataExt| {
        [
            ("dev", m.dev()),
            ("ino", m.ino()),
            ("mode", u64::from(m.mode())),
            ("nlink", m.nlink()),
            ("uid", u64::from(m.uid())),
            ("gid", u64::from(m.gid())),
            ("rdev", m.rdev()),
            ("size", m.size()),
            ("atime", m.atime() as u64),
            ("atime_nsec", m.atime_nsec() as u64),
            ("mtime", m.mtime() as u64),
            ("mtime_nsec", m.mtime_nsec() as u64),
            ("ctime", m.ctime() as u64),
            ("ctime_nsec", m.ctime_nsec() as u64),
            ("blksize", m.blksize()),
            ("blocks", m.blocks()),
        ]
    };
    for ((field, a), (_, b)) in ext(ours).into_iter().zip(ext(std)) {
        assert_eq!(a, b, "{what}: {field}");
    }
    assert_eq!(
        ours,
        &Metadata::from(std.clone()),
        "{what}: the conversion agrees"
    );
}

#[test]
fn metadata_of_a_file_and_a_directory_equals_std_metadata_field_by_field() -> io::Result<()> {
    in_scratch("metadata", async |scratch| {
        let file = scratch.file("file", vec![9u8; 12_345])?;
        let ours = fs::metadata(&file).await?;
        assert_same("file", &ours, &std::fs::metadata(&file)?);
        assert!(ours.is_file() && ours.len() == 12_345);
        let ours = fs::metadata(scratch.path()).await?;
        assert_same("directory", &ours, &std::fs::metadata(scratch.path())?);
        // /dev/null's times move whenever anyone writes to it: compare what holds still.
        let ours = fs::metadata("/dev/null").await?;
        let std = std::fs::metadata("/dev/null")?;
        assert!(ours.file_type().is_char_device());
        assert_eq!(
            (ours.rdev(), ours.ino(), ours.mode()),
            (std.rdev(), std.ino(), std.mode())
        );
        Ok(())
    })
}

#[test]
fn symlink_metadata_of_a_symlink_describes_the_link_and_metadata_its_target() -> io::Result<()> {
    in_scratch("symlink-metadata", async |scratch| {
        let target = scratch.file("target", b"target bytes")?;
        let link = scratch.join("link");
        std::os::unix::fs::symlink(&target, &link)?;
        let ours = fs::symlink_metadata(&link).await?;
        assert_same("symlink", &ours, &std::fs::symlink_metadata(&link)?);
        assert!(ours.is_symlink() && !ours.is_file());
        assert_eq!(ours.len(), target.as_os_str().len() as u64);
        let followed = fs::metadata(&link).await?;
        assert_same("followed", &followed, &std::fs::metadata(&link)?);
        assert!(followed.is_file() && followed.ino() == std::fs::metadata(&target)?.ino());
        let ours = fs::symlink_metadata(&target).await?;
        assert_same("not a link", &ours, &std::fs::symlink_metadata(&target)?);
        Ok(())
    })
}

/// A file created in `scratch` and filled with `contents`, open for writing.
async fn created_with(scratch: &Scratch, contents: Vec<u8>) -> io::Result<(PathBuf, File)> {
    let path = scratch.join("file");
    let file = File::create(&path).await?;
    file.write_all_at(contents, 0).await.0?;
    Ok((path, file))
}

#[test]
fn file_metadata_by_descriptor_equals_std_file_metadata() -> io::Result<()> {
    in_scratch("file-metadata", async |scratch| {
        let (path, file) = created_with(scratch, vec![1u8; 5000]).await?;
        let ours = file.metadata().await?;
        let std = std::fs::File::open(&path)?.metadata()?;
        assert_same("open file", &ours, &std);
        fs::remove_file(&path).await?;
        let unlinked = file.metadata().await?;
        assert_eq!(unlinked.nlink(), 0, "an open, unlinked file still answers");
        assert_eq!(unlinked.len(), 5000);
        Ok(())
    })
}

#[test]
fn set_len_shrinks_and_extends_and_later_syncs_still_sync() -> io::Result<()> {
    let (rt, scratch) = runtime_with_scratch("set-len")?;
    let path = scratch.join("file");
    rt.block_on(async {
        let file = baton_tests::create_read_write(&path).await?;
        file.write_all_at(b"0123456789".to_vec(), 0).await.0?;
        file.sync_all().await?;
        file.set_len(4).await?;
        assert_eq!(std::fs::read(&path)?, b"0123");
        let ops = rt.metrics().ops_completed;
        file.sync_all().await?;
        assert!(
            rt.metrics().ops_completed > ops,
            "the truncate made the file dirty: the sync went to the kernel"
        );
        file.set_len(8).await?;
        assert_eq!(file.metadata().await?.len(), 8);
        assert_eq!(std::fs::read(&path)?, b"0123\0\0\0\0");
        let err = file.set_len(u64::MAX).await.expect_err("too long");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        let read_only = File::open(&path).await?;
        let err = read_only
            .set_len(1)
            .await
            .expect_err("not open for writing");
        let std_err = std::fs::File::open(&path)?.set_len(1).expect_err("std too");
        assert_eq!(err.kind(), std_err.kind());
        Ok(())
    })
}

#[test]
fn sync_range_writes_back_ranges_and_refuses_ranges_that_do_not_fit() -> io::Result<()> {
    in_scratch("sync-range", async |scratch| {
        let (path, file) = created_with(scratch, vec![5u8; 64 * 1024]).await?;
        file.sync_range(0, 4096).await?;
        file.sync_range(4096, 0).await?;
        file.sync_range(0, 3 << 30).await?; // past the end, several requests: fine
        let err = file.sync_range(u64::MAX, 1).await.expect_err("offset");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert_kind(
            file.sync_range(1, u64::MAX).await,
            io::ErrorKind::InvalidInput,
            "range",
        );
        assert_eq!(std::fs::read(&path)?.len(), 64 * 1024);
        Ok(())
    })
}
