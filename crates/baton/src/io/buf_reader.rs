//! [`BufReader`]: a reader with an owned internal buffer, for lines and small reads.

use std::future::Future;
use std::io;

use baton_uring::{IoBuf, IoBufMut, IoVecBuf, IoVecBufMut};

use super::cursor::fill;
use super::{AsyncRead, AsyncWrite, BufResult};

/// The internal buffer's default capacity.
const DEFAULT_CAPACITY: usize = 8 * 1024;

/// Buffers a reader: reads go to the inner reader in chunks of the buffer's capacity, and
/// [`fill_buf`](BufReader::fill_buf)/[`consume`](BufReader::consume),
/// [`read_line`](BufReader::read_line), [`read_until`](BufReader::read_until) and
/// [`lines`](BufReader::lines) work on what it holds. It is also an [`AsyncWrite`] when the
/// inner reader is one (writes pass through).
///
/// # Cancel safety
///
/// No byte the reader has buffered is lost when a future of it is dropped: a line is taken out
/// of the buffer only once it is complete, and more data is read into a separate chunk while
/// buffered bytes wait. (A read in flight on a socket when its future is dropped leaves its
/// bytes to the socket's next read, which this reader then makes.)
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Runtime::new()?;
/// rt.block_on(async {
///     let text = std::io::Cursor::new(b"first\nsecond\n".to_vec());
///     let mut lines = baton::io::BufReader::new(text).lines();
///     assert_eq!(lines.next_line().await?.as_deref(), Some("first"));
///     assert_eq!(lines.next_line().await?.as_deref(), Some("second"));
///     assert_eq!(lines.next_line().await?, None);
///     Ok(())
/// })
/// # }
/// ```
///
/// Invariant: `pos <= buf.len()` when `buf` is there; `buf[pos..]` are the buffered bytes not
/// consumed yet. `buf` is `None` only after a read into it was dropped in flight (the kernel
/// owned it then), and only while it held no unconsumed byte.
#[derive(Debug)]
pub struct BufReader<R> {
    inner: R,
    buf: Option<Vec<u8>>,
    pos: usize,
    /// Where more data is read while `buf` holds unconsumed bytes.
    chunk: Option<Vec<u8>>,
    capacity: usize,
}

impl<R: AsyncRead> BufReader<R> {
    /// A reader with an 8 KiB buffer.
    pub fn new(inner: R) -> BufReader<R> {
        BufReader::with_capacity(DEFAULT_CAPACITY, inner)
    }

    /// A reader with a buffer of `capacity` bytes (at least 1).
    pub fn with_capacity(capacity: usize, inner: R) -> BufReader<R> {
        let capacity = capacity.max(1);
        BufReader {
            inner,
            buf: Some(Vec::with_capacity(capacity)),
            pos: 0,
            chunk: None,
            capacity,
        }
    }

    /// The inner reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The inner reader, mutably (reading from it directly skips the buffered bytes).
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The inner reader; buffered bytes are lost.
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// The bytes buffered and not consumed yet.
    pub fn buffer(&self) -> &[u8] {
        self.buf.as_deref().map_or(&[], |buf| &buf[self.pos..])
    }

    /// Marks `n` buffered bytes as consumed (at most what is buffered).
    pub fn consume(&mut self, n: usize) {
        let buffered = self.buffer().len();
        self.pos += n.min(buffered);
    }

    /// The buffered bytes, reading more from the inner reader first when none are left; an
    /// empty slice means the end of the stream.
    ///
    /// # Errors
    ///
    /// The inner reader's error.
    ///
    /// # Cancel safety
    ///
    /// As cancel-safe as the inner reader's `read`: it reads only when nothing is buffered, so
    /// a drop loses no buffered byte, and over a socket (whose reads are cancel-safe) the bytes
    /// of a read dropped in flight come first from the next one.
    pub async fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.buffer().is_empty() {
            self.refill().await?;
        }
        Ok(self.buffer())
    }

    /// Reads into an emptied buffer (nothing unconsumed can be lost with it); returns the count.
    async fn refill(&mut self) -> io::Result<usize> {
        let mut buf = self
            .buf
            .take()
            .unwrap_or_else(|| Vec::with_capacity(self.capacity));
        buf.clear();
        self.pos = 0;
        let (res, buf) = self.inner.read(buf).await;
        self.buf = Some(buf);
        res
    }

    /// Reads more until the buffered bytes hold `byte` or the stream ends, consuming nothing;
    /// returns how many buffered bytes make the result: up to and including `byte`, or all of
    /// them at the end of the stream. Cancel-safe: what was read stays buffered.
    async fn buffer_until(&mut self, byte: u8) -> io::Result<usize> {
        let mut searched = 0;
        loop {
            if let Some(at) = self.buffer()[searched..].iter().position(|&b| b == byte) {
                return Ok(searched + at + 1);
            }
            searched = self.buffer().len();
            if self.read_more().await? == 0 {
                return Ok(self.buffer().len());
            }
        }
    }

    /// Reads more after the unconsumed bytes, without giving them to the kernel: through a
    /// separate chunk, appended afterwards. Returns how many bytes came (0: end of stream).
    async fn read_more(&mut self) -> io::Result<usize> {
        if self.buffer().is_empty() {
            return self.refill().await;
        }
        let chunk = self
            .chunk
            .take()
            .unwrap_or_else(|| Vec::with_capacity(self.capacity));
        let (res, mut chunk) = self.inner.read(chunk).await;
        let n = res?;
        if let Some(buf) = &mut self.buf {
            buf.drain(..self.pos);
            self.pos = 0;
            buf.extend_from_slice(&chunk);
        }
        chunk.clear();
        self.chunk = Some(chunk);
        Ok(n)
    }

    /// Reads until `byte` (included) or the end of the stream, appending to `out`, and returns
    /// how many bytes were appended (0 at the end of the stream).
    ///
    /// # Errors
    ///
    /// The inner reader's error; `out` is then unchanged and the bytes stay buffered.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: bytes leave the buffer only together with the complete result.
    pub async fn read_until(&mut self, byte: u8, out: &mut Vec<u8>) -> io::Result<usize> {
        let end = self.buffer_until(byte).await?;
        out.extend_from_slice(&self.buffer()[..end]);
        self.consume(end);
        Ok(end)
    }

    /// Reads one line — up to and including `\n`, or to the end of the stream — appending it to
    /// `line`, and returns how many bytes were appended (0 at the end of the stream).
    ///
    /// # Errors
    ///
    /// `InvalidData` when the line is not UTF-8 (it is consumed, as `std` does, and `line` is
    /// unchanged), or the inner reader's error.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: a dropped `read_line` loses no byte — they stay in the reader's buffer
    /// until a whole line is there, and `line` is appended to only then.
    pub async fn read_line(&mut self, line: &mut String) -> io::Result<usize> {
        let end = self.buffer_until(b'\n').await?;
        let appended = match std::str::from_utf8(&self.buffer()[..end]) {
            Ok(text) => {
                line.push_str(text);
                Ok(end)
            }
            Err(_) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the line is not valid UTF-8",
            )),
        };
        self.consume(end);
        appended
    }

    /// The stream's lines, without their `\n` (or `\r\n`).
    pub fn lines(self) -> Lines<R> {
        Lines { reader: self }
    }
}

/// The lines of a [`BufReader`] ([`BufReader::lines`]).
#[derive(Debug)]
pub struct Lines<R> {
    reader: BufReader<R>,
}

impl<R: AsyncRead> Lines<R> {
    /// The next line without its line ending, or `None` at the end of the stream.
    ///
    /// # Errors
    ///
    /// As [`BufReader::read_line`].
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as [`BufReader::read_line`].
    pub async fn next_line(&mut self) -> io::Result<Option<String>> {
        let mut line = String::new();
        if self.reader.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        if line.ends_with('\n') {
            line.pop();
            if line.ends_with('\r') {
                line.pop();
            }
        }
        Ok(Some(line))
    }

    /// The reader back, with whatever it still buffers.
    pub fn into_inner(self) -> BufReader<R> {
        self.reader
    }
}

impl<R: AsyncRead + Send> AsyncRead for BufReader<R> {
    async fn read<B: IoBufMut>(&mut self, buf: B) -> BufResult<usize, B> {
        // A read as large as the buffer skips it when nothing is buffered.
        if self.buffer().is_empty() && buf.bytes_total() >= self.capacity {
            return self.inner.read(buf).await;
        }
        let mut buf = buf;
        if let Err(err) = self.fill_buf().await {
            return (Err(err), buf);
        }
        let n = fill(&mut buf, self.buffer());
        self.consume(n);
        (Ok(n), buf)
    }

    async fn read_vectored<V: IoVecBufMut>(&mut self, bufs: V) -> BufResult<usize, V> {
        let mut bufs = bufs;
        if let Err(err) = self.fill_buf().await {
            return (Err(err), bufs);
        }
        let n = bufs.fill_from(self.buffer());
        self.consume(n);
        (Ok(n), bufs)
    }
}

impl<R: AsyncWrite + Send> AsyncWrite for BufReader<R> {
    fn write<B: IoBuf>(&mut self, buf: B) -> impl Future<Output = BufResult<usize, B>> + Send {
        self.inner.write(buf)
    }

    fn write_vectored<V: IoVecBuf>(
        &mut self,
        bufs: V,
    ) -> impl Future<Output = BufResult<usize, V>> + Send {
        self.inner.write_vectored(bufs)
    }

    fn flush(&mut self) -> impl Future<Output = io::Result<()>> + Send {
        self.inner.flush()
    }

    fn shutdown(&mut self) -> impl Future<Output = io::Result<()>> + Send {
        self.inner.shutdown()
    }
}
