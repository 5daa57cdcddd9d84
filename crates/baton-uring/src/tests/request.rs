//! Tests of `request.rs`.

use crate::buf::IoVecBufMut;
use crate::request::{Request, Vectored};

/// Every registration and completion moves a `Request`; the largest common one is a read (a
/// descriptor, a buffer and an offset), and the vectored variants keep their buffers behind a
/// box so they are no larger.
#[test]
fn request_stays_small_with_vectored_buffers_boxed() {
    let read = std::mem::size_of::<crate::buf::RawBuf>() + 3 * std::mem::size_of::<usize>();
    assert!(
        std::mem::size_of::<Request>() <= read,
        "{} bytes",
        std::mem::size_of::<Request>()
    );
}

#[test]
fn vectored_iovecs_point_into_their_own_buffers() {
    let bufs = vec![Vec::<u8>::with_capacity(3), Vec::with_capacity(5)];
    let ptrs: Vec<*const u8> = bufs.iter().map(|b| b.as_ptr()).collect();
    let vectored = Vectored::over(IoVecBufMut::into_raw_bufs_mut(bufs), true);
    for (iov, (buf, ptr)) in vectored
        .iovecs
        .0
        .iter()
        .zip(vectored.bufs.iter().zip(&ptrs))
    {
        assert_eq!(iov.iov_base.cast_const(), buf.ptr().cast_const().cast());
        assert_eq!(iov.iov_base.cast_const(), ptr.cast());
        assert_eq!(
            iov.iov_len,
            buf.total(),
            "a read's iovec spans the capacity"
        );
    }
    let moved = *vectored;
    assert_eq!(moved.iovecs.0[1].iov_base.cast_const(), ptrs[1].cast());
}
