//! Tests of `buf/`: slices, the erased form the driver keeps, and vectored buffers.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::buf::{IoBuf, IoBufMut, IoVecBufMut, RawBuf};

#[test]
fn a_slice_reads_and_writes_only_its_range() {
    let mut buf = Vec::with_capacity(8);
    buf.extend_from_slice(b"abcdef");
    let slice = buf.slice(2..5);
    assert_eq!((slice.begin(), slice.end()), (2, 5));
    assert_eq!(slice.bytes_total(), 3);
    assert_eq!(slice.bytes_init(), 3);
    assert_eq!(&*slice, b"cde");
    let tail = slice.into_inner().slice(4..);
    assert_eq!(
        (tail.bytes_init(), tail.bytes_total()),
        (2, 4),
        "by capacity, not length"
    );
}

#[test]
#[should_panic(expected = "range end out of bounds: 9 > the buffer's capacity 8")]
fn a_slice_past_the_capacity_panics_saying_so() {
    let _ = Vec::<u8>::with_capacity(8).slice(..9);
}

#[test]
#[should_panic(expected = "range start 5 is after its end 4")]
fn a_slice_that_starts_after_it_ends_panics_saying_so() {
    let (start, end) = (5, 4);
    let _ = vec![0u8; 8].slice(start..end);
}

/// Writes `bytes` at the start of `buf` and marks them initialized, as a read into it would.
fn write_as_a_read(buf: &mut impl IoBufMut, bytes: &[u8]) {
    assert!(bytes.len() <= buf.bytes_total(), "the read fits the buffer");
    // SAFETY: `buf` is valid for writes of `bytes_total() >= bytes.len()` bytes (checked just
    // above), and those bytes are initialized by the copy before `set_init` says so.
    unsafe {
        buf.stable_mut_ptr().copy_from(bytes.as_ptr(), bytes.len());
        buf.set_init(bytes.len());
    }
}

#[test]
fn a_read_into_a_slice_sets_the_length_to_exactly_the_count_or_keeps_data_past_it() {
    // Appending: the slice starts where the contents end.
    let mut buf = Vec::with_capacity(8);
    buf.extend_from_slice(b"ab");
    let mut slice = buf.slice(2..);
    write_as_a_read(&mut slice, b"xy");
    assert_eq!(slice.into_inner(), b"abxy");
    // Past the contents: the gap is zero-filled so the buffer stays contiguous.
    let mut gap = Vec::with_capacity(8);
    gap.extend_from_slice(b"ab");
    let mut past = gap.slice(4..6);
    write_as_a_read(&mut past, b"zz");
    assert_eq!(past.into_inner(), b"ab\0\0zz");
    // In the middle of filled data: overwritten in place, the length kept.
    let mut filled = b"abcdef".to_vec().slice(1..3);
    write_as_a_read(&mut filled, b"X");
    assert_eq!(filled.into_inner(), b"aXcdef");
}

/// Counts drops of a buffer; its bytes live on the heap.
struct Counted {
    bytes: Vec<u8>,
    drops: Arc<AtomicUsize>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

// SAFETY: delegates to the `Vec`, whose heap bytes do not move with the value.
unsafe impl IoBuf for Counted {
    const PTR_SURVIVES_MOVE: bool = true;

    fn placeholder() -> Self {
        Counted {
            bytes: Vec::new(),
            drops: Arc::default(),
        }
    }

    fn stable_ptr(&self) -> *const u8 {
        self.bytes.as_ptr()
    }

    fn bytes_init(&self) -> usize {
        self.bytes.len()
    }

    fn bytes_total(&self) -> usize {
        self.bytes.capacity()
    }
}

#[test]
fn the_erased_form_keeps_the_pointer_and_drops_or_returns_the_buffer_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let bytes = b"kept".to_vec();
    let ptr = bytes.as_ptr();
    let raw = RawBuf::new(Counted {
        bytes,
        drops: drops.clone(),
    });
    let moved = raw;
    assert_eq!(
        moved.ptr().cast_const(),
        ptr,
        "inline, the heap bytes did not move"
    );
    assert_eq!((moved.init(), moved.total()), (4, 4));
    // SAFETY: made from a `Counted` just above.
    let back: Counted = unsafe { moved.into_value() };
    assert_eq!(back.bytes, b"kept");
    assert_eq!(drops.load(Ordering::SeqCst), 0, "taken back, not dropped");
    drop(back);
    let raw = RawBuf::new(Counted {
        bytes: Vec::new(),
        drops: drops.clone(),
    });
    drop(raw);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        2,
        "dropped once, by the RawBuf"
    );
}

#[test]
fn an_array_is_boxed_so_its_bytes_stay_put_while_the_driver_moves_it() {
    let raw = RawBuf::new_mut([7u8; 16]);
    let ptr = raw.ptr();
    let moved = vec![raw];
    assert_eq!(moved[0].ptr(), ptr);
    // SAFETY: all 16 bytes are initialized (an array), and nothing writes them.
    assert_eq!(unsafe { moved[0].filled(16) }, &[7u8; 16]);
    let mut moved = moved;
    // SAFETY: made from a `[u8; 16]` just above.
    let back: [u8; 16] = unsafe { moved.remove(0).into_value() };
    assert_eq!(back, [7u8; 16]);
}

#[test]
fn a_vectored_read_fills_the_buffers_in_order() {
    let mut bufs = vec![
        Vec::<u8>::with_capacity(2),
        Vec::with_capacity(3),
        Vec::with_capacity(4),
    ];
    for buf in &mut bufs {
        buf.resize(buf.capacity(), b'.');
        buf.clear();
    }
    // SAFETY: every byte of every buffer was initialized above.
    unsafe { bufs.set_init_vectored(4) };
    let lens: Vec<usize> = bufs.iter().map(Vec::len).collect();
    assert_eq!(lens, vec![2, 2, 0]);
}

/// A byte-string literal (`&'static [u8; N]`) is written from where it lies: not boxed, every
/// byte initialized.
#[test]
fn a_byte_string_literal_is_a_buffer_that_stays_put() {
    let literal: &'static [u8; 5] = b"hello";
    let raw = RawBuf::new(literal);
    assert_eq!(raw.ptr().cast_const(), literal.as_ptr(), "the literal is not copied or boxed");
    // SAFETY: all 5 bytes of the literal are initialized, and nothing writes them.
    assert_eq!(unsafe { raw.filled(5) }, b"hello");
}

#[test]
fn placeholders_are_empty() {
    assert!(<Vec<u8> as IoBuf>::placeholder().is_empty());
    assert_eq!(<[u8; 3] as IoBuf>::placeholder(), [0; 3]);
    assert_eq!(<&'static [u8; 3] as IoBuf>::placeholder(), &[0; 3]);
    assert_eq!(
        <crate::buf::Slice<Vec<u8>> as IoBuf>::placeholder().bytes_total(),
        0
    );
}
