//! Real-ring basics: set-up errors, file I/O round trips and bad input.

mod support;

use std::io;
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};
use std::sync::Arc;

use baton_uring::{Driver, DriverConfig, IoBuf, SetupError, ops};
use support::{prefilled, ring_file_or_skip, ring_serial, run};

#[test]
fn zero_entries_is_a_clear_error() {
    let err = Driver::new(DriverConfig::new().ring_entries(0)).expect_err("0 entries");
    assert!(matches!(err, SetupError::ZeroEntries), "{err}");
}

#[test]
fn more_entries_than_the_kernel_allows_is_a_clear_error() {
    let err = Driver::new(DriverConfig::new().ring_entries(1 << 20)).expect_err("too many");
    assert!(matches!(err, SetupError::TooManyEntries { .. }), "{err}");
    assert!(err.to_string().contains("32768"), "{err}");
}

#[test]
fn migratable_driver_does_not_bind_the_ring_to_one_thread() {
    let Some(_s) = ring_serial() else { return };
    let driver = support::driver(8);
    let flags = driver.metrics().flags;
    assert!(!flags.single_issuer && !flags.defer_taskrun, "{flags:?}");
    let pinned = Driver::new(DriverConfig::new().ring_entries(8).pinned(true)).expect("set-up");
    let flags = pinned.metrics().flags;
    eprintln!("pinned driver flags: {flags:?}");
    run(&pinned, ops::nop()).expect("nop on a pinned driver");
}

#[test]
fn nop_completes() {
    let Some(_s) = ring_serial() else { return };
    let driver = support::driver(4);
    run(&driver, ops::nop()).expect("nop");
    assert!(driver.is_idle());
}

#[test]
fn write_then_read_round_trip() {
    ring_file_or_skip!(file, driver = "rw", b"");
    let (n, buf) = run(
        &driver,
        ops::write_at(file.fd.clone(), b"hello baton".to_vec(), 0),
    );
    assert_eq!(n.expect("write"), 11);
    assert_eq!(buf, b"hello baton");
    let (n, buf) = run(
        &driver,
        ops::read_at(file.fd.clone(), Vec::with_capacity(5), 6),
    );
    assert_eq!(n.expect("read"), 5);
    assert_eq!(&buf, b"baton");
    let (n, bufs) = run(
        &driver,
        ops::writev_at(file.fd.clone(), vec![b"ab".to_vec(), b"cd".to_vec()], 11),
    );
    assert_eq!(n.expect("writev"), 4);
    assert_eq!(bufs.len(), 2);
    let (n, bufs) = run(
        &driver,
        ops::readv_at(file.fd.clone(), vec![vec![0; 3], vec![0; 3]], 9),
    );
    assert_eq!(n.expect("readv"), 6);
    assert_eq!(bufs, vec![b"ona".to_vec(), b"bcd".to_vec()]);
    run(&driver, ops::fsync(file.fd.clone())).expect("fsync");
    run(&driver, ops::fdatasync(file.fd.clone())).expect("fdatasync");
    assert_eq!(
        std::fs::read(&file.path).expect("read back"),
        b"hello batonabcd"
    );
    drop(driver);
    assert_eq!(Arc::strong_count(&file.fd), 1);
}

#[test]
fn read_past_end_of_file_returns_zero_and_empties_the_buffer() {
    ring_file_or_skip!(file, driver = "eof", b"abc");
    let buf = prefilled(8, b"pre");
    let (n, buf) = run(&driver, ops::read_at(file.fd.clone(), buf, 100));
    assert_eq!(n.expect("read past EOF"), 0);
    assert!(
        buf.is_empty(),
        "the initialized length is exactly the count"
    );
    assert_eq!(buf.capacity(), 8);
}

#[test]
fn read_fills_the_buffer_from_its_beginning_up_to_its_capacity() {
    ring_file_or_skip!(file, driver = "fill", b"0123456789");
    let buf = prefilled(6, b"ab");
    let (n, buf) = run(&driver, ops::read_at(file.fd.clone(), buf, 3));
    assert_eq!(n.expect("read"), 6, "the read fills the whole capacity");
    assert_eq!(buf, b"345678", "from the beginning, over the old contents");
    let full = vec![7; 4];
    let (n, buf) = run(&driver, ops::read_at(file.fd.clone(), full, 8));
    assert_eq!(n.expect("read"), 2);
    assert_eq!(
        buf, b"89",
        "a full buffer is read over, and its length is the count"
    );
}

#[test]
fn read_into_a_slice_past_the_contents_appends() {
    ring_file_or_skip!(file, driver = "append", b"0123456789");
    let buf = prefilled(6, b"ab");
    let (n, slice) = run(&driver, ops::read_at(file.fd.clone(), buf.slice(2..), 3));
    assert_eq!(n.expect("read"), 4, "the read is capped at the slice");
    assert_eq!(slice.into_inner(), b"ab3456", "prefix, then the bytes read");
}

#[test]
fn empty_buffer_is_invalid_input_without_submitting() {
    ring_file_or_skip!(file, driver = "empty", b"abc");
    let (n, buf) = run(&driver, ops::read_at(file.fd.clone(), Vec::new(), 0));
    let err = n.expect_err("empty buffer");
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("Vec::with_capacity"), "{err}");
    assert!(buf.is_empty());
    assert_eq!(driver.metrics().completed, 0, "nothing was submitted");
}

#[test]
fn closed_fd_is_ebadf() {
    let Some(_s) = ring_serial() else { return };
    let driver = support::driver(4);
    // SAFETY: 900_000 is above any descriptor this process opens (RLIMIT_NOFILE is lower), so
    // this owns nothing; it is released with into_raw_fd below, never closed.
    let bogus = Arc::new(unsafe { OwnedFd::from_raw_fd(900_000) });
    let (n, _) = run(
        &driver,
        ops::read_at(bogus.clone(), Vec::with_capacity(4), 0),
    );
    assert_eq!(n.expect_err("closed fd").raw_os_error(), Some(libc::EBADF));
    drop(driver);
    let bogus = Arc::try_unwrap(bogus).expect("the driver released the fd");
    let _ = bogus.into_raw_fd();
}

#[test]
fn open_statx_close_round_trip() {
    ring_file_or_skip!(file, driver = "open", b"12345");
    let before = support::fd_count();
    let fd = run(&driver, ops::open(&file.path, libc::O_RDONLY, 0)).expect("open");
    assert_eq!(support::fd_count(), before + 1);
    let st = run(&driver, ops::statx(&file.path)).expect("statx");
    assert_eq!(st.stx_size, 5);
    run(&driver, ops::close(fd)).expect("close");
    assert_eq!(support::fd_count(), before);
    let err = run(
        &driver,
        ops::open(support::temp_path("missing"), libc::O_RDONLY, 0),
    )
    .expect_err("missing file");
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
    let err = run(&driver, ops::open("bad\0path", libc::O_RDONLY, 0)).expect_err("NUL");
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
}

#[test]
fn op_without_a_driver_says_what_to_do() {
    let out = support::block_on_thread(ops::nop());
    let err = out.expect_err("no driver");
    assert!(err.to_string().contains("no Baton driver"), "{err}");
}

/// A nested enter of the current driver changes nothing: after it drops, operations on this
/// thread still register with the driver; after the outer guard drops, they find no driver.
#[test]
fn nested_enter_keeps_the_driver_current_until_the_outer_guard_drops() {
    let Some(_s) = ring_serial() else { return };
    let driver = Driver::new(DriverConfig::new().ring_entries(4)).expect("a ring");
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let outer = driver.enter();
    drop(driver.enter());
    let mut nop = Box::pin(ops::nop());
    assert!(
        nop.as_mut().poll(&mut cx).is_pending(),
        "registered locally"
    );
    assert!(nop.key().is_some(), "the driver is still entered here");
    drop(outer);
    let mut orphan = Box::pin(ops::nop());
    match orphan.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(Err(err)) => {
            assert!(
                err.to_string().contains("no Baton driver is entered"),
                "{err}"
            );
        }
        other => panic!("an operation polled with no driver entered must fail, got {other:?}"),
    }
    drop(nop);
    support::turn_until(&driver, || driver.metrics().slots == 0);
}
