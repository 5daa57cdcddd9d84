//! The file-system requests over the simulated ring: each refused opcode is `Unsupported`
//! naming it (so the facade can fall back), path changes are retained when dropped (lifecycle
//! rule U5), NUL paths never reach the ring, and a truncate — through the ring or reported with
//! `note_write` — makes a clean file dirty again (durability rule D3).

use std::io;
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use io_uring::opcode;

use crate::driver::{Driver, Park};
use crate::error::Error;
use crate::ops;
use crate::tests::sim::{SimRing, sim_ring};
use crate::tests::support::{dev_null, sim_driver, sim_driver_with_fd};

fn poll<T, F: std::future::Future<Output = T> + Unpin>(fut: &mut F) -> Poll<T> {
    Pin::new(fut).poll(&mut Context::from_waker(Waker::noop()))
}

/// Polls `op` once on a driver whose simulated kernel lacks `code`: it must resolve at once to
/// `Unsupported` naming `name`, with nothing submitted.
fn refused<T>(code: u8, name: &str, op: crate::Op<io::Result<T>>) {
    let (backend, sim) = sim_ring(4);
    let driver = Driver::with_backend(Box::new(backend.without(code)), 4, None);
    let _entered = driver.enter();
    let mut op = op;
    let Poll::Ready(result) = poll(&mut op) else {
        panic!("{name}: refused at registration, not queued")
    };
    let err = result.err().expect("an unsupported opcode is an error");
    assert_eq!(err.kind(), io::ErrorKind::Unsupported, "{name}: {err}");
    assert!(
        matches!(Error::from_io(&err), Some(Error::Unsupported { opcode }) if *opcode == name),
        "{name}: {err}"
    );
    let _ = driver.turn(Park::Poll);
    assert!(sim.in_flight().is_empty(), "{name}: nothing was submitted");
    assert_eq!(driver.metrics().slots, 0);
}

/// [`refused`] for each `Opcode "NAME" => op`: the opcode's code, the name it must be
/// reported under, and the request that needs it.
macro_rules! each_refused {
    ($($code:ident $name:literal => $op:expr,)*) => {
        $(refused(opcode::$code::CODE, $name, $op);)*
    };
}

#[test]
fn each_missing_file_system_opcode_is_unsupported_naming_it_without_submitting() {
    each_refused! {
        MkDirAt "IORING_OP_MKDIRAT" => ops::mkdirat("d", 0o777),
        RenameAt "IORING_OP_RENAMEAT" => ops::renameat("a", "b", 0),
        UnlinkAt "IORING_OP_UNLINKAT" => ops::unlinkat("a", 0),
        LinkAt "IORING_OP_LINKAT" => ops::linkat("a", "b", 0),
        SymlinkAt "IORING_OP_SYMLINKAT" => ops::symlinkat("a", "b"),
        Statx "IORING_OP_STATX" => ops::statx_nofollow("a"),
        Statx "IORING_OP_STATX" => ops::statx_fd(dev_null()),
        Ftruncate "IORING_OP_FTRUNCATE" => ops::ftruncate(dev_null(), 0),
        SyncFileRange "IORING_OP_SYNC_FILE_RANGE" => ops::sync_file_range(dev_null(), 0, 0, 0),
    }
}

#[test]
fn a_nul_in_any_path_is_invalid_input_before_registration() {
    let (driver, sim) = sim_driver(4);
    let _entered = driver.enter();
    let ops: Vec<crate::Op<io::Result<()>>> = vec![
        ops::mkdirat("a\0b", 0o777),
        ops::renameat("ok", "a\0b", 0),
        ops::renameat("a\0b", "ok", 0),
        ops::unlinkat("a\0b", 0),
        ops::linkat("a\0b", "ok", 0),
        ops::symlinkat("ok", "a\0b"),
    ];
    for mut op in ops {
        let Poll::Ready(Err(err)) = poll(&mut op) else {
            panic!("a NUL path is refused at once")
        };
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("NUL byte"), "{err}");
    }
    let mut stat = ops::statx_nofollow("a\0b");
    assert!(
        matches!(poll(&mut stat), Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::InvalidInput)
    );
    let _ = driver.turn(Park::Poll);
    assert!(sim.in_flight().is_empty());
    assert_eq!(driver.metrics().slots, 0, "nothing was registered");
}

#[test]
fn truncate_and_range_sync_above_i64_max_are_invalid_input_before_registration() {
    let (driver, sim) = sim_driver(4);
    let _entered = driver.enter();
    let mut truncate = ops::ftruncate(dev_null(), u64::MAX);
    let Poll::Ready(Err(err)) = poll(&mut truncate) else {
        panic!("refused")
    };
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("i64::MAX"), "{err}");
    let mut range = ops::sync_file_range(dev_null(), u64::MAX, 1, 0);
    let Poll::Ready(Err(err)) = poll(&mut range) else {
        panic!("refused")
    };
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    let _ = driver.turn(Park::Poll);
    assert!(sim.in_flight().is_empty());
}

/// The single request in flight on `sim`.
fn only_in_flight(sim: &SimRing) -> u64 {
    let in_flight = sim.in_flight();
    assert_eq!(in_flight.len(), 1, "{in_flight:?}");
    in_flight[0]
}

#[test]
fn dropped_in_flight_path_changes_are_retained_not_cancelled() {
    let dropped: Vec<crate::Op<io::Result<()>>> = vec![
        ops::mkdirat("d", 0o777),
        ops::renameat("a", "b", 0),
        ops::unlinkat("a", 0),
        ops::linkat("a", "b", 0),
        ops::symlinkat("a", "b"),
        ops::ftruncate(dev_null(), 0),
        ops::sync_file_range(dev_null(), 0, 0, 0),
    ];
    for mut op in dropped {
        let (driver, sim) = sim_driver(4);
        let _entered = driver.enter();
        assert!(poll(&mut op).is_pending());
        let _ = driver.turn(Park::Poll);
        let user_data = only_in_flight(&sim);
        drop(op);
        let _ = driver.turn(Park::Poll);
        assert!(
            sim.pending_cancels().is_empty(),
            "a dropped path change is not cancelled"
        );
        assert_eq!(only_in_flight(&sim), user_data, "the kernel keeps it");
        assert!(sim.complete(user_data, 0));
        let _ = driver.turn(Park::Poll);
        assert!(driver.is_idle(), "it retires at its completion");
    }
}

#[test]
fn a_path_change_dropped_while_queued_is_still_submitted() {
    let (driver, sim) = sim_driver(1);
    let _entered = driver.enter();
    let mut first = ops::nop();
    assert!(poll(&mut first).is_pending());
    let mut rename = ops::renameat("a", "b", 0);
    assert!(poll(&mut rename).is_pending());
    let _ = driver.turn(Park::Poll);
    let nop = only_in_flight(&sim);
    drop(rename);
    assert!(sim.complete(nop, 0));
    let _ = driver.turn(Park::Poll);
    assert!(matches!(poll(&mut first), Poll::Ready(Ok(()))));
    let _ = driver.turn(Park::Poll);
    let rename = only_in_flight(&sim);
    assert_ne!(
        rename, nop,
        "the dropped rename went to the kernel after the nop"
    );
    assert!(sim.complete(rename, 0));
    let _ = driver.turn(Park::Poll);
    assert!(driver.is_idle());
}

/// Runs an fsync of `fd` to completion on the sim, completing its SQE (if it has one) with 0;
/// true if it needed an SQE (the file was dirty).
fn sync_submitted(driver: &Driver, sim: &SimRing, fd: &Arc<OwnedFd>) -> bool {
    let mut sync = ops::fsync(fd.clone());
    if let Poll::Ready(result) = poll(&mut sync) {
        result.expect("a clean file's sync succeeds at once");
        return false;
    }
    let _ = driver.turn(Park::Poll);
    let submitted = match sim.in_flight().as_slice() {
        [] => false,
        [user_data] => sim.complete(*user_data, 0),
        more => panic!("one sync at a time: {more:?}"),
    };
    let _ = driver.turn(Park::Poll);
    let Poll::Ready(result) = poll(&mut sync) else {
        panic!("the sync settled")
    };
    result.expect("sync");
    submitted
}

#[test]
fn a_truncate_through_the_ring_makes_a_clean_file_dirty() {
    let (driver, sim) = sim_driver(4);
    let _entered = driver.enter();
    let fd = dev_null();
    assert!(sync_submitted(&driver, &sim, &fd), "never synced: dirty");
    assert!(
        !sync_submitted(&driver, &sim, &fd),
        "synced, unchanged: clean"
    );
    let mut truncate = ops::ftruncate(fd.clone(), 0);
    assert!(poll(&mut truncate).is_pending());
    let _ = driver.turn(Park::Poll);
    assert!(sim.complete(only_in_flight(&sim), 0));
    let _ = driver.turn(Park::Poll);
    assert!(matches!(poll(&mut truncate), Poll::Ready(Ok(()))));
    assert!(
        sync_submitted(&driver, &sim, &fd),
        "the truncate made it dirty"
    );
}

#[test]
fn a_write_noted_from_outside_makes_a_clean_file_dirty_locally_and_by_message() {
    let (driver, sim, fd) = sim_driver_with_fd(4);
    let handle = driver.handle();
    {
        let _entered = driver.enter();
        assert!(sync_submitted(&driver, &sim, &fd));
        handle.note_write(&fd);
        assert!(sync_submitted(&driver, &sim, &fd), "noted on the owner");
        assert!(!sync_submitted(&driver, &sim, &fd));
    }
    let from_elsewhere = handle.clone();
    let noted = fd.clone();
    std::thread::spawn(move || from_elsewhere.note_write(&noted))
        .join()
        .expect("the noting thread");
    let _entered = driver.enter();
    let _ = driver.turn(Park::Poll);
    assert!(sync_submitted(&driver, &sim, &fd), "noted by message");
}
