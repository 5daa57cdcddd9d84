//! [`IoBuf`] and [`IoBufMut`] for the standard buffer types (and `bytes`' with its feature).

use super::{IoBuf, IoBufMut};

// SAFETY: a `Vec`'s buffer is a heap allocation of `capacity()` bytes whose first `len()` are
// initialized; moving the `Vec` moves only its pointer, length and capacity.
unsafe impl IoBuf for Vec<u8> {
    const PTR_SURVIVES_MOVE: bool = true;

    fn placeholder() -> Self {
        Vec::new()
    }

    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }

    fn bytes_init(&self) -> usize {
        self.len()
    }

    fn bytes_total(&self) -> usize {
        self.capacity()
    }
}

// SAFETY: `as_mut_ptr` is the same heap pointer, valid for `capacity()` bytes; `set_len` makes
// the length exactly `init`, whose bytes the caller vouches for.
unsafe impl IoBufMut for Vec<u8> {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.as_mut_ptr()
    }

    unsafe fn set_init(&mut self, init: usize) {
        // SAFETY: the caller's contract: `init <= capacity()` and the bytes are initialized.
        unsafe { self.set_len(init) };
    }
}

// SAFETY: a boxed slice is a heap allocation, all of it initialized; moving the box moves only
// its pointer and length.
unsafe impl IoBuf for Box<[u8]> {
    const PTR_SURVIVES_MOVE: bool = true;

    fn placeholder() -> Self {
        Box::default()
    }

    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }

    fn bytes_init(&self) -> usize {
        self.len()
    }

    fn bytes_total(&self) -> usize {
        self.len()
    }
}

// SAFETY: as for `IoBuf`; every byte is always initialized, so `set_init` changes nothing and
// `bytes_init` keeps saying the length (the count says how many bytes a read wrote).
unsafe impl IoBufMut for Box<[u8]> {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.as_mut_ptr()
    }

    unsafe fn set_init(&mut self, _init: usize) {}
}

// SAFETY: an array's bytes are all initialized and live inline, so they move with the value:
// `PTR_SURVIVES_MOVE` is `false`, and the driver boxes it before taking its pointer.
unsafe impl<const N: usize> IoBuf for [u8; N] {
    const PTR_SURVIVES_MOVE: bool = false;

    fn placeholder() -> Self {
        [0; N]
    }

    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }

    fn bytes_init(&self) -> usize {
        N
    }

    fn bytes_total(&self) -> usize {
        N
    }
}

// SAFETY: as for `IoBuf` and `Box<[u8]>`: always fully initialized.
unsafe impl<const N: usize> IoBufMut for [u8; N] {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.as_mut_ptr()
    }

    unsafe fn set_init(&mut self, _init: usize) {}
}

// SAFETY: `'static` bytes are never freed nor moved; only the reference moves.
unsafe impl IoBuf for &'static [u8] {
    const PTR_SURVIVES_MOVE: bool = true;

    fn placeholder() -> Self {
        &[]
    }

    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }

    fn bytes_init(&self) -> usize {
        self.len()
    }

    fn bytes_total(&self) -> usize {
        self.len()
    }
}

// SAFETY: as for `&'static [u8]`.
unsafe impl IoBuf for &'static str {
    const PTR_SURVIVES_MOVE: bool = true;

    fn placeholder() -> Self {
        ""
    }

    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }

    fn bytes_init(&self) -> usize {
        self.len()
    }

    fn bytes_total(&self) -> usize {
        self.len()
    }
}

// SAFETY: a `String` is a `Vec<u8>` of UTF-8: heap bytes that do not move with it. Read-only
// (no `IoBufMut`): a read could break UTF-8.
unsafe impl IoBuf for String {
    const PTR_SURVIVES_MOVE: bool = true;

    fn placeholder() -> Self {
        String::new()
    }

    fn stable_ptr(&self) -> *const u8 {
        self.as_ptr()
    }

    fn bytes_init(&self) -> usize {
        self.len()
    }

    fn bytes_total(&self) -> usize {
        self.capacity()
    }
}

#[cfg(feature = "bytes")]
mod bytes_impls {
    use super::{IoBuf, IoBufMut};

    // SAFETY: a `Bytes` points into reference-counted (or static) memory that lives as long as
    // any `Bytes` of it and never moves; it is immutable, so read-only here.
    unsafe impl IoBuf for bytes::Bytes {
        const PTR_SURVIVES_MOVE: bool = true;

        fn placeholder() -> Self {
            bytes::Bytes::new()
        }

        fn stable_ptr(&self) -> *const u8 {
            self.as_ptr()
        }

        fn bytes_init(&self) -> usize {
            self.len()
        }

        fn bytes_total(&self) -> usize {
            self.len()
        }
    }

    // SAFETY: a `BytesMut` uniquely owns its heap bytes (`capacity()` of them, `len()`
    // initialized), which do not move with it.
    unsafe impl IoBuf for bytes::BytesMut {
        const PTR_SURVIVES_MOVE: bool = true;

        fn placeholder() -> Self {
            bytes::BytesMut::new()
        }

        fn stable_ptr(&self) -> *const u8 {
            self.as_ptr()
        }

        fn bytes_init(&self) -> usize {
            self.len()
        }

        fn bytes_total(&self) -> usize {
            self.capacity()
        }
    }

    // SAFETY: the same unique heap bytes, written through `as_mut_ptr`; `set_len` makes the
    // length exactly `init`, whose bytes the caller vouches for.
    unsafe impl IoBufMut for bytes::BytesMut {
        fn stable_mut_ptr(&mut self) -> *mut u8 {
            self.as_mut_ptr()
        }

        unsafe fn set_init(&mut self, init: usize) {
            // SAFETY: the caller's contract: `init <= capacity()` and the bytes are initialized.
            unsafe { self.set_len(init) };
        }
    }
}
