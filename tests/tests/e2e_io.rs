//! End to end: `baton::io` over real sockets and files — the read convention, the extension
//! loops, buffered reading (cancel-safe `read_line`), split halves, the sequential file view,
//! and every buffer type.

use std::io;
use std::time::Duration;

use baton::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter, IoBuf};
use baton::net::{TcpListener, TcpStream, UnixStream};
use baton_tests::join;

fn rt() -> baton::Runtime {
    baton::Runtime::new().expect("runtime")
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

#[test]
fn a_read_fills_from_the_beginning_and_its_length_is_the_count() -> io::Result<()> {
    rt().block_on(async {
        let (a, b) = UnixStream::pair()?;
        a.write_all(&b"abcdef"[..]).await.0?;
        let (n, buf) = b.read(vec![b'x'; 4]).await;
        assert_eq!((n?, &buf[..]), (4, &b"abcd"[..]), "a full vec is read over");
        let mut partly = Vec::with_capacity(8);
        partly.extend_from_slice(b"old");
        let (n, buf) = b.read(partly).await;
        assert_eq!((n?, &buf[..]), (2, &b"ef"[..]), "old contents are not kept");
        a.write_all("gh").await.0?;
        let mut kept = Vec::with_capacity(8);
        kept.extend_from_slice(b"old");
        let (n, buf) = (&b).append(kept).await;
        assert_eq!(
            (n?, &buf[..]),
            (2, &b"oldgh"[..]),
            "append reads after the contents"
        );
        let (n, _) = b.read(Vec::new()).await;
        let err = n.expect_err("no capacity");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("Vec::with_capacity"), "{err}");
        Ok(())
    })
}

#[test]
fn every_buffer_type_goes_through_a_socket() -> io::Result<()> {
    rt().block_on(async {
        let (a, b) = UnixStream::pair()?;
        a.write_all(Box::<[u8]>::from(&b"box"[..])).await.0?;
        a.write_all(*b"arr").await.0?;
        a.write_all(String::from("str")).await.0?;
        a.write_all(bytes::Bytes::from_static(b"byt")).await.0?;
        a.write_all(b"sli-ced".to_vec().slice(4..)).await.0?;
        a.write_all(b"lit").await.0?;
        let (res, arr) = (&b).read_exact([0u8; 6]).await;
        res?;
        assert_eq!(&arr, b"boxarr");
        let (res, boxed) = (&b).read_exact(Box::<[u8]>::from(vec![0; 3])).await;
        res?;
        assert_eq!(&boxed[..], b"str");
        let (res, bytes) = (&b).read_exact(bytes::BytesMut::with_capacity(6)).await;
        res?;
        assert_eq!(&bytes[..], b"bytced");
        let (res, literal) = (&b).read_exact(vec![0u8; 3]).await;
        res?;
        assert_eq!(literal, b"lit", "a byte-string literal is written as it is");
        Ok(())
    })
}

#[test]
fn write_all_and_write_vectored_all_survive_short_writes_and_read_exact_fills_the_capacity()
-> io::Result<()> {
    rt().block_on(async {
        let (a, b) = UnixStream::pair()?;
        let big = pattern(3 * 256 * 1024);
        let parts: Vec<Vec<u8>> = big.chunks(300 * 1024).map(<[u8]>::to_vec).collect();
        let reader = baton::spawn(async move {
            let (res, got) = (&b).read_exact(Vec::with_capacity(2 * 768 * 1024)).await;
            res.map(|()| got)
        });
        let (res, back) = a.write_all(big.clone()).await;
        res?;
        assert_eq!(back, big, "the buffer comes back whole");
        let (res, back) = (&a).write_vectored_all(parts.clone()).await;
        res?;
        assert_eq!(back, parts);
        let got = reader.await.map_err(io::Error::other)??;
        assert_eq!(&got[..big.len()], &big[..]);
        assert_eq!(&got[big.len()..], &big[..]);
        a.shutdown().await
    })
}

#[test]
fn read_exact_past_the_end_is_unexpected_eof_and_read_to_string_checks_utf8() -> io::Result<()> {
    rt().block_on(async {
        let (a, b) = UnixStream::pair()?;
        a.write_all(&b"abc"[..]).await.0?;
        a.shutdown().await?;
        let (res, got) = (&b).read_exact(Vec::with_capacity(8)).await;
        assert_eq!(
            res.expect_err("too short").kind(),
            io::ErrorKind::UnexpectedEof
        );
        assert_eq!(got, b"abc", "what was read is kept");
        let (a, b) = UnixStream::pair()?;
        a.write_all(vec![b'o', b'k', 0xff]).await.0?;
        a.shutdown().await?;
        let (res, text) = (&b).read_to_string(String::from("pre")).await;
        assert_eq!(
            res.expect_err("not UTF-8").kind(),
            io::ErrorKind::InvalidData
        );
        assert_eq!(text, "pre", "unchanged on invalid UTF-8");
        let mut cursor = std::io::Cursor::new(b"tail".to_vec());
        let (res, text) = cursor.read_to_string(String::from("head ")).await;
        assert_eq!((res?, text.as_str()), (4, "head tail"));
        Ok(())
    })
}

#[test]
fn a_read_line_cut_off_by_a_timeout_loses_no_byte() -> io::Result<()> {
    use std::io::Write;
    let (ours, mut theirs) = std::os::unix::net::UnixStream::pair()?;
    theirs.write_all(b"hel")?;
    // The rest of the line is sent only once the read was cut off, so the cut is certain.
    let (cut_off, was_cut_off) = std::sync::mpsc::channel::<()>();
    let writer = std::thread::spawn(move || -> io::Result<()> {
        was_cut_off.recv().map_err(io::Error::other)?;
        theirs.write_all(b"lo\nworld\n")?;
        Ok(())
    });
    rt().block_on(async {
        let mut reader = BufReader::new(UnixStream::from_std(ours)?);
        let mut line = String::new();
        let cut =
            baton::time::timeout(Duration::from_millis(20), reader.read_line(&mut line)).await;
        assert!(cut.is_err(), "the line was not complete in time");
        cut_off.send(()).map_err(io::Error::other)?;
        assert!(
            line.is_empty(),
            "nothing is appended before the line is whole"
        );
        assert_eq!(reader.read_line(&mut line).await?, 6);
        assert_eq!(
            line, "hello\n",
            "the bytes read before the timeout are still there"
        );
        let mut lines = reader.lines();
        assert_eq!(lines.next_line().await?.as_deref(), Some("world"));
        Ok::<_, io::Error>(())
    })?;
    writer
        .join()
        .map_err(|_| io::Error::other("writer panicked"))?
}

#[test]
fn halves_carry_a_read_and_a_write_in_flight_at_once_and_reunite() -> io::Result<()> {
    rt().block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let client = TcpStream::connect(addr).await?;
        let (server, _) = listener.accept().await?;
        // Borrowed halves: the read waits while the write goes out.
        let (mut reader, mut writer) = server.split();
        let read = async { reader.read(Vec::with_capacity(16)).await };
        let write = async {
            writer.write_all(&b"ping"[..]).await.0?;
            let (res, got) = (&client).read_exact(Vec::with_capacity(4)).await;
            res?;
            let (res, _) = client.write_all(got).await;
            res
        };
        let ((n, got), sent) = join(read, write).await;
        sent?;
        assert_eq!(&got[..n?], b"ping");
        // Owned halves move into tasks and come back together.
        let (mut read_half, mut write_half) = server.into_split();
        let echo = baton::spawn(async move {
            let (res, got) = read_half.read(Vec::with_capacity(16)).await;
            res.map(|n| (got[..n].to_vec(), read_half))
        });
        client.write_all(&b"owned"[..]).await.0?;
        let (got, read_half) = echo.await.map_err(io::Error::other)??;
        assert_eq!(got, b"owned");
        write_half.write_all(&b"back"[..]).await.0?;
        let stream = read_half.reunite(write_half).map_err(io::Error::other)?;
        let (res, got) = (&client).read_exact(Vec::with_capacity(4)).await;
        res?;
        assert_eq!(got, b"back");
        let (other_read, _other_write) = TcpStream::connect(addr).await?.into_split();
        let (_, mine) = stream.into_split();
        assert!(
            other_read.reunite(mine).is_err(),
            "halves of two streams do not reunite"
        );
        Ok(())
    })
}

#[test]
fn a_file_is_a_sequential_stream_with_a_cursor_and_buffers_write_through() -> io::Result<()> {
    let path = std::env::temp_dir().join(format!("baton-e2e-io-{}", std::process::id()));
    rt().block_on(async {
        let mut file = baton_tests::create_read_write(&path).await?;
        let mut out = BufWriter::with_capacity(16, &mut file);
        for word in ["one ", "two ", "three ", "four"] {
            out.write_all(word).await.0?;
        }
        out.flush().await?;
        drop(out);
        assert_eq!(file.stream_position(), 18);
        file.seek(std::io::SeekFrom::Start(4))?;
        let (res, got) = file.read_to_end(Vec::new()).await;
        res?;
        assert_eq!(got, b"two three four");
        let (a, b) = UnixStream::pair()?;
        file.seek(std::io::SeekFrom::Start(0))?;
        let mut sink = &a;
        assert_eq!(baton::io::copy(&mut file, &mut sink).await?, 18);
        AsyncWrite::shutdown(&mut sink).await?;
        let (res, got) = (&b).read_to_end(Vec::new()).await;
        res?;
        assert_eq!(got, b"one two three four");
        baton::fs::remove_file(&path).await
    })
}

/// A writer that takes at most `chunk` bytes a call and fails the call after its first `ok`
/// calls once (a transient error, as `ENOSPC` on a file may be); every byte it took is in
/// `taken`.
struct Flaky {
    taken: Vec<u8>,
    chunk: usize,
    ok: usize,
}

impl AsyncWrite for Flaky {
    async fn write<B: IoBuf>(&mut self, buf: B) -> baton::io::BufResult<usize, B> {
        if self.ok == 0 {
            self.ok = usize::MAX;
            return (Err(io::Error::other("transient")), buf);
        }
        self.ok -= 1;
        // SAFETY: `IoBuf`'s contract: the first `bytes_init()` bytes at `stable_ptr()` are
        // initialized and stay valid while `buf` is borrowed here.
        let bytes = unsafe { std::slice::from_raw_parts(buf.stable_ptr(), buf.bytes_init()) };
        let n = bytes.len().min(self.chunk);
        self.taken.extend_from_slice(&bytes[..n]);
        (Ok(n), buf)
    }

    async fn write_vectored<V: baton::io::IoVecBuf>(
        &mut self,
        bufs: V,
    ) -> baton::io::BufResult<usize, V> {
        (Err(io::Error::other("not used")), bufs)
    }

    async fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    async fn shutdown(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// After a write error partway through a flush, a retry sends only what was not written yet
/// (std's `BufWriter` drains the written prefix the same way): no byte twice.
#[test]
fn buf_writer_retry_after_a_partial_flush_error_sends_each_byte_once() -> io::Result<()> {
    rt().block_on(async {
        let flaky = Flaky {
            taken: Vec::new(),
            chunk: 3,
            ok: 1,
        };
        let mut writer = BufWriter::with_capacity(64, flaky);
        writer.write_all(&b"abcdefgh"[..]).await.0?;
        writer.flush().await.expect_err("the second call fails");
        writer.flush().await?;
        assert_eq!(writer.into_inner().taken, b"abcdefgh");
        Ok(())
    })
}

/// `baton::io::prelude::*` is the one import halves need for `read`/`write`.
mod prelude_only {
    use baton::io::prelude::*;

    #[test]
    fn the_prelude_brings_read_and_write_to_halves() -> std::io::Result<()> {
        super::rt().block_on(async {
            let (a, b) = baton::net::UnixStream::pair()?;
            let (_, mut w) = a.into_split();
            let (mut r, _) = b.into_split();
            let (res, _) = w.write(b"hi".to_vec()).await;
            assert_eq!(res?, 2);
            let (res, got) = r.read(Vec::with_capacity(4)).await;
            assert_eq!(&got[..res?], b"hi");
            Ok(())
        })
    }
}
