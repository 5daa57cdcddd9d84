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

/// The `ioprio` field of a prepared SQE (bytes 2..4 of the kernel's `io_uring_sqe`).
fn ioprio(entry: io_uring::squeue::Entry) -> u16 {
    // SAFETY: `squeue::Entry` is a `repr(C)` wrapper of the 64-byte `io_uring_sqe`, built from
    // a zeroed SQE, so all 64 bytes are initialized; `transmute` checks the sizes agree.
    let bytes: [u8; 64] = unsafe { std::mem::transmute(entry) };
    u16::from_ne_bytes([bytes[2], bytes[3]])
}

fn receive(poll_first: bool) -> Request {
    let (ours, _theirs) = std::os::unix::net::UnixStream::pair().expect("socketpair");
    Request::Recv {
        fd: std::sync::Arc::new(std::os::fd::OwnedFd::from(ours)),
        buf: crate::buf::RawBuf::new_mut(Vec::<u8>::with_capacity(8)),
        poll_first,
    }
}

/// A receive asks the kernel to poll first only when its caller asked for it and the kernel
/// accepts the flag; an older kernel would refuse the whole receive with `EINVAL`.
#[test]
fn a_receive_polls_first_only_when_asked_and_the_kernel_accepts_it() {
    assert_eq!(ioprio(receive(true).prepare(7, true)), 1);
    assert_eq!(ioprio(receive(true).prepare(7, false)), 0);
    assert_eq!(ioprio(receive(false).prepare(7, true)), 0);
    assert_eq!(ioprio(receive(false).prepare(7, false)), 0);
}

/// A read or write at the descriptor's own position (a pipe's) waits on the process at the
/// pipe's other end: the in-flight limit does not count it and closure cancels it (rule U9),
/// and it is not a write a sync must flush. The same request at an offset is a file's.
#[test]
fn a_read_or_write_at_the_cursor_waits_on_a_peer_and_one_at_an_offset_does_not() {
    let fd = || {
        let (read, _write) = std::io::pipe().expect("a pipe");
        std::sync::Arc::new(std::os::fd::OwnedFd::from(read))
    };
    let buf = || crate::buf::RawBuf::new_mut(Vec::<u8>::with_capacity(8));
    let vectored = || Vectored::over(IoVecBufMut::into_raw_bufs_mut(vec![Vec::<u8>::new()]), true);
    for offset in [crate::request::CURSOR, 0, 4096] {
        let stream = offset == crate::request::CURSOR;
        let requests = [
            Request::Read { fd: fd(), buf: buf(), offset },
            Request::Write { fd: fd(), buf: buf(), offset },
            Request::Readv { fd: fd(), vectored: vectored(), offset },
            Request::Writev { fd: fd(), vectored: vectored(), offset },
        ];
        for request in requests {
            assert_eq!(request.waits_on_peer(), stream, "{request:?}");
            let writes = matches!(request, Request::Write { .. } | Request::Writev { .. });
            assert_eq!(request.written_file().is_some(), writes && !stream, "{request:?}");
            assert_eq!(request.outlives_closure(), writes && !stream, "{request:?}");
        }
    }
}
