//! The linger and the reply wait (forward rules F8 and F9), over the real ring: foreign polls
//! served while the driver lingers get exactly their results, a reply that is not moments away
//! still reaches its poller through the stored waker, and lingering stops when nobody answers.

mod support;

use std::io::Write;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use baton_uring::{Park, ops};
use support::{TempFile, block_on_thread, pair, ring_serial, turn_until};

/// CPU time the calling thread used so far.
fn thread_cpu() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a valid, writable `rusage`; `getrusage` only writes it.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) };
    assert_eq!(rc, 0, "getrusage(RUSAGE_THREAD)");
    // SAFETY: getrusage succeeded, so it initialised the struct (and it started zeroed).
    let usage = unsafe { usage.assume_init() };
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime))
}

/// F8 and F9: a foreign thread reading one block after another, each read registered through
/// the mailbox while the owner lingers after the previous delivery, gets every block right.
#[test]
fn foreign_reads_in_a_row_each_get_their_own_block() {
    let Some(_s) = ring_serial() else { return };
    let driver = support::driver(4);
    let contents: Vec<u8> = (0..64_u8).collect();
    let file = TempFile::new("lingerreads", &contents);
    let handle = driver.handle();
    let fd = file.fd.clone();
    let reader = thread::spawn(move || {
        (0..200_u64)
            .map(|i| {
                let offset = i % 16 * 4;
                let read = ops::read_at(fd.clone(), Vec::with_capacity(4), offset).bind(&handle);
                let (n, buf) = block_on_thread(read);
                (offset, n.expect("read"), buf)
            })
            .collect::<Vec<_>>()
    });
    turn_until(&driver, || reader.is_finished());
    for (offset, n, buf) in reader.join().expect("reader thread") {
        let at = offset as usize;
        assert_eq!(
            (n, &buf[..]),
            (4, &contents[at..at + 4]),
            "block at {offset}"
        );
    }
    assert_eq!(Arc::strong_count(&file.fd), 1);
}

/// F9: after a delivery the driver lingers, so a foreign receive's message finds it lingering;
/// the receive waits for no peer, so the poll returns `Pending` once the driver passes its next
/// idle point, and the peer's later write still completes it through the stored waker (F3).
#[test]
fn a_reply_that_is_not_moments_away_still_wakes_the_poller() {
    let Some(_s) = ring_serial() else { return };
    let driver = support::driver(4);
    let file = TempFile::new("lingerrecv", b"abcd");
    let (sock, mut peer) = pair();
    let handle = driver.handle();
    let fd = file.fd.clone();
    let poller = thread::spawn(move || {
        let read = ops::read_at(fd, Vec::with_capacity(4), 0).bind(&handle);
        let (n, _) = block_on_thread(read);
        assert_eq!(n.expect("read"), 4);
        let recv = ops::recv(sock, Vec::with_capacity(8)).bind(&handle);
        block_on_thread(recv)
    });
    let started = Instant::now();
    let mut written = false;
    turn_until(&driver, || {
        if !written && started.elapsed() > Duration::from_millis(20) {
            peer.write_all(b"late").expect("peer write");
            written = true;
        }
        poller.is_finished()
    });
    let (n, buf) = poller.join().expect("poller thread");
    assert_eq!(&buf[..n.expect("recv")], b"late");
}

/// F8: lingering is bounded. Once the foreign thread stopped, an idle driver waiting 100 ms
/// uses a small part of it on the CPU (at most one linger after the last delivery).
#[test]
fn an_idle_driver_stops_lingering_when_nobody_answers() {
    let Some(_s) = ring_serial() else { return };
    let driver = support::driver(4);
    let file = TempFile::new("lingeridle", b"abcd");
    let handle = driver.handle();
    let fd = file.fd.clone();
    let reader = thread::spawn(move || {
        for _ in 0..20 {
            let (n, _) =
                block_on_thread(ops::read_at(fd.clone(), Vec::with_capacity(4), 0).bind(&handle));
            assert_eq!(n.expect("read"), 4);
        }
    });
    turn_until(&driver, || reader.is_finished());
    reader.join().expect("reader thread");
    let _entered = driver.enter();
    let cpu_before = thread_cpu();
    let until = Instant::now() + Duration::from_millis(100);
    while Instant::now() < until {
        let _ = driver.turn(Park::Wait(Some(until)));
    }
    let used = thread_cpu() - cpu_before;
    assert!(
        used < Duration::from_millis(30),
        "the idle driver used {used:?} of CPU in 100 ms"
    );
}
