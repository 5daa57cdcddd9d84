//! [`RawBuf`]: an owned buffer with its type erased, as the driver keeps it while the kernel
//! may use it.

#[cfg(debug_assertions)]
use std::any::TypeId;
use std::fmt;
use std::mem::{ManuallyDrop, MaybeUninit, align_of, size_of};

use super::{IoBuf, IoBufMut};

/// How many machine words a buffer value may take to be kept inline (a `Vec<u8>` takes three,
/// a `Slice<Vec<u8>>` five).
const INLINE_WORDS: usize = 5;

type Storage = [MaybeUninit<usize>; INLINE_WORDS];

/// An owned buffer whose type the driver does not know: the value itself — inline when it is
/// small and its bytes do not move with it, else in a `Box` — plus where its bytes are and how
/// many are initialized, read once when it was handed over. Opaque outside the driver; the
/// typed operation rebuilds the buffer when the request is done.
///
/// Invariants: `value` holds exactly one live value of the type `drop` was made for — inline,
/// or a `Box` of it when `inline` says it does not fit — until it is taken back or dropped;
/// `ptr` is that value's pointer (its bytes do not move with the `RawBuf`: inline values are
/// only those whose pointer survives a move), valid for `total` bytes, the first `init` of them
/// initialized. (`type_id` checks the taking back in debug builds.) The lengths are kept as
/// `u32`, what one io_uring request can move: a larger buffer is used up to `u32::MAX` bytes.
pub struct RawBuf {
    ptr: *mut u8,
    init: u32,
    total: u32,
    value: Storage,
    drop: unsafe fn(&mut Storage),
    #[cfg(debug_assertions)]
    type_id: TypeId,
}

// SAFETY: the value is `Send` (`IoBuf: Send`), and `ptr` only points into memory that value owns
// (type invariant), so moving the whole `RawBuf` to another thread moves nothing shared.
unsafe impl Send for RawBuf {}

impl fmt::Debug for RawBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawBuf")
            .field("init", &self.init)
            .field("total", &self.total)
            .finish_non_exhaustive()
    }
}

/// Whether a `B` is kept inline (rather than boxed).
fn inline<B: IoBuf>() -> bool {
    B::PTR_SURVIVES_MOVE
        && size_of::<B>() <= size_of::<Storage>()
        && align_of::<B>() <= align_of::<Storage>()
}

/// Drops the value `storage` holds.
///
/// # Safety
///
/// `storage` holds a live `B` (inline, or a `Box<B>` when `B` is not kept inline), which is not
/// used again.
unsafe fn drop_value<B: IoBuf>(storage: &mut Storage) {
    let slot = storage.as_mut_ptr();
    if !inline::<B>() {
        // SAFETY: the caller's contract: the storage holds a `Box<B>`, dropped once here.
        unsafe { std::ptr::drop_in_place(slot.cast::<Box<B>>()) };
    } else {
        // SAFETY: the caller's contract: the storage holds a `B`, dropped once here.
        unsafe { std::ptr::drop_in_place(slot.cast::<B>()) };
    }
}

impl RawBuf {
    /// Erases `buf`: inline when it fits and its bytes do not move with it, else boxed.
    pub(crate) fn new<B: IoBuf>(buf: B) -> RawBuf {
        RawBuf::erase(buf, |b| {
            (b.stable_ptr().cast_mut(), b.bytes_init(), b.bytes_total())
        })
    }

    /// Erases a writable buffer, taking its pointer through `&mut` (a read writes there).
    pub(crate) fn new_mut<B: IoBufMut>(buf: B) -> RawBuf {
        RawBuf::erase(buf, |b| {
            (b.stable_mut_ptr(), b.bytes_init(), b.bytes_total())
        })
    }

    /// Stores `buf` and reads its view once it is where it stays (inline or in its box).
    fn erase<B: IoBuf>(buf: B, view: impl FnOnce(&mut B) -> (*mut u8, usize, usize)) -> RawBuf {
        let mut value: Storage = [MaybeUninit::uninit(); INLINE_WORDS];
        let slot = value.as_mut_ptr();
        let boxed = !inline::<B>();
        let (ptr, init, total) = if boxed {
            let mut boxed = Box::new(buf);
            let view = view(&mut boxed);
            // SAFETY: `Storage` is large and aligned enough for a `Box` (one pointer).
            unsafe { slot.cast::<Box<B>>().write(boxed) };
            view
        } else {
            // SAFETY: `inline::<B>()` checked that `Storage` is large and aligned enough.
            unsafe { slot.cast::<B>().write(buf) };
            // SAFETY: just written, and `value` is not moved until the view is read.
            let stored = unsafe { &mut *slot.cast::<B>() };
            view(stored)
        };
        // Moving `value` (into the returned `RawBuf`) moves the inline `B`, which leaves its
        // pointer valid: `PTR_SURVIVES_MOVE`, checked by `inline::<B>()` (the IoBuf contract).
        let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        RawBuf {
            ptr,
            init: clamp(init),
            total: clamp(total),
            value,
            drop: drop_value::<B>,
            #[cfg(debug_assertions)]
            type_id: TypeId::of::<B>(),
        }
    }

    /// Takes the value back.
    ///
    /// # Safety
    ///
    /// `B` is the type this `RawBuf` was made from.
    pub(crate) unsafe fn into_value<B: IoBuf>(self) -> B {
        #[cfg(debug_assertions)]
        assert_eq!(
            self.type_id,
            TypeId::of::<B>(),
            "a RawBuf taken back as another type"
        );
        let this = ManuallyDrop::new(self);
        let slot = this.value.as_ptr();
        if !inline::<B>() {
            // SAFETY: the caller's contract and the type invariant: the storage holds a live
            // `Box<B>`, read out once (the `ManuallyDrop` keeps `Drop` from dropping it again).
            *unsafe { slot.cast::<Box<B>>().read() }
        } else {
            // SAFETY: as above, for a `B` held inline.
            unsafe { slot.cast::<B>().read() }
        }
    }

    /// Where the bytes start (a read writes there, a write sends from there).
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// How many bytes were initialized when the buffer was handed over (what a write sends).
    pub(crate) fn init(&self) -> usize {
        self.init as usize
    }

    /// How many bytes the buffer holds (what a read may fill).
    pub(crate) fn total(&self) -> usize {
        self.total as usize
    }

    /// The first `n` bytes, once the kernel initialized them.
    ///
    /// # Safety
    ///
    /// The first `n` bytes are initialized (`n <= total`) and nothing writes them meanwhile.
    pub(crate) unsafe fn filled(&self, n: usize) -> &[u8] {
        debug_assert!(n <= self.total());
        // SAFETY: the caller's contract; `ptr` is valid for `total` bytes (type invariant).
        unsafe { std::slice::from_raw_parts(self.ptr, n) }
    }
}

impl Drop for RawBuf {
    fn drop(&mut self) {
        // SAFETY: the type invariant: the storage holds one live value of the recorded type,
        // dropped exactly once here (`into_value` skips this drop).
        unsafe { (self.drop)(&mut self.value) };
    }
}
