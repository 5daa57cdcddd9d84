//! [`AsyncRead`] and [`AsyncWrite`] for `std::io::Cursor<Vec<u8>>`: an in-memory stream, for
//! tests and for code that wants a reader or writer without a socket. Every call completes at
//! once.

use std::future::{Future, ready};
use std::io::{self, Cursor};

use baton_uring::{IoBuf, IoBufMut, IoVecBuf, IoVecBufMut};

use super::{AsyncRead, AsyncWrite, BufResult};

/// The bytes after the cursor's position.
fn remaining(cursor: &Cursor<Vec<u8>>) -> &[u8] {
    let data = cursor.get_ref();
    let at = usize::try_from(cursor.position()).map_or(data.len(), |p| p.min(data.len()));
    &data[at..]
}

/// The initialized bytes of `buf`.
pub(crate) fn initialized<B: IoBuf>(buf: &B) -> &[u8] {
    // SAFETY: the IoBuf contract: `stable_ptr` is valid for `bytes_init` initialized bytes.
    unsafe { std::slice::from_raw_parts(buf.stable_ptr(), buf.bytes_init()) }
}

/// Copies `src` into `buf` from its beginning, as a read would, and returns the count.
pub(crate) fn fill<B: IoBufMut>(buf: &mut B, src: &[u8]) -> usize {
    let n = src.len().min(buf.bytes_total());
    // SAFETY: `buf` is valid for writes of `bytes_total() >= n` bytes (IoBufMut contract) and
    // does not overlap `src`, which the caller borrows while `buf` is borrowed mutably; the
    // first `n` bytes are initialized by the copy.
    unsafe {
        std::ptr::copy_nonoverlapping(src.as_ptr(), buf.stable_mut_ptr(), n);
        buf.set_init(n);
    }
    n
}

impl AsyncRead for Cursor<Vec<u8>> {
    fn read<B: IoBufMut>(&mut self, buf: B) -> impl Future<Output = BufResult<usize, B>> + Send {
        let mut buf = buf;
        let n = fill(&mut buf, remaining(self));
        self.set_position(self.position() + n as u64);
        ready((Ok(n), buf))
    }

    fn read_vectored<V: IoVecBufMut>(
        &mut self,
        bufs: V,
    ) -> impl Future<Output = BufResult<usize, V>> + Send {
        let mut bufs = bufs;
        let n = bufs.fill_from(remaining(self));
        self.set_position(self.position() + n as u64);
        ready((Ok(n), bufs))
    }
}

impl AsyncWrite for Cursor<Vec<u8>> {
    fn write<B: IoBuf>(&mut self, buf: B) -> impl Future<Output = BufResult<usize, B>> + Send {
        let res = io::Write::write(self, initialized(&buf));
        ready((res, buf))
    }

    fn write_vectored<V: IoVecBuf>(
        &mut self,
        bufs: V,
    ) -> impl Future<Output = BufResult<usize, V>> + Send {
        let slices: Vec<io::IoSlice<'_>> =
            bufs.io_slices().into_iter().map(io::IoSlice::new).collect();
        let res = io::Write::write_vectored(self, &slices);
        drop(slices);
        ready((res, bufs))
    }

    fn flush(&mut self) -> impl Future<Output = io::Result<()>> + Send {
        ready(Ok(()))
    }

    fn shutdown(&mut self) -> impl Future<Output = io::Result<()>> + Send {
        ready(Ok(()))
    }
}
