//! Positional offsets above `i64::MAX`: io_uring reads offset −1 (`u64::MAX`) as "use the file
//! cursor", and any other offset with the top bit set is a negative `loff_t`. The driver refuses
//! them all with `InvalidInput` before anything is submitted, so a positional write can never
//! land at the cursor. `i64::MAX` itself passes the check and reaches the kernel.

mod support;

use std::io;

use baton_uring::{Driver, ops};
use support::{TempFile, ring_file_or_skip, ring_serial, run};

const CONTENTS: &[u8] = b"0123456789";

/// Offsets that must be refused: −1 (the cursor) and the first negative `loff_t`.
const ABOVE_I64_MAX: [u64; 2] = [u64::MAX, i64::MAX as u64 + 1];

/// The refusal is ours, not the kernel's: `InvalidInput` with no OS error, naming the limit.
fn assert_refused(result: io::Result<usize>, offset: u64) {
    let err = result.expect_err("an offset above i64::MAX is refused");
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "offset {offset}");
    assert_eq!(
        err.raw_os_error(),
        None,
        "refused by the driver, not by the kernel (offset {offset}): {err}"
    );
    assert!(err.to_string().contains("i64::MAX"), "{err}");
}

/// Attempts one positional request per offset above `i64::MAX` through `attempt`, each on a
/// fresh temp file (tagged `tag`) and driver, and asserts that the driver refused it
/// ([`assert_refused`]) and submitted nothing; `attempt` checks its buffers and the file.
fn each_refused_offset(
    tag: &str,
    mut attempt: impl FnMut(&TempFile, &Driver, u64) -> io::Result<usize>,
) {
    let Some(_s) = ring_serial() else { return };
    for offset in ABOVE_I64_MAX {
        let file = TempFile::new(tag, CONTENTS);
        let driver = support::driver(4);
        assert_refused(attempt(&file, &driver, offset), offset);
        assert_eq!(driver.metrics().completed, 0, "nothing was submitted");
    }
}

#[test]
fn write_at_offset_above_i64_max_is_invalid_input_and_submits_nothing() {
    each_refused_offset("write-above", |file, driver, offset| {
        let (res, buf) = run(
            driver,
            ops::write_at(file.fd.clone(), b"XY".to_vec(), offset),
        );
        assert_eq!(buf, b"XY", "the buffer comes back untouched");
        assert_eq!(
            std::fs::read(&file.path).expect("read back"),
            CONTENTS,
            "the file is unchanged (offset {offset})"
        );
        res
    });
}

#[test]
fn writev_at_offset_above_i64_max_is_invalid_input_and_submits_nothing() {
    each_refused_offset("writev-above", |file, driver, offset| {
        let bufs = vec![b"X".to_vec(), b"Y".to_vec()];
        let (res, bufs) = run(driver, ops::writev_at(file.fd.clone(), bufs, offset));
        assert_eq!(bufs, vec![b"X".to_vec(), b"Y".to_vec()]);
        assert_eq!(std::fs::read(&file.path).expect("read back"), CONTENTS);
        res
    });
}

#[test]
fn read_at_offset_above_i64_max_is_invalid_input_and_submits_nothing() {
    each_refused_offset("read-above", |file, driver, offset| {
        let (res, buf) = run(
            driver,
            ops::read_at(file.fd.clone(), Vec::with_capacity(4), offset),
        );
        assert!(buf.is_empty(), "nothing was read into the buffer");
        res
    });
}

#[test]
fn readv_at_offset_above_i64_max_is_invalid_input_and_submits_nothing() {
    each_refused_offset("readv-above", |file, driver, offset| {
        let bufs = vec![vec![b'-'; 2]; 2];
        let (res, bufs) = run(driver, ops::readv_at(file.fd.clone(), bufs, offset));
        assert_eq!(bufs, vec![b"--".to_vec(); 2], "the buffers are untouched");
        res
    });
}

/// The check lets `i64::MAX` through: whatever the kernel answers (end of file, or an error of
/// its own for a range past the largest file size), the request was submitted.
#[test]
fn offset_i64_max_passes_the_check_and_reaches_the_kernel() {
    ring_file_or_skip!(file, driver = "i64-max", CONTENTS);
    let (res, _buf) = run(
        &driver,
        ops::read_at(file.fd.clone(), Vec::with_capacity(4), i64::MAX as u64),
    );
    assert_eq!(driver.metrics().completed, 1, "the read was submitted");
    match res {
        Ok(n) => assert_eq!(n, 0, "nothing lies at i64::MAX"),
        Err(err) => assert!(err.raw_os_error().is_some(), "a kernel error: {err}"),
    }
    assert_eq!(std::fs::read(&file.path).expect("read back"), CONTENTS);
}
