//! Tests of `request.rs`.

use crate::request::{Request, Vectored};

/// Every registration and completion moves an `Request`; the vectored variants keep their
/// buffers behind a box so the common ones stay at 48 bytes.
#[test]
fn request_stays_small_with_vectored_buffers_boxed() {
    assert!(std::mem::size_of::<Request>() <= 48);
}

#[test]
fn vectored_iovecs_point_into_their_own_buffers() {
    let vectored = Vectored::over(vec![vec![0; 3], vec![0; 5]]);
    for (iov, buf) in vectored.iovecs.0.iter().zip(&vectored.bufs) {
        assert_eq!(iov.iov_base.cast_const(), buf.as_ptr().cast());
        assert_eq!(iov.iov_len, buf.len());
    }
    let moved = *vectored;
    assert_eq!(
        moved.iovecs.0[1].iov_base.cast_const(),
        moved.bufs[1].as_ptr().cast()
    );
}
