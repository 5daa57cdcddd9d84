//! Owned buffers: what an operation takes by value and hands back with its result, so the
//! kernel may use the memory until the request's final completion whatever happens to the
//! future.
//!
//! * [`IoBuf`] — a buffer the kernel may *read*: a stable pointer to its bytes, how many are
//!   initialized, and how many it can hold. Writes and sends take one.
//! * [`IoBufMut`] — a buffer the kernel may *write*: reads and receives fill it **from its
//!   beginning**, up to its capacity, and set its initialized length to exactly the count (for
//!   `Vec<u8>`, `buf.len()` is the count afterwards). No method changes behaviour with a
//!   buffer's capacity.
//! * [`Slice`] — `buf.slice(range)`: only that range is read or written; `into_inner` hands the
//!   whole buffer back.
//! * [`IoVecBuf`] / [`IoVecBufMut`] — several buffers for one vectored request (`Vec<B>`,
//!   `[B; N]`).
//!
//! Implemented for `Vec<u8>`, `Box<[u8]>`, `[u8; N]`, `&'static [u8]`, `&'static [u8; N]`
//! (a byte-string literal, `b"hello"`), `&'static str`, `String` (read-only) and, with the feature `bytes`, `bytes::Bytes` (read-only) and
//! `bytes::BytesMut`.
//!
//! The driver keeps a buffer as a [`RawBuf`]: the value itself, inline, when it is small and
//! its bytes do not move with it (every heap-backed buffer above), else in a `Box` (a `[u8; N]`
//! keeps its bytes inline, so it is boxed: one allocation per request).

mod impls;
mod raw;
mod slice;
mod vectored;

pub use raw::RawBuf;
pub use slice::Slice;
pub use vectored::{IoVecBuf, IoVecBufMut};

use std::ops::{Bound, RangeBounds};

/// A buffer the kernel may read from: a write's or send's source.
///
/// # Safety
///
/// Implementers promise, for as long as the value lives and is not used through `&mut`:
///
/// * [`stable_ptr`](IoBuf::stable_ptr) points to [`bytes_total`](IoBuf::bytes_total) bytes of
///   memory that stay allocated, of which the first [`bytes_init`](IoBuf::bytes_init) are
///   initialized, and `bytes_init() <= bytes_total()`;
/// * when [`PTR_SURVIVES_MOVE`](IoBuf::PTR_SURVIVES_MOVE) is `true`, moving the value changes
///   neither the pointer nor the memory (the bytes live on the heap, or are `'static`): the
///   driver moves buffers between its slots while the kernel uses them. A buffer that holds its
///   bytes inline must say `false`; the driver then boxes it.
pub unsafe trait IoBuf: Send + 'static {
    /// Whether moving the value leaves [`stable_ptr`](IoBuf::stable_ptr) and its memory as
    /// they are (see the trait's safety contract).
    const PTR_SURVIVES_MOVE: bool;

    /// Where the bytes start.
    fn stable_ptr(&self) -> *const u8;

    /// How many bytes, from the start, are initialized: what a write sends.
    fn bytes_init(&self) -> usize;

    /// How many bytes the buffer holds (its capacity): what a read may fill.
    fn bytes_total(&self) -> usize;

    /// An empty buffer of this type: what an operation hands back instead of the caller's
    /// buffer in the one case it cannot give that back — its driver closed while the kernel
    /// still owned the buffer, and kept it (leaked, rather than free memory the kernel might
    /// still write). The result is then an error (`Closed`), so the placeholder means nothing.
    fn placeholder() -> Self
    where
        Self: Sized;

    /// A view of `range` of this buffer (by capacity, not just its initialized part): reads and
    /// writes through the slice touch only that range; [`Slice::into_inner`] hands the buffer
    /// back.
    ///
    /// # Panics
    ///
    /// When the range ends past [`bytes_total`](IoBuf::bytes_total) or starts after it ends,
    /// as slicing a `bytes::Bytes` does.
    fn slice(self, range: impl RangeBounds<usize>) -> Slice<Self>
    where
        Self: Sized,
    {
        let total = self.bytes_total();
        let begin = match range.start_bound() {
            Bound::Included(&n) => n,
            Bound::Excluded(&n) => n.checked_add(1).expect("slice start overflows usize"),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&n) => n.checked_add(1).expect("slice end overflows usize"),
            Bound::Excluded(&n) => n,
            Bound::Unbounded => total,
        };
        assert!(
            end <= total,
            "range end out of bounds: {end} > the buffer's capacity {total}"
        );
        assert!(begin <= end, "range start {begin} is after its end {end}");
        Slice::new(self, begin, end)
    }
}

/// A buffer the kernel may write into: a read's or receive's destination.
///
/// # Safety
///
/// Beyond [`IoBuf`]'s contract: [`stable_mut_ptr`](IoBufMut::stable_mut_ptr) is the same
/// pointer, valid for writes of [`bytes_total`](IoBuf::bytes_total) bytes, and nothing else
/// reads or writes that memory while the value is owned by an operation; after
/// [`set_init`](IoBufMut::set_init)`(n)`, [`bytes_init`](IoBuf::bytes_init) is `n` (for a buffer
/// that can say so; one whose bytes are always all initialized, like `[u8; N]`, keeps saying
/// its size).
pub unsafe trait IoBufMut: IoBuf {
    /// Where the bytes start, for writing.
    fn stable_mut_ptr(&mut self) -> *mut u8;

    /// Records that the first `init` bytes are initialized and the rest are not part of the
    /// contents (for a `Vec<u8>`: its length becomes `init`).
    ///
    /// # Safety
    ///
    /// The first `init` bytes are initialized, and `init <= bytes_total()`.
    unsafe fn set_init(&mut self, init: usize);
}
