//! Owned-buffer I/O: the buffer traits, the stream traits and their helpers, buffered readers
//! and writers, and [`copy`].
//!
//! * **Buffers.** [`IoBuf`] (written from: pointer, initialized length) and [`IoBufMut`] (read
//!   into: pointer, capacity, `set_init`), for `Vec<u8>`, `Box<[u8]>`, `[u8; N]`,
//!   `&'static [u8]`, `&'static str`, `String` (read-only), and with the feature `bytes`
//!   `bytes::Bytes`/`BytesMut`. [`IoBuf::slice`] gives a [`Slice`] of a range that hands the
//!   whole buffer back ([`Slice::into_inner`]). Every call takes the buffer by value and hands
//!   it back with the result ([`BufResult`]), because the kernel may use it until the request
//!   is done, even if the future is dropped.
//! * **One read convention.** A read fills the buffer **from its beginning**, up to its
//!   capacity, and sets its initialized length to exactly the count: after
//!   `let (n, buf) = stream.read(Vec::with_capacity(4096)).await`, `buf.len()` is `n`. Nothing
//!   depends on whether the buffer already held data; [`AsyncReadExt::append`] reads into the
//!   room after the existing bytes instead, and [`AsyncReadExt::read_exact`] fills the whole
//!   capacity.
//! * **Streams.** [`AsyncRead`] and [`AsyncWrite`], with [`AsyncReadExt`] and
//!   [`AsyncWriteExt`], are implemented by `TcpStream`, `UnixStream` (and `&` them), their
//!   halves, `fs::File` (a cursor-based sequential view), [`BufReader`], [`BufWriter`] and
//!   [`Cursor<Vec<u8>>`](Cursor). Their futures are `Send`, so generic code over a stream can
//!   be spawned.
//! * **Readiness.** [`PollRead`] and [`PollWrite`] drive a socket ([`PollIo`]: a stream or a
//!   half) the way readiness-based runtimes do (borrowed buffers, non-blocking
//!   calls, waits for readable or writable on the ring): what adapters to poll-based traits
//!   (`baton-compat`) use to avoid copying through owned buffers.
//! * **Cancel safety.** Socket reads are cancel-safe: a read dropped after the kernel received
//!   bytes for it leaves them to the next read. [`BufReader::read_line`] keeps that promise: a
//!   dropped `read_line` leaves every byte in the reader's buffer. Writes are retained, not
//!   cancelled. See `docs/io.md`.

mod buf_reader;
mod buf_writer;
mod copy;
mod cursor;
mod ext;
mod poll_io;
mod traits;

pub use baton_uring::{IoBuf, IoBufMut, IoVecBuf, IoVecBufMut, Slice};
pub use buf_reader::{BufReader, Lines};
pub use buf_writer::BufWriter;
pub use copy::copy;
pub use ext::{AsyncReadExt, AsyncWriteExt};
pub(crate) use poll_io::RingStart;
pub use poll_io::{
    PollIo, PollRead, PollWrite, ReadOwned, Readiness, ShutdownWrite, WriteAllOwned,
};
pub use traits::{AsyncRead, AsyncWrite, BufResult};

/// The stream traits and their extensions in one import: `use baton::io::prelude::*;` brings
/// `read`/`write` (and `read_exact`, `write_all`, ...) into scope on every stream, its halves,
/// files and buffered wrappers (tokio users know it as `tokio::io::AsyncReadExt` bringing
/// `read`; here `read` itself is on [`AsyncRead`]).
pub mod prelude {
    pub use super::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
}

/// The in-memory stream of tests: std's `Cursor`, re-exported because this module implements
/// [`AsyncRead`] and [`AsyncWrite`] for `Cursor<Vec<u8>>` (the same type, so code naming
/// `std::io::Cursor` is unaffected).
pub use std::io::Cursor;

/// A vectored write's result, with the ring's refusal of buffers that hold no byte turned into
/// `Ok(0)`, as std's `write_vectored` of empty buffers gives. The check runs only on an
/// `InvalidInput`, so a write that went through costs nothing more.
pub(crate) fn empty_write_is_zero<V: IoVecBuf>(
    result: std::io::Result<usize>,
    bufs: &V,
) -> std::io::Result<usize> {
    match result {
        Err(err)
            if err.kind() == std::io::ErrorKind::InvalidInput
                && bufs.io_slices().iter().all(|slice| slice.is_empty()) =>
        {
            Ok(0)
        }
        other => other,
    }
}
