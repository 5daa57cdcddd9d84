//! The shape every foreign-trait impl here shares: the bounds of a stream a [`Compat`] wraps,
//! and the write and buffered-read methods, which forward to [`Compat`]'s own.
//!
//! [`Compat`]: crate::Compat

/// `impl<S: CompatIo> $trait for $ty where S's engine is $side`, holding `$items`: a foreign
/// read trait for a stream that reads (`$side` is `EngineRead`), a write trait for one that
/// writes (`EngineWrite`).
macro_rules! impl_for_stream {
    ($side:ident: $trait:path => $ty:ty { $($items:tt)* }) => {
        impl<S: $crate::CompatIo> $trait for $ty
        where
            S::Engine: $crate::engine::$side,
        {
            $($items)*
        }
    };
}

/// A foreign write trait's `poll_write`, `poll_write_vectored`, `poll_flush` and shutdown
/// (`$shutdown`: tokio's and hyper's `poll_shutdown`, futures' `poll_close`), forwarded to the
/// [`Compat`](crate::Compat) that `$compat` reaches from `$this` (the `&mut Self`); with
/// `vectored`, also `is_write_vectored` (tokio's and hyper's: hyper then hands a response's
/// head and body over as separate buffers instead of copying the body into its head buffer).
macro_rules! forward_writes {
    (|$this:ident| $compat:expr, vectored, $(#[$attr:meta])* $shutdown:ident) => {
        fn is_write_vectored(&self) -> bool {
            true
        }

        forward_writes!(|$this| $compat, $(#[$attr])* $shutdown);
    };
    (|$this:ident| $compat:expr, $(#[$attr:meta])* $shutdown:ident) => {
        fn poll_write(
            self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            let $this = self.get_mut();
            $compat.poll_write_slice(cx, buf)
        }

        fn poll_write_vectored(
            self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            bufs: &[std::io::IoSlice<'_>],
        ) -> std::task::Poll<std::io::Result<usize>> {
            let $this = self.get_mut();
            $compat.poll_write_vectored(cx, bufs)
        }

        fn poll_flush(
            self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            let $this = self.get_mut();
            $compat.poll_flush(cx)
        }

        $(#[$attr])*
        fn $shutdown(
            self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            let $this = self.get_mut();
            $compat.poll_shutdown(cx)
        }
    };
}

/// A foreign `AsyncBufRead`'s `poll_fill_buf` and `consume`, forwarded to the
/// [`Compat`](crate::Compat) itself.
#[cfg(any(feature = "tokio-io", feature = "futures-io"))]
macro_rules! forward_buf_read {
    () => {
        fn poll_fill_buf(
            self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<&[u8]>> {
            self.get_mut().poll_fill_buf(cx)
        }

        fn consume(self: std::pin::Pin<&mut Self>, amt: usize) {
            self.get_mut().consume(amt);
        }
    };
}

#[cfg(any(feature = "tokio-io", feature = "futures-io"))]
pub(crate) use forward_buf_read;
pub(crate) use {forward_writes, impl_for_stream};
