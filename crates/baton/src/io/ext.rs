//! [`AsyncReadExt`] and [`AsyncWriteExt`]: the loops built on one read or one write.

use std::future::Future;
use std::io;

use baton_uring::{IoBuf, IoBufMut};

use super::{AsyncRead, AsyncWrite, BufResult};

/// How much [`AsyncReadExt::read_to_end`] grows a full buffer by, at least and at most.
const GROW_MIN: usize = 4 * 1024;
const GROW_MAX: usize = 256 * 1024;

/// Reading loops over any [`AsyncRead`].
pub trait AsyncReadExt: AsyncRead {
    /// Fills `buf`'s whole capacity (its initialized length becomes its capacity).
    ///
    /// # Errors
    ///
    /// `UnexpectedEof` if the stream ends first (the buffer then holds what was read), or the
    /// first error of a read. A buffer with no capacity succeeds at once.
    ///
    /// # Cancel safety
    ///
    /// Not cancel-safe: a drop between two reads loses which part was filled (for a socket the
    /// bytes of the read in flight stay with the socket; those already read are in the
    /// dropped buffer).
    fn read_exact<B: IoBufMut>(&mut self, buf: B) -> impl Future<Output = BufResult<(), B>> + Send
    where
        Self: Send,
    {
        async move {
            let total = buf.bytes_total();
            let mut buf = buf;
            let mut filled = 0;
            while filled < total {
                let (res, slice) = self.read(buf.slice(filled..)).await;
                buf = slice.into_inner();
                match res {
                    Ok(0) => {
                        let err = io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "the stream ended before the buffer was filled",
                        );
                        return (Err(err), buf);
                    }
                    Ok(n) => filled += n,
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                    Err(err) => return (Err(err), buf),
                }
            }
            (Ok(()), buf)
        }
    }

    /// Reads once into the room after `buf`'s contents (`bytes_init..bytes_total`): the buffer
    /// comes back holding its old contents followed by what was read, and the count says how
    /// much.
    ///
    /// # Errors
    ///
    /// `InvalidInput` when the buffer has no room after its contents, or the read's error.
    ///
    /// # Cancel safety
    ///
    /// As the reader's `read`.
    fn append<B: IoBufMut>(&mut self, buf: B) -> impl Future<Output = BufResult<usize, B>> + Send
    where
        Self: Send,
    {
        async move {
            let init = buf.bytes_init();
            if init >= buf.bytes_total() {
                let err = io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "append reads into the room after the buffer's contents and it has none: reserve capacity first",
                );
                return (Err(err), buf);
            }
            let (res, slice) = self.read(buf.slice(init..)).await;
            (res, slice.into_inner())
        }
    }

    /// Reads until the end of the stream, appending to `buf` (growing it as needed), and
    /// returns how many bytes were appended.
    ///
    /// # Errors
    ///
    /// The first error of a read; the buffer then holds everything read so far.
    ///
    /// # Cancel safety
    ///
    /// Not cancel-safe: what was read so far is in the dropped buffer.
    fn read_to_end(
        &mut self,
        buf: Vec<u8>,
    ) -> impl Future<Output = BufResult<usize, Vec<u8>>> + Send
    where
        Self: Send,
    {
        async move {
            let start = buf.len();
            let mut buf = buf;
            loop {
                if buf.len() == buf.capacity() {
                    buf.reserve(buf.capacity().clamp(GROW_MIN, GROW_MAX));
                }
                let (res, back) = self.append(buf).await;
                buf = back;
                match res {
                    Ok(0) => return (Ok(buf.len() - start), buf),
                    Ok(_) => {}
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                    Err(err) => return (Err(err), buf),
                }
            }
        }
    }

    /// Reads until the end of the stream, appending to `string`, and returns how many bytes
    /// were appended.
    ///
    /// # Errors
    ///
    /// `InvalidData` when what was read is not UTF-8 (the string is then unchanged), or the
    /// first error of a read (the string then holds what was read so far, if it is UTF-8).
    ///
    /// # Cancel safety
    ///
    /// Not cancel-safe, as [`read_to_end`](AsyncReadExt::read_to_end).
    fn read_to_string(
        &mut self,
        string: String,
    ) -> impl Future<Output = BufResult<usize, String>> + Send
    where
        Self: Send,
    {
        async move {
            let start = string.len();
            let (res, bytes) = self.read_to_end(string.into_bytes()).await;
            match String::from_utf8(bytes) {
                Ok(string) => (res, string),
                Err(invalid) => {
                    let mut bytes = invalid.into_bytes();
                    bytes.truncate(start);
                    // The first `start` bytes were the caller's `String`, so UTF-8.
                    let string = String::from_utf8(bytes)
                        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
                    let err = io::Error::new(
                        io::ErrorKind::InvalidData,
                        "the stream did not contain valid UTF-8",
                    );
                    (Err(err), string)
                }
            }
        }
    }
}

impl<R: AsyncRead + ?Sized> AsyncReadExt for R {}

/// Writing loops over any [`AsyncWrite`].
pub trait AsyncWriteExt: AsyncWrite {
    /// Writes all of `buf`'s initialized bytes, continuing after short writes. An empty buffer
    /// writes nothing and succeeds.
    ///
    /// # Errors
    ///
    /// `WriteZero` if the writer accepts no bytes, or the first error of a write.
    ///
    /// # Cancel safety
    ///
    /// Not cancel-safe: each write is retained, but a drop between two writes leaves the rest
    /// unwritten and the caller cannot learn how much went out. Await it to completion.
    fn write_all<B: IoBuf>(&mut self, buf: B) -> impl Future<Output = BufResult<(), B>> + Send
    where
        Self: Send,
    {
        async move {
            let total = buf.bytes_init();
            let mut buf = buf;
            let mut written = 0;
            while written < total {
                let (res, slice) = self.write(buf.slice(written..total)).await;
                buf = slice.into_inner();
                match res {
                    Ok(0) => return (Err(write_zero()), buf),
                    Ok(n) => written += n,
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                    Err(err) => return (Err(err), buf),
                }
            }
            (Ok(()), buf)
        }
    }

    /// Writes all of every buffer's initialized bytes, in order: vectored writes while whole
    /// buffers go out, single writes for the rest of one a short write cut.
    ///
    /// # Errors
    ///
    /// As [`write_all`](AsyncWriteExt::write_all).
    ///
    /// # Cancel safety
    ///
    /// Not cancel-safe, as [`write_all`](AsyncWriteExt::write_all).
    fn write_vectored_all<B: IoBuf>(
        &mut self,
        bufs: Vec<B>,
    ) -> impl Future<Output = BufResult<(), Vec<B>>> + Send
    where
        Self: Send,
    {
        async move {
            let mut bufs = bufs;
            // Buffers before `front` are written; `offset` bytes of `bufs[front]` are too.
            let mut front = 0;
            let mut offset = 0;
            loop {
                while front < bufs.len() && offset >= bufs[front].bytes_init() {
                    front += 1;
                    offset = 0;
                }
                if front == bufs.len() {
                    return (Ok(()), bufs);
                }
                let written = if offset > 0 {
                    // Finish the buffer a short write cut, on its own.
                    let cut = std::mem::replace(&mut bufs[front], B::placeholder());
                    let end = cut.bytes_init();
                    let (res, slice) = self.write(cut.slice(offset..end)).await;
                    bufs[front] = slice.into_inner();
                    res
                } else {
                    let rest = bufs.split_off(front);
                    let (res, rest) = self.write_vectored(rest).await;
                    bufs.extend(rest);
                    res
                };
                match written {
                    Ok(0) => return (Err(write_zero()), bufs),
                    Ok(mut n) => {
                        while n > 0 && front < bufs.len() {
                            let left = bufs[front].bytes_init() - offset;
                            if n < left {
                                offset += n;
                                n = 0;
                            } else {
                                n -= left;
                                front += 1;
                                offset = 0;
                            }
                        }
                    }
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                    Err(err) => return (Err(err), bufs),
                }
            }
        }
    }
}

impl<W: AsyncWrite + ?Sized> AsyncWriteExt for W {}

pub(crate) fn write_zero() -> io::Error {
    io::Error::new(io::ErrorKind::WriteZero, "the writer accepted no bytes")
}
