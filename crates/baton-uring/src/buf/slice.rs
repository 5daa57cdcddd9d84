//! [`Slice`]: a range of an owned buffer, itself an owned buffer.

use std::ops::Deref;

use super::{IoBuf, IoBufMut};

/// `range` of a buffer (see [`IoBuf::slice`]): an operation given a slice reads or writes only
/// that range, and [`into_inner`](Slice::into_inner) hands the whole buffer back.
///
/// A read into a slice fills it from its beginning and sets its initialized length to exactly
/// the count — unless the buffer was already initialized *past* the slice's end (reading into
/// the middle of filled data): then the read overwrites in place and the buffer keeps its
/// length, as reading into `&mut buf[a..b]` does in `std`. A slice that starts past the
/// buffer's initialized bytes zero-fills the gap when the read completes, so the buffer's
/// contents stay contiguous.
///
/// Invariant: `begin <= end <= buf.bytes_total()`.
#[derive(Debug)]
pub struct Slice<B> {
    buf: B,
    begin: usize,
    end: usize,
}

impl<B: IoBuf> Slice<B> {
    /// A slice of `begin..end`; the caller ([`IoBuf::slice`]) checked the range.
    pub(crate) fn new(buf: B, begin: usize, end: usize) -> Slice<B> {
        debug_assert!(begin <= end && end <= buf.bytes_total());
        Slice { buf, begin, end }
    }
}

impl<B> Slice<B> {
    /// Where the slice starts in the buffer.
    pub fn begin(&self) -> usize {
        self.begin
    }

    /// Where the slice ends in the buffer (exclusive).
    pub fn end(&self) -> usize {
        self.end
    }

    /// The whole buffer.
    pub fn get_ref(&self) -> &B {
        &self.buf
    }

    /// The whole buffer, mutably. Changing its capacity below the slice's end breaks nothing
    /// unsafe, but later operations on the slice then panic or report an error.
    pub fn get_mut(&mut self) -> &mut B {
        &mut self.buf
    }

    /// The whole buffer back.
    pub fn into_inner(self) -> B {
        self.buf
    }
}

impl<B: IoBuf> Deref for Slice<B> {
    type Target = [u8];

    /// The slice's initialized bytes.
    fn deref(&self) -> &[u8] {
        let len = self.bytes_init();
        // SAFETY: the IoBuf contract of `B` makes `buf.stable_ptr()` valid for its initialized
        // bytes; the slice's initialized bytes lie within them (`bytes_init`), at `begin`.
        unsafe { std::slice::from_raw_parts(self.stable_ptr(), len) }
    }
}

// SAFETY: the pointer is `B`'s, moved forward by `begin <= bytes_total` (type invariant), so it
// stays within `B`'s allocation and moves with it exactly as `B`'s does; the slice's bytes are a
// sub-range of `B`'s and its initialized ones a sub-range of `B`'s initialized ones.
unsafe impl<B: IoBuf> IoBuf for Slice<B> {
    const PTR_SURVIVES_MOVE: bool = B::PTR_SURVIVES_MOVE;

    fn placeholder() -> Self {
        Slice::new(B::placeholder(), 0, 0)
    }

    fn stable_ptr(&self) -> *const u8 {
        self.buf.stable_ptr().wrapping_add(self.begin)
    }

    fn bytes_init(&self) -> usize {
        self.buf
            .bytes_init()
            .min(self.end)
            .saturating_sub(self.begin)
    }

    fn bytes_total(&self) -> usize {
        self.end - self.begin
    }
}

// SAFETY: as for `IoBuf`; writes through the pointer stay within `begin..end` of `B`'s
// writable bytes, and `set_init` upholds `B::set_init`'s contract (see there).
unsafe impl<B: IoBufMut> IoBufMut for Slice<B> {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.buf.stable_mut_ptr().wrapping_add(self.begin)
    }

    unsafe fn set_init(&mut self, init: usize) {
        debug_assert!(init <= self.end - self.begin);
        let inner_init = self.buf.bytes_init();
        if inner_init > self.end {
            // Filled past the slice: the read overwrote in place; everything stays initialized.
            return;
        }
        if inner_init < self.begin {
            let gap = self.begin - inner_init;
            // SAFETY: `inner_init..begin` lies within `B`'s writable bytes (`begin <= end <=
            // bytes_total`), which nothing else uses while we own the buffer.
            unsafe {
                std::ptr::write_bytes(self.buf.stable_mut_ptr().add(inner_init), 0, gap);
            }
        }
        // SAFETY: bytes `..inner_init` were initialized, `inner_init..begin` were just zeroed,
        // and the caller vouches for `begin..begin + init`; `begin + init <= end <= total`.
        unsafe { self.buf.set_init(self.begin + init) };
    }
}
