//! End to end: `baton::io::PollIo`, the readiness-style socket calls adapters use — reads and
//! writes on borrowed memory, with readiness waits on the ring — mixed with owned-buffer reads
//! cut short by timeouts on one socket.

use std::future::poll_fn;
use std::io;
use std::time::Duration;

use baton::io::{PollRead, PollWrite};
use baton::net::{TcpListener, TcpStream};
use baton_tests::paced;

const TOTAL: usize = 6000;

/// One readiness-style read: try, and wait for readable on `WouldBlock`.
async fn read_ready(stream: &TcpStream, dst: &mut [u8]) -> io::Result<usize> {
    loop {
        match poll_fn(|cx| stream.poll_try_read(cx, dst)).await {
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => stream.readable().await?,
            read => return read,
        }
    }
}

/// 4 MiB of bytes counting up modulo `modulus`, so a shifted or dropped byte shows.
fn patterned(modulus: usize) -> Vec<u8> {
    (0..(4 << 20)).map(|i| (i % modulus) as u8).collect()
}

/// A task reading `stream` to its end.
fn read_all(stream: baton::net::UnixStream) -> baton::task::JoinHandle<io::Result<Vec<u8>>> {
    baton::spawn(async move {
        let (res, got) = baton::io::AsyncReadExt::read_to_end(&mut &stream, Vec::new()).await;
        res.map(|_| got)
    })
}

/// Owned-buffer reads cut short by timeouts of 1–40 µs (whose bytes the stash keeps when the
/// kernel delivered them late) alternate with `PollIo` reads, against a peer thread sending
/// single bytes: every byte arrives once and in order, so a `PollIo` read takes what the stash
/// holds before the socket's own bytes.
#[test]
fn poll_io_reads_and_owned_reads_cut_short_interleave_in_order() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let writer = paced::spawn_writer(addr, TOTAL);
        let (stream, _) = listener.accept().await?;
        paced::collect_in_order(TOTAL, writer, async |round, got| {
            if round % 2 == 0 {
                let cut = Duration::from_micros(1 + round % 40);
                let owned = stream.read(Vec::with_capacity(7));
                if let Ok((Ok(_), buf)) = baton::time::timeout(cut, owned).await {
                    got.extend_from_slice(&buf);
                }
            } else {
                let mut small = [0_u8; 5];
                let count = read_ready(&stream, &mut small).await?;
                got.extend_from_slice(&small[..count]);
            }
            Ok(())
        })
        .await
    })
}

/// A large vectored write through `PollIo`, waiting for room whenever the socket is full,
/// arrives whole and in order; the end of the stream reads as 0.
#[test]
fn poll_io_writes_wait_for_room_and_deliver_in_order() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    rt.block_on(async {
        let (a, b) = baton::net::UnixStream::pair()?;
        let body = patterned(253);
        let reader = read_all(b);
        let (head, tail) = body.split_at(1000);
        let mut sent = 0;
        while sent < body.len() {
            let (first, second) = if sent < head.len() {
                (&head[sent..], tail)
            } else {
                (&tail[sent - head.len()..], &[][..])
            };
            match a.try_write_vectored(&[io::IoSlice::new(first), io::IoSlice::new(second)]) {
                Ok(count) => sent += count,
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => a.writable().await?,
                Err(err) => return Err(err),
            }
        }
        drop(a);
        let got = reader.await.map_err(io::Error::other)??;
        assert!(got == body, "the body arrived changed");
        Ok(())
    })
}

/// `PollIo::read_owned` futures cut short by timeouts of 1–40 µs alternate with plain ones
/// against a peer sending single bytes: a cut one leaves what the kernel gave it in the stash,
/// and the next takes it first, so every byte arrives once and in order.
#[test]
fn owned_reads_kept_across_polls_are_cancel_safe() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let writer = paced::spawn_writer(addr, TOTAL);
        let (stream, _) = listener.accept().await?;
        paced::collect_in_order(TOTAL, writer, async |round, got| {
            let read = stream.read_owned(Vec::with_capacity(7));
            if round % 2 == 0 {
                let cut = Duration::from_micros(1 + round % 40);
                if let Ok((Ok(_), buf)) = baton::time::timeout(cut, read).await {
                    got.extend_from_slice(&buf);
                }
            } else {
                let (result, buf) = read.await;
                result?;
                got.extend_from_slice(&buf);
            }
            Ok(())
        })
        .await
    })
}

/// A 4 MiB `PollIo::write_all_owned`, far more than one send takes, arrives whole and in
/// order, and hands its buffer back.
#[test]
fn owned_write_all_sends_everything_across_short_sends() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    rt.block_on(async {
        let (a, b) = baton::net::UnixStream::pair()?;
        let body = patterned(251);
        let reader = read_all(b);
        let (result, back) = a.write_all_owned(body.clone()).await;
        result?;
        assert_eq!(back.len(), body.len(), "the buffer comes back");
        drop(a);
        let got = reader.await.map_err(io::Error::other)??;
        assert!(got == body, "the body arrived changed");
        Ok(())
    })
}

/// An owned read made while an earlier one is in flight decides at its first poll, not when it
/// is made, whether bytes wait in the stash: the earlier read, dropped late, leaves "abc" there,
/// and the later read returns it before "def" (stash rule S4).
#[test]
fn an_owned_read_made_before_an_earlier_one_is_dropped_takes_the_stash_first() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    rt.block_on(async {
        let (a, b) = baton::net::UnixStream::pair()?;
        let mut first = a.read_owned(Vec::with_capacity(16));
        poll_fn(|cx| {
            assert!(std::pin::Pin::new(&mut first).poll(cx).is_pending());
            std::task::Poll::Ready(())
        })
        .await;
        let second = a.read_owned(Vec::with_capacity(16));
        let (sent, _) = baton::io::AsyncWriteExt::write_all(&mut &b, b"abc".to_vec()).await;
        sent?;
        // Let the first receive's completion arrive before it is dropped, so it lands late.
        baton::time::sleep(Duration::from_millis(20)).await;
        drop(first);
        let (sent, _) = baton::io::AsyncWriteExt::write_all(&mut &b, b"def".to_vec()).await;
        sent?;
        let (read, got) = baton::time::timeout(Duration::from_secs(20), second)
            .await
            .map_err(|_| io::Error::other("the second read never finished"))?;
        read?;
        assert_eq!(&got[..], b"abc", "the stashed bytes were skipped");
        Ok(())
    })
}

/// `write_all_owned` of nothing completes with `Ok`, as `write_all` does, and returns the buffer.
#[test]
fn an_empty_owned_write_all_is_ok() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    rt.block_on(async {
        let (a, _b) = baton::net::UnixStream::pair()?;
        let (written, buf) = a.write_all_owned(Vec::with_capacity(8)).await;
        written?;
        assert_eq!(buf.capacity(), 8);
        Ok(())
    })
}
