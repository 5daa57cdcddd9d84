//! Shutdown keeps the durability promise (SPEC §4): writes and syncs whose futures were dropped
//! while they still sat in the driver's userspace queue are submitted as ring slots free and
//! waited for, instead of being retired with the rest of the queue.

mod support;

use std::task::Poll;
use std::time::Duration;

use baton_uring::{Park, ops};
use support::{Probe, TempFile, poll_once, ring_file_or_skip, ring_serial};
use web_time::Instant;

const WRITES: usize = 512;
const CHUNK: usize = 8;

/// The bytes written at chunk `i`: distinct per chunk, so a lost or misplaced write shows.
fn chunk(i: usize) -> Vec<u8> {
    let mut bytes = (i as u64).to_le_bytes().to_vec();
    bytes[7] = 0xA5;
    bytes
}

#[test]
fn dropped_queued_writes_all_land_at_shutdown_through_a_four_entry_ring() {
    ring_file_or_skip!(
        file,
        driver = "drop-queued-writes",
        &vec![0; WRITES * CHUNK]
    );
    {
        let _entered = driver.enter();
        let (_probe, waker) = Probe::with_waker();
        for i in 0..WRITES {
            let mut write = ops::write_at(file.fd.clone(), chunk(i), (i * CHUNK) as u64);
            assert!(poll_once(&mut write, &waker).is_pending(), "write {i}");
            drop(write);
        }
        let metrics = driver.metrics();
        assert!(
            metrics.queued > WRITES / 2,
            "most writes wait in userspace: {metrics:?}"
        );
        let _ = driver.turn(Park::Poll);
    }
    let report = driver.shutdown(Some(Instant::now() + Duration::from_secs(20)));
    assert!(report.drained, "{report:?}");
    assert_eq!(report.leaked, 0, "{report:?}");
    let contents = std::fs::read(&file.path).expect("read back");
    for i in 0..WRITES {
        assert_eq!(
            &contents[i * CHUNK..(i + 1) * CHUNK],
            chunk(i).as_slice(),
            "write {i} landed"
        );
    }
    assert_eq!(
        std::sync::Arc::strong_count(&file.fd),
        1,
        "every fd Arc back"
    );
}

#[test]
fn queued_writes_and_syncs_of_live_handles_still_land_after_close() {
    let Some(_s) = ring_serial() else { return };
    let file = TempFile::new("close-queued-writes", &[0; 64]);
    let driver = support::driver_limited(2, 1);
    let _entered = driver.enter();
    let (_probe, waker) = Probe::with_waker();
    let mut writes: Vec<_> = (0..8)
        .map(|i| ops::write_at(file.fd.clone(), chunk(i), (i * CHUNK) as u64))
        .collect();
    for write in &mut writes {
        assert!(poll_once(write, &waker).is_pending());
    }
    let sync = driver.start_sync(file.fd.clone(), true);
    driver.close();
    for write in &mut writes {
        let Poll::Ready((result, _)) = poll_once(write, &waker) else {
            panic!("a pending poll resolves after closure")
        };
        assert!(baton_uring::Error::is_closed(
            &result.expect_err("closure fails pending polls")
        ));
    }
    support::turn_until(&driver, || driver.metrics().slots == 0);
    drop(writes);
    drop(sync);
    let contents = std::fs::read(&file.path).expect("read back");
    for i in 0..8 {
        assert_eq!(&contents[i * CHUNK..(i + 1) * CHUNK], chunk(i).as_slice());
    }
    assert_eq!(std::sync::Arc::strong_count(&file.fd), 1);
}
