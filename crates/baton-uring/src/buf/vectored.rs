//! Several owned buffers for one vectored request: [`IoVecBuf`] (a vectored write's sources)
//! and [`IoVecBufMut`] (a vectored read's destinations), for `Vec<B>` and `[B; N]`.

use super::{IoBuf, IoBufMut, RawBuf};

/// Buffers a vectored write sends, in order, each its initialized bytes. Implemented for
/// `Vec<B>` and `[B; N]` of any [`IoBuf`].
pub trait IoVecBuf: Send + 'static {
    /// The buffers as the driver keeps them. Not for callers: the operations use it.
    #[doc(hidden)]
    fn into_raw_bufs(self) -> Vec<RawBuf>;

    /// Rebuilds the buffers from what [`into_raw_bufs`](IoVecBuf::into_raw_bufs) (or
    /// [`IoVecBufMut::into_raw_bufs_mut`]) made.
    ///
    /// # Safety
    ///
    /// `raw` came from `Self`'s `into_raw_bufs` or `into_raw_bufs_mut`.
    #[doc(hidden)]
    unsafe fn from_raw_bufs(raw: Vec<RawBuf>) -> Self;

    /// Buffers standing in for the caller's when the driver could not give them back (see
    /// [`IoBuf::placeholder`]).
    fn placeholder() -> Self
    where
        Self: Sized;

    /// The initialized bytes of each buffer, in order (what a vectored write sends).
    fn io_slices(&self) -> Vec<&[u8]>;
}

/// Buffers a vectored read fills, in order, each from its beginning up to its capacity.
/// Implemented for `Vec<B>` and `[B; N]` of any [`IoBufMut`].
pub trait IoVecBufMut: IoVecBuf {
    /// The buffers as the driver keeps them, for writing. Not for callers.
    #[doc(hidden)]
    fn into_raw_bufs_mut(self) -> Vec<RawBuf>;

    /// After a vectored read of `n` bytes: the buffers in order hold them, each filled from
    /// its beginning; each one's initialized length becomes what it holds (0 for those the
    /// read did not reach).
    ///
    /// # Safety
    ///
    /// The kernel wrote `n` bytes across the buffers, in order, from the beginning of each.
    #[doc(hidden)]
    unsafe fn set_init_vectored(&mut self, n: usize);

    /// Copies `src` into the buffers in order, each from its beginning up to its capacity, as
    /// a vectored read would (each one's initialized length becomes what it got), and returns
    /// how many bytes were copied.
    fn fill_from(&mut self, src: &[u8]) -> usize;

    /// How many bytes the buffers hold together (what a vectored read may fill).
    fn io_capacity(&self) -> usize;
}

/// The initialized bytes of `buf`.
fn initialized<B: IoBuf>(buf: &B) -> &[u8] {
    // SAFETY: the IoBuf contract: `stable_ptr` is valid for `bytes_init` initialized bytes.
    unsafe { std::slice::from_raw_parts(buf.stable_ptr(), buf.bytes_init()) }
}

/// Copies `src` into `bufs` in order, as a vectored read would.
fn fill_in_order<'a, B: IoBufMut + 'a>(bufs: impl Iterator<Item = &'a mut B>, src: &[u8]) -> usize {
    let mut copied = 0;
    for buf in bufs {
        let n = (src.len() - copied).min(buf.bytes_total());
        // SAFETY: `buf` is valid for writes of `bytes_total() >= n` bytes (IoBufMut contract) and
        // does not overlap `src` (a `&[u8]` the caller holds while `buf` is borrowed mutably);
        // the first `n` bytes are initialized by the copy.
        unsafe {
            std::ptr::copy_nonoverlapping(src[copied..].as_ptr(), buf.stable_mut_ptr(), n);
            buf.set_init(n);
        }
        copied += n;
    }
    copied
}

/// Splits `n` bytes over `bufs` in order and records each one's share as initialized.
///
/// # Safety
///
/// As [`IoVecBufMut::set_init_vectored`].
unsafe fn spread<'a, B: IoBufMut + 'a>(bufs: impl Iterator<Item = &'a mut B>, mut n: usize) {
    for buf in bufs {
        let share = n.min(buf.bytes_total());
        // SAFETY: the caller's contract: the kernel filled this buffer's first `share` bytes.
        unsafe { buf.set_init(share) };
        n -= share;
    }
}

impl<B: IoBuf> IoVecBuf for Vec<B> {
    fn into_raw_bufs(self) -> Vec<RawBuf> {
        self.into_iter().map(RawBuf::new).collect()
    }

    unsafe fn from_raw_bufs(raw: Vec<RawBuf>) -> Self {
        // SAFETY: the caller's contract: each one came from a `B`.
        raw.into_iter().map(|r| unsafe { r.into_value() }).collect()
    }

    fn placeholder() -> Self {
        Vec::new()
    }

    fn io_slices(&self) -> Vec<&[u8]> {
        self.iter().map(initialized).collect()
    }
}

/// [`IoVecBufMut`] for a collection of owned [`IoBufMut`]s, the same for every one of them:
/// their raw buffers in order, `set_init_vectored` spread over them in order, and so on.
macro_rules! io_vec_buf_mut_in_order {
    ([$($generics:tt)*] $ty:ty) => {
        impl<$($generics)*> IoVecBufMut for $ty {
            fn into_raw_bufs_mut(self) -> Vec<RawBuf> {
                self.into_iter().map(RawBuf::new_mut).collect()
            }

            unsafe fn set_init_vectored(&mut self, n: usize) {
                // SAFETY: the caller's contract.
                unsafe { spread(self.iter_mut(), n) };
            }

            fn fill_from(&mut self, src: &[u8]) -> usize {
                fill_in_order(self.iter_mut(), src)
            }

            fn io_capacity(&self) -> usize {
                self.iter().map(IoBuf::bytes_total).sum()
            }
        }
    };
}

io_vec_buf_mut_in_order!([B: IoBufMut] Vec<B>);

impl<B: IoBuf, const N: usize> IoVecBuf for [B; N] {
    fn into_raw_bufs(self) -> Vec<RawBuf> {
        self.into_iter().map(RawBuf::new).collect()
    }

    unsafe fn from_raw_bufs(raw: Vec<RawBuf>) -> Self {
        // SAFETY: the caller's contract: `N` of them, each from a `B`.
        let bufs: Vec<B> = raw.into_iter().map(|r| unsafe { r.into_value() }).collect();
        match bufs.try_into() {
            Ok(array) => array,
            Err(_) => unreachable!("an array's raw buffers come back as many as went in"),
        }
    }

    fn placeholder() -> Self {
        std::array::from_fn(|_| B::placeholder())
    }

    fn io_slices(&self) -> Vec<&[u8]> {
        self.iter().map(initialized).collect()
    }
}

io_vec_buf_mut_in_order!([B: IoBufMut, const N: usize] [B; N]);
