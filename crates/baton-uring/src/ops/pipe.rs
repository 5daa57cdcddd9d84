//! Stream operations on a descriptor that is neither a socket nor a seekable file: a pipe
//! (a child's standard streams). They read and write at the descriptor's own position
//! (io_uring's offset −1), which a pipe does not have, so bytes simply flow in order.
//!
//! Such a request waits on a peer (the process at the pipe's other end) and may stay in flight
//! indefinitely, as a socket's receive or send does: the driver's in-flight limit does not
//! count it, closure cancels it (rule U9), and a write is not tracked for durability.

use std::io;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use super::fs::{EMPTY_READ, EMPTY_WRITE};
use super::{decode_filled, decode_filled_vectored, decode_sent, decode_sent_vectored};
use crate::buf::{IoBuf, IoBufMut, IoVecBuf, IoVecBufMut, RawBuf};
use crate::operation::Op;
use crate::request::{CURSOR, Request, Vectored};

/// Reads what the pipe holds into `buf`, from its beginning up to its capacity (at least one
/// byte, waiting for it); its initialized length becomes the count, 0 at the end of the stream
/// (every writer closed). A buffer with no capacity is `InvalidInput`, refused before
/// anything is submitted. Not retained: dropping the future cancels the read (attach a stash
/// to keep bytes that arrive anyway).
pub fn read_stream<B: IoBufMut>(fd: Arc<OwnedFd>, buf: B) -> Op<(io::Result<usize>, B)> {
    let empty = buf.bytes_total() == 0;
    let data = Request::Read {
        fd,
        buf: RawBuf::new_mut(buf),
        offset: CURSOR,
    };
    match empty {
        true => Op::invalid(data, EMPTY_READ, decode_filled::<B>),
        false => Op::new(data, decode_filled::<B>),
    }
}

/// Writes `buf`'s initialized bytes into the pipe (as many as it takes; the count may be
/// short). Retained: dropping the future does not cancel the write, though closure does (its
/// reader may never read). An empty buffer is `InvalidInput`, refused before anything is
/// submitted.
pub fn write_stream<B: IoBuf>(fd: Arc<OwnedFd>, buf: B) -> Op<(io::Result<usize>, B)> {
    let empty = buf.bytes_init() == 0;
    let data = Request::Write {
        fd,
        buf: RawBuf::new(buf),
        offset: CURSOR,
    };
    match empty {
        true => Op::invalid(data, EMPTY_WRITE, decode_sent::<B>),
        false => Op::new(data, decode_sent::<B>),
    }
}

/// [`read_stream`] into several buffers, filled in order, each from its beginning up to its
/// capacity; each one's initialized length becomes what it got. No buffer with room is
/// `InvalidInput`.
pub fn readv_stream<V: IoVecBufMut>(fd: Arc<OwnedFd>, bufs: V) -> Op<(io::Result<usize>, V)> {
    let bufs = bufs.into_raw_bufs_mut();
    let empty = bufs.iter().all(|b| b.total() == 0);
    let data = Request::Readv {
        fd,
        vectored: Vectored::over(bufs, true),
        offset: CURSOR,
    };
    match empty {
        true => Op::invalid(data, EMPTY_READ, decode_filled_vectored::<V>),
        false => Op::new(data, decode_filled_vectored::<V>),
    }
}

/// [`write_stream`] of each buffer's initialized bytes, in order; retained as it is. No byte
/// to write is `InvalidInput`.
pub fn writev_stream<V: IoVecBuf>(fd: Arc<OwnedFd>, bufs: V) -> Op<(io::Result<usize>, V)> {
    let bufs = bufs.into_raw_bufs();
    let empty = bufs.iter().all(|b| b.init() == 0);
    let data = Request::Writev {
        fd,
        vectored: Vectored::over(bufs, false),
        offset: CURSOR,
    };
    match empty {
        true => Op::invalid(data, EMPTY_WRITE, decode_sent_vectored::<V>),
        false => Op::new(data, decode_sent_vectored::<V>),
    }
}
