//! [`IoBuf`] and [`IoBufMut`] for the standard buffer types (and `bytes`' with its feature).

use super::{IoBuf, IoBufMut};

/// Implements [`IoBuf`] for owned types whose bytes stay put when the value moves
/// (`PTR_SURVIVES_MOVE`): `as_ptr` is the pointer, `len()` the initialized bytes and `$total`
/// (`len` or `capacity`) all of them. Each type comes with its `safety` justification, which
/// becomes the impl's documentation.
macro_rules! unmoving_io_buf {
    ($(safety: $safety:literal, $ty:ty, placeholder: $placeholder:expr, total: $total:ident;)+) => {$(
        #[doc = $safety]
        // SAFETY: `$safety`, given with each type, says why its bytes at `as_ptr` are valid for
        // `$total()` bytes, the first `len()` initialized, and do not move with the value.
        unsafe impl IoBuf for $ty {
            const PTR_SURVIVES_MOVE: bool = true;

            fn placeholder() -> Self {
                $placeholder
            }

            fn stable_ptr(&self) -> *const u8 {
                self.as_ptr()
            }

            fn bytes_init(&self) -> usize {
                self.len()
            }

            fn bytes_total(&self) -> usize {
                self.$total()
            }
        }
    )+};
}

/// Implements [`IoBufMut`] for types whose `as_mut_ptr` is the same bytes as their [`IoBuf`]
/// pointer: `set_init: set_len` for a growable buffer (the length becomes exactly `init`),
/// `set_init: always` for one whose bytes are all initialized already (nothing to change). Each
/// type comes with its `safety` justification, which becomes the impl's documentation.
macro_rules! writable_io_buf {
    ($(safety: $safety:literal, [$($generics:tt)*] $ty:ty, set_init: $how:ident;)+) => {$(
        #[doc = $safety]
        // SAFETY: `$safety`, given with each type, says why `as_mut_ptr` is writable for
        // `bytes_total()` bytes and how `set_init` keeps `bytes_init` truthful.
        unsafe impl<$($generics)*> IoBufMut for $ty {
            fn stable_mut_ptr(&mut self) -> *mut u8 {
                self.as_mut_ptr()
            }

            writable_io_buf!(@set_init $how);
        }
    )+};
    (@set_init set_len) => {
        unsafe fn set_init(&mut self, init: usize) {
            // SAFETY: the caller's contract: `init <= capacity()` and the bytes are initialized.
            unsafe { self.set_len(init) };
        }
    };
    (@set_init always) => {
        unsafe fn set_init(&mut self, _init: usize) {}
    };
}

unmoving_io_buf! {
    safety: "SAFETY: a `Vec`'s buffer is a heap allocation of `capacity()` bytes whose first \
             `len()` are initialized; moving the `Vec` moves only its pointer, length and capacity.",
    Vec<u8>, placeholder: Vec::new(), total: capacity;

    safety: "SAFETY: a boxed slice is a heap allocation, all of it initialized; moving the box \
             moves only its pointer and length.",
    Box<[u8]>, placeholder: Box::default(), total: len;

    safety: "SAFETY: `'static` bytes are never freed nor moved; only the reference moves.",
    &'static [u8], placeholder: &[], total: len;

    safety: "SAFETY: as for `&'static [u8]`.",
    &'static str, placeholder: "", total: len;

    safety: "SAFETY: a `String` is a `Vec<u8>` of UTF-8: heap bytes that do not move with it. \
             Read-only (no `IoBufMut`): a read could break UTF-8.",
    String, placeholder: String::new(), total: capacity;
}

writable_io_buf! {
    safety: "SAFETY: `as_mut_ptr` is the same heap pointer, valid for `capacity()` bytes; \
             `set_len` makes the length exactly `init`, whose bytes the caller vouches for.",
    [] Vec<u8>, set_init: set_len;

    safety: "SAFETY: as for `IoBuf`; every byte is always initialized, so `set_init` changes \
             nothing and `bytes_init` keeps saying the length (the count says how many bytes a \
             read wrote).",
    [] Box<[u8]>, set_init: always;

    safety: "SAFETY: as for `IoBuf` and `Box<[u8]>`: always fully initialized.",
    [const N: usize] [u8; N], set_init: always;
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

/// A zeroed `[u8; N]` that lives for the program, for `&'static [u8; N]`'s placeholder: an
/// associated constant's value is `'static` for every `N`, where `&[0; N]` in a function body
/// is not promoted.
struct Zeroed<const N: usize>;

impl<const N: usize> Zeroed<N> {
    const BYTES: &'static [u8; N] = &[0; N];
}

// SAFETY: `'static` bytes are never freed nor moved, and all `N` are initialized; only the
// reference moves. A byte-string literal (`b"hello"`) is such a reference.
unsafe impl<const N: usize> IoBuf for &'static [u8; N] {
    const PTR_SURVIVES_MOVE: bool = true;

    fn placeholder() -> Self {
        Zeroed::<N>::BYTES
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

#[cfg(feature = "bytes")]
mod bytes_impls {
    use super::{IoBuf, IoBufMut};

    unmoving_io_buf! {
        safety: "SAFETY: a `Bytes` points into reference-counted (or static) memory that lives \
                 as long as any `Bytes` of it and never moves; it is immutable, so read-only here.",
        bytes::Bytes, placeholder: bytes::Bytes::new(), total: len;

        safety: "SAFETY: a `BytesMut` uniquely owns its heap bytes (`capacity()` of them, \
                 `len()` initialized), which do not move with it.",
        bytes::BytesMut, placeholder: bytes::BytesMut::new(), total: capacity;
    }

    writable_io_buf! {
        safety: "SAFETY: the same unique heap bytes, written through `as_mut_ptr`; `set_len` \
                 makes the length exactly `init`, whose bytes the caller vouches for.",
        [] bytes::BytesMut, set_init: set_len;
    }
}
