//! A peer that sends single bytes at irregular, short intervals, and the read loop that
//! collects them: for tests where reads are cut short while bytes are still arriving (the
//! `PollIo` end-to-end test and baton-compat's `Compat` tests).

use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// The bytes a [`spawn_writer`] peer sends: byte `i` is `i % 251`.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// Connects to `addr` from a thread of its own and sends `total` bytes of [`pattern`] one at
/// a time, pausing 0–36 µs after each, so bytes arrive while reads are being cut short. The
/// thread returns its stream, still open.
pub fn spawn_writer(addr: SocketAddr, total: usize) -> JoinHandle<io::Result<TcpStream>> {
    thread::spawn(move || {
        let mut peer = TcpStream::connect(addr)?;
        peer.set_nodelay(true)?;
        for (i, byte) in pattern(total).into_iter().enumerate() {
            peer.write_all(&[byte])?;
            thread::sleep(Duration::from_micros((i % 37) as u64));
        }
        Ok(peer)
    })
}

/// Runs `step(round, got)` for rounds 0, 1, … until `got` holds `total` bytes, then joins
/// `writer` and asserts that `got` is exactly [`pattern`]`(total)`: every byte once, in
/// order. Fails after two minutes rather than spinning forever (a hang guard only: how many
/// rounds the bytes take depends on how the writer is scheduled).
pub async fn collect_in_order(
    total: usize,
    writer: JoinHandle<io::Result<TcpStream>>,
    mut step: impl AsyncFnMut(u64, &mut Vec<u8>) -> io::Result<()>,
) -> io::Result<()> {
    let mut got = Vec::with_capacity(total);
    let mut round = 0_u64;
    let start = Instant::now();
    while got.len() < total {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "only {} of {total} bytes arrived",
            got.len()
        );
        step(round, &mut got).await?;
        round += 1;
    }
    let _peer = writer
        .join()
        .map_err(|_| io::Error::other("the writer panicked"))??;
    assert!(
        got == pattern(total),
        "bytes were lost, doubled or reordered"
    );
    Ok(())
}
