//! Real-ring file-system requests: mkdirat, renameat, unlinkat, linkat, symlinkat, the statx
//! variants, ftruncate and sync_file_range on real files, their errors as the kernel reports
//! them, and dropped path changes that still happen. A test whose opcode this kernel lacks
//! says `SKIPPED` and returns.

mod support;

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Waker};

use baton_uring::{Driver, Error, ops};
use support::{ring_file_or_skip, ring_serial, run, temp_path};

/// A fresh directory, removed with everything in it when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let path = temp_path(tag);
        std::fs::create_dir(&path).expect("create scratch dir");
        Scratch(path)
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `Some(value)`, or `None` after a loud `SKIPPED` line when this kernel lacks the opcode.
fn supported<T>(what: &str, result: io::Result<T>) -> Option<io::Result<T>> {
    if let Err(err) = &result
        && let Some(Error::Unsupported { opcode }) = Error::from_io(err)
    {
        eprintln!("SKIPPED: {what}: this kernel's io_uring lacks {opcode}");
        return None;
    }
    Some(result)
}

/// The prologue of these tests: returns from the test (after the loud `SKIPPED` line) when this
/// kernel has no io_uring; else holds the serial guard for the rest of the test and binds
/// `$scratch` to a fresh [`Scratch`] tagged `$tag` and `$driver` to a driver of four entries.
macro_rules! scratch_and_driver {
    ($scratch:ident, $driver:ident = $tag:expr) => {
        let Some(_serial) = ring_serial() else { return };
        let $scratch = Scratch::new($tag);
        let $driver = support::driver(4);
    };
}

#[test]
fn mkdirat_then_unlinkat_removes_the_directory() {
    scratch_and_driver!(scratch, driver = "mkdir");
    let dir = scratch.join("made");
    let Some(made) = supported("mkdirat", run(&driver, ops::mkdirat(&dir, 0o755))) else {
        return;
    };
    made.expect("mkdirat");
    assert!(std::fs::metadata(&dir).expect("made").is_dir());
    let again = run(&driver, ops::mkdirat(&dir, 0o755)).expect_err("exists");
    assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);
    std::fs::write(dir.join("f"), b"x").expect("a file inside");
    let full = run(&driver, ops::unlinkat(&dir, libc::AT_REMOVEDIR)).expect_err("not empty");
    assert_eq!(full.kind(), io::ErrorKind::DirectoryNotEmpty);
    run(&driver, ops::unlinkat(dir.join("f"), 0)).expect("unlink the file");
    run(&driver, ops::unlinkat(&dir, libc::AT_REMOVEDIR)).expect("remove the dir");
    assert!(!dir.exists());
    let missing = run(&driver, ops::unlinkat(&dir, 0)).expect_err("gone");
    assert_eq!(missing.kind(), io::ErrorKind::NotFound);
}

#[test]
fn renameat_moves_a_file_and_refuses_across_devices() {
    scratch_and_driver!(scratch, driver = "rename");
    let (from, to) = (scratch.join("from"), scratch.join("to"));
    std::fs::write(&from, b"moved").expect("write");
    run(&driver, ops::renameat(&from, &to, 0)).expect("rename");
    assert_eq!(std::fs::read(&to).expect("read"), b"moved");
    assert!(!from.exists());
    let shm = Path::new("/dev/shm");
    let same_device = std::fs::metadata(shm).map(|m| m.dev()).ok()
        == Some(std::fs::metadata(&scratch.0).expect("scratch").dev());
    if same_device {
        eprintln!("SKIPPED: cross-device rename: /dev/shm is missing or on the temp dir's device");
        return;
    }
    let other = shm.join(format!("baton-uring-xdev-{}", std::process::id()));
    let err = run(&driver, ops::renameat(&to, &other, 0)).expect_err("EXDEV");
    assert_eq!(err.kind(), io::ErrorKind::CrossesDevices, "{err}");
    assert!(to.exists() && !other.exists());
}

#[test]
fn linkat_and_symlinkat_make_names_statx_tells_apart() {
    scratch_and_driver!(scratch, driver = "links");
    let original = scratch.join("original");
    std::fs::write(&original, b"12345").expect("write");
    let (hard, soft) = (scratch.join("hard"), scratch.join("soft"));
    let Some(linked) = supported("linkat", run(&driver, ops::linkat(&original, &hard, 0))) else {
        return;
    };
    linked.expect("linkat");
    let Some(linked) = supported("symlinkat", run(&driver, ops::symlinkat(&original, &soft)))
    else {
        return;
    };
    linked.expect("symlinkat");
    let st = run(&driver, ops::statx(&hard)).expect("statx hard");
    assert_eq!((st.stx_nlink, st.stx_size), (2, 5));
    let followed = run(&driver, ops::statx(&soft)).expect("statx follows");
    assert_eq!(followed.stx_ino, st.stx_ino);
    let link = run(&driver, ops::statx_nofollow(&soft)).expect("statx of the link");
    assert_eq!(u32::from(link.stx_mode) & libc::S_IFMT, libc::S_IFLNK);
    assert_eq!(
        link.stx_size,
        original.as_os_str().len() as u64,
        "a symlink's size is its target's length"
    );
    let exists = run(&driver, ops::symlinkat(&original, &soft)).expect_err("exists");
    assert_eq!(exists.kind(), io::ErrorKind::AlreadyExists);
}

#[test]
fn statx_of_a_descriptor_matches_fstat_and_statx_of_a_missing_path_is_not_found() {
    ring_file_or_skip!(file, driver = "statx-fd", b"abcdef");
    let st = run(&driver, ops::statx_fd(file.fd.clone())).expect("statx of the fd");
    let std = std::fs::metadata(&file.path).expect("std metadata");
    assert_eq!((st.stx_size, st.stx_ino), (std.len(), std.ino()));
    let missing = run(&driver, ops::statx(temp_path("missing"))).expect_err("missing");
    assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    let through_a_file = file.path.join("child");
    let err = run(&driver, ops::statx(&through_a_file)).expect_err("not a dir");
    assert_eq!(err.kind(), io::ErrorKind::NotADirectory);
    assert_eq!(Arc::strong_count(&file.fd), 1, "the driver released the fd");
}

#[test]
fn ftruncate_shrinks_and_extends_and_sync_file_range_succeeds() {
    ring_file_or_skip!(file, driver = "truncate", b"0123456789");
    let Some(cut) = supported(
        "ftruncate",
        run(&driver, ops::ftruncate(file.fd.clone(), 4)),
    ) else {
        return;
    };
    cut.expect("ftruncate");
    assert_eq!(std::fs::read(&file.path).expect("read"), b"0123");
    run(&driver, ops::ftruncate(file.fd.clone(), 6)).expect("extend");
    assert_eq!(std::fs::read(&file.path).expect("read"), b"0123\0\0");
    let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE
        | libc::SYNC_FILE_RANGE_WRITE
        | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    let Some(synced) = supported(
        "sync_file_range",
        run(&driver, ops::sync_file_range(file.fd.clone(), 0, 0, flags)),
    ) else {
        return;
    };
    synced.expect("sync_file_range");
    let bad = run(&driver, ops::sync_file_range(file.fd.clone(), 0, 0, 0xff)).expect_err("flags");
    assert_eq!(bad.kind(), io::ErrorKind::InvalidInput, "EINVAL: {bad}");
}

/// Polls `op` once (registering it), drops it, and turns the driver until it is idle.
fn drop_after_first_poll<T>(driver: &Driver, op: baton_uring::Op<T>) {
    {
        let _entered = driver.enter();
        let mut op = pin!(op);
        assert!(
            op.as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
                .is_pending(),
            "registered, not finished"
        );
    }
    support::turn_until(driver, || driver.is_idle());
}

#[test]
fn dropped_mkdir_rename_and_unlink_still_happen() {
    scratch_and_driver!(scratch, driver = "dropped");
    let dir = scratch.join("dir");
    let Some(probe) = supported(
        "mkdirat",
        run(&driver, ops::mkdirat(scratch.join("p"), 0o755)),
    ) else {
        return;
    };
    probe.expect("mkdirat");
    drop_after_first_poll(&driver, ops::mkdirat(&dir, 0o755));
    assert!(dir.is_dir(), "the dropped mkdir happened");
    let (from, to) = (scratch.join("from"), scratch.join("to"));
    std::fs::write(&from, b"x").expect("write");
    drop_after_first_poll(&driver, ops::renameat(&from, &to, 0));
    assert!(to.exists() && !from.exists(), "the dropped rename happened");
    drop_after_first_poll(&driver, ops::unlinkat(&to, 0));
    assert!(!to.exists(), "the dropped unlink happened");
    assert_eq!(driver.metrics().slots, 0);
}
