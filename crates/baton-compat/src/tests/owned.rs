//! `Compat` over streams that are not sockets (files, buffered streams, cursors), driven
//! through their owned-buffer calls (rule M6), through tokio's traits.

use std::io;
use std::time::Duration;

use baton::fs::File;
use baton::io::{BufReader, BufWriter, Cursor};
use baton::net::UnixStream;
use baton_tests::{Scratch, in_scratch};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

use super::tokio_io::read_in_chunks;
use super::{pattern, read_all, run, tcp_pair};
use crate::CompatExt;

/// A test's frame over a fresh scratch directory: `body` runs on a runtime and must succeed.
fn in_files(tag: &str, body: impl AsyncFnOnce(&Scratch) -> io::Result<()>) {
    in_scratch(tag, body).expect("the test's file I/O succeeds");
}

/// Exactly `count` bytes from the peer, through Baton's own reads; an error when they do not
/// come within 10 s (the bytes were never written).
async fn peer_reads(peer: &impl baton::net::Stream, count: usize) -> io::Result<Vec<u8>> {
    let mut peer = peer;
    let read = baton::io::AsyncReadExt::read_exact(&mut peer, vec![0u8; count]);
    let (result, got) = baton::time::timeout(Duration::from_secs(10), read)
        .await
        .map_err(|_| io::Error::other("the bytes never arrived"))?;
    result.map(|()| got)
}

/// A 3 MiB body written through a file's `Compat` in uneven pieces reads back the same
/// through another, in small pieces: the writes stay in order across the 1 MiB copy limit
/// and the reads follow the file's cursor.
#[test]
fn a_file_round_trips_a_large_body_in_uneven_pieces() {
    in_files("compat-file", async |scratch| {
        let path = scratch.join("body");
        let body = pattern(3 * 1024 * 1024 + 17);
        let mut writer = File::create(&path).await?.compat();
        for piece in body.chunks(700_001) {
            writer.write_all(piece).await?;
        }
        writer.shutdown().await?;
        drop(writer);
        assert!(
            std::fs::read(&path)? == body,
            "the file holds other bytes than were written"
        );

        let mut reader = File::open(&path).await?.compat();
        let back = read_in_chunks::<4093>(&mut reader, usize::MAX).await?;
        assert!(back == body, "the file read back differs");
        Ok(())
    });
}

/// `tokio::io::copy` from a file's `Compat` into a socket's: a whole file served the way
/// tokio code serves one.
#[test]
fn tokio_copy_sends_a_file_over_a_socket() {
    in_files("compat-copy", async |scratch| {
        let body = pattern(1024 * 1024 + 5);
        let path = scratch.file("body", &body)?;
        let (stream, peer) = tcp_pair().await?;
        let receiver = baton::spawn(async move { read_all(&peer).await });
        let mut file = File::open(&path).await?.compat();
        let mut socket = stream.compat();
        let copied = tokio::io::copy(&mut file, &mut socket).await?;
        socket.shutdown().await?;
        drop(socket);
        assert_eq!(copied, body.len() as u64);
        let received = receiver.await.map_err(io::Error::other)??;
        assert!(received == body, "the peer received other bytes");
        Ok(())
    });
}

/// Lines through tokio's `AsyncBufReadExt` over a Baton `BufReader` of a file.
#[test]
fn lines_come_out_of_a_buffered_file() {
    in_files("compat-lines", async |scratch| {
        let path = scratch.file("lines", "one\ntwo\n\nfour")?;
        let reader = BufReader::new(File::open(&path).await?).compat();
        let mut lines = reader.lines();
        let mut got = Vec::new();
        while let Some(line) = lines.next_line().await? {
            got.push(line);
        }
        assert_eq!(got, ["one", "two", "", "four"]);
        Ok(())
    });
}

/// `poll_flush` flushes a Baton `BufWriter` itself, not only the `Compat`'s own buffer: the
/// peer sees the bytes before any shutdown, and the end of the stream after it.
#[test]
fn flush_reaches_through_a_buf_writer() {
    run(async {
        let (stream, peer) = tcp_pair().await?;
        let mut writer = BufWriter::new(stream).compat();
        writer.write_all(b"held ").await?;
        writer.write_all(b"back").await?;
        writer.flush().await?;
        assert_eq!(peer_reads(&peer, 9).await?, b"held back");
        writer.shutdown().await?;
        assert!(
            read_all(&peer).await?.is_empty(),
            "shutdown ends the stream"
        );
        Ok(())
    });
}

/// A read abandoned mid-wait stays in flight (M1); a write waits for it (M6) and goes out
/// once it ends; the read's bytes come next.
#[test]
fn an_abandoned_buffered_read_is_resumed_and_a_write_waits_for_it() {
    run(async {
        let (stream, peer) = tcp_pair().await?;
        let mut compat = BufReader::new(stream).compat();
        let mut buf = [0u8; 16];
        let abandoned =
            baton::time::timeout(Duration::from_millis(20), compat.read(&mut buf)).await;
        assert!(
            abandoned.is_err(),
            "nothing was sent, so the read times out"
        );
        assert!(format!("{compat:?}").contains("busy: true"));
        let (sent, _) = peer.write_all(b"abc").await;
        sent?;
        compat.write_all(b"xyz").await?;
        compat.flush().await?;
        let count = compat.read(&mut buf).await?;
        assert_eq!(&buf[..count], b"abc");
        assert_eq!(peer_reads(&peer, 3).await?, b"xyz");
        Ok(())
    });
}

/// tokio's `split` puts the two sides in two tasks: the writer, waiting on the reader's call
/// in flight (M6), is woken when that call ends, not only the reader.
#[test]
fn split_sides_in_two_tasks_both_wake() {
    run(async {
        let (ours, peer) = UnixStream::pair()?;
        let (mut reader, mut writer) = tokio::io::split(BufReader::new(ours).compat());
        let read = baton::spawn(async move {
            let mut buf = [0u8; 5];
            reader.read_exact(&mut buf).await?;
            io::Result::Ok(buf)
        });
        // Lets the read start and hold the stream before the write asks for it.
        baton::time::sleep(Duration::from_millis(20)).await;
        let write = baton::spawn(async move {
            writer.write_all(b"ping").await?;
            writer.flush().await
        });
        baton::time::sleep(Duration::from_millis(20)).await;
        let (sent, _) = peer.write_all(b"hello").await;
        sent?;
        let bound = Duration::from_secs(10);
        let read = baton::time::timeout(bound, read)
            .await
            .map_err(io::Error::other)?;
        assert_eq!(&read.map_err(io::Error::other)??, b"hello");
        baton::time::timeout(bound, write)
            .await
            .map_err(|_| io::Error::other("the waiting writer was never woken"))?
            .map_err(io::Error::other)??;
        assert_eq!(peer_reads(&peer, 4).await?, b"ping");
        Ok(())
    });
}

/// A write the file refuses (opened read-only) is an error, with the OS error std gives
/// (EBADF), from the write or from the flush that follows it — never a silent success.
#[test]
fn a_refused_file_write_is_an_error() {
    in_files("compat-refused", async |scratch| {
        let path = scratch.file("read-only", "x")?;
        let mut compat = File::open(&path).await?.compat();
        let outcome = match compat.write_all(b"more").await {
            Ok(()) => compat.flush().await,
            Err(error) => Err(error),
        };
        let error = outcome.expect_err("a read-only file takes no write");
        let std_error = std::io::Write::write(&mut std::fs::File::open(&path)?, b"more")
            .expect_err("std refuses it too");
        assert_eq!(error.raw_os_error(), std_error.raw_os_error());
        assert_eq!(error.kind(), std_error.kind());
        Ok(())
    });
}

/// An in-memory cursor reads to its end and takes writes, through tokio's helpers.
#[test]
fn a_cursor_reads_to_its_end() {
    run(async {
        let mut compat = Cursor::new(pattern(40_000)).compat();
        let mut back = Vec::new();
        compat.read_to_end(&mut back).await?;
        assert!(back == pattern(40_000));
        compat.write_all(b"tail").await?;
        compat.flush().await?;
        assert_eq!(
            compat.read(&mut [0u8; 4]).await?,
            0,
            "a write leaves the cursor at its end"
        );
        Ok(())
    });
}

/// A read takes from a file only what the caller asked for, so a write after it lands right
/// after those bytes, as with std's and tokio's files (no read-ahead skipped over).
#[test]
fn a_write_after_a_short_read_lands_after_the_bytes_read() {
    in_files("compat-read-then-write", async |scratch| {
        let path = scratch.file("mixed", "abcdefgh")?;
        let file = baton::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .await?;
        let mut compat = file.compat();
        let mut head = [0u8; 3];
        compat.read_exact(&mut head).await?;
        assert_eq!(&head, b"abc");
        compat.write_all(b"XYZ").await?;
        compat.flush().await?;
        let mut rest = Vec::new();
        compat.read_to_end(&mut rest).await?;
        assert_eq!(rest, b"gh");
        drop(compat);
        assert_eq!(std::fs::read(&path)?, b"abcXYZgh");
        Ok(())
    });
}

/// A write of more than a pipe holds, accepted by a child's stdin `Compat` that is dropped at
/// once (the tokio habit: `write_all`, then drop), still reaches the child whole: the drop
/// hands the rest of the write to a task.
#[test]
fn a_large_write_to_a_child_dropped_at_once_arrives_whole() {
    run(async {
        let mut child = baton::process::Command::new("wc")
            .arg("-c")
            .stdin(baton::process::Stdio::piped())
            .stdout(baton::process::Stdio::piped())
            .spawn()?;
        let mut stdin = child.stdin.take().expect("stdin was piped").compat();
        let mut stdout = child.stdout.take().expect("stdout was piped").compat();
        let body = pattern(300_000);
        let accepted = stdin.write(&body).await?;
        assert_eq!(accepted, body.len(), "up to 1 MiB is accepted at once");
        drop(stdin);
        let mut count = String::new();
        baton::time::timeout(Duration::from_secs(20), stdout.read_to_string(&mut count))
            .await
            .map_err(|_| io::Error::other("the child never got the whole body"))??;
        assert_eq!(count.trim(), "300000");
        assert!(child.wait().await?.success());
        Ok(())
    });
}

/// Inside a `block_on` nested in a task, where no task can run, a write through a file's
/// `Compat` and its flush still finish: the write runs in place, driven by the caller's polls,
/// never as a task the flush would wait for.
#[test]
fn a_write_in_a_block_on_nested_in_a_task_runs_in_place() {
    in_files("compat-nested", async |scratch| {
        let path = scratch.join("nested");
        let file = File::create(&path).await?;
        let wrote = baton::spawn(async move {
            baton::Handle::current().block_on(async move {
                let mut compat = file.compat();
                compat.write_all(b"in place").await?;
                compat.flush().await
            })
        });
        wrote.await.map_err(io::Error::other)??;
        assert_eq!(std::fs::read(&path)?, b"in place");
        Ok(())
    });
}

/// A stream whose read panics.
struct Panicking;

impl baton::io::AsyncRead for Panicking {
    async fn read<B: baton::io::IoBufMut>(&mut self, _buf: B) -> baton::io::BufResult<usize, B> {
        panic!("this stream's read panics")
    }

    async fn read_vectored<V: baton::io::IoVecBufMut>(
        &mut self,
        _bufs: V,
    ) -> baton::io::BufResult<usize, V> {
        panic!("this stream's read panics")
    }
}

/// A call that panics takes the stream with it: the panic reaches the caller once, and every
/// later call is an error saying the stream is gone, not a second panic from polling the
/// panicked call again.
#[test]
fn after_a_call_panicked_later_calls_fail_instead_of_panicking() {
    run(async {
        let mut compat = BufReader::new(Panicking).compat();
        let mut buf = [0u8; 4];
        let first = std::panic::AssertUnwindSafe(compat.read(&mut buf));
        let panicked = futures::FutureExt::catch_unwind(first).await;
        assert!(panicked.is_err(), "the stream's panic reaches the caller");
        let err = compat.read(&mut buf).await.expect_err("the stream is gone");
        assert!(err.to_string().contains("the stream is gone"), "{err}");
        Ok(())
    });
}

/// A write after `read_line` (which reads ahead through `poll_fill_buf`) lands right after the
/// line, on a file and on a cursor: the read-ahead is put back first, as tokio's `File` does.
#[test]
fn a_write_after_read_line_lands_right_after_the_line() {
    in_files("compat-read-line-then-write", async |scratch| {
        let mut body = b"first line\n".to_vec();
        body.extend(std::iter::repeat_n(b'.', 100_000));
        let path = scratch.file("lines", &body)?;
        let file = baton::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .await?;
        let mut compat = file.compat();
        let mut line = String::new();
        compat.read_line(&mut line).await?;
        compat.write_all(b"WRITE").await?;
        compat.shutdown().await?;
        drop(compat);
        let mut expected = body.clone();
        expected[11..16].copy_from_slice(b"WRITE");
        assert!(
            std::fs::read(&path)? == expected,
            "the write did not land right after the line"
        );

        let mut cursor = Cursor::new(body.clone()).compat();
        let mut line = String::new();
        cursor.read_line(&mut line).await?;
        cursor.write_all(b"WRITE").await?;
        let mut rest = Vec::new();
        cursor.read_to_end(&mut rest).await?;
        assert_eq!(
            rest.len(),
            body.len() - 16,
            "the cursor went on after the write"
        );
        Ok(())
    });
}
