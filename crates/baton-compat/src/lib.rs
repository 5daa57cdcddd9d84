//! Baton's door to the ecosystem: code written against tokio's or `futures`' I/O traits, or
//! against hyper 1.x, runs on Baton's owned-buffer streams.
//!
//! # What it is for
//!
//! Baton's streams take and return owned buffers (`read(buf) -> (io::Result<usize>, buf)`),
//! because the kernel reads and writes them while the request is in flight. The ecosystem's
//! traits lend a buffer for one `poll` instead. [`Compat`] bridges the two the way
//! readiness-based runtimes do, through [`baton::io::PollIo`]: the lent buffer goes straight
//! to a non-blocking `recv` or `sendmsg`, and when the socket has nothing to read (or no room)
//! a one-shot readiness request on Baton's ring waits for it. No byte is copied through a
//! buffer of the adapter's, and no operation future is boxed per call.
//!
//! - feature `tokio-io`: `Compat<S>` is `tokio::io::{AsyncRead, AsyncWrite}` (tokio's traits
//!   only; no tokio runtime is started or needed).
//! - feature `futures-io`: `Compat<S>` is `futures_io::{AsyncRead, AsyncWrite}`.
//! - feature `hyper`: [`hyper::Io`], [`hyper::Executor`] and [`hyper::Timer`] implement
//!   `hyper::rt`'s traits, so hyper's client and server connections run on Baton.
//!
//! # What it guarantees (the compat rules, M)
//!
//! M1. **Reads are cancel-safe at the poll level.** A read takes bytes only in a synchronous
//!    call that hands them to the caller (or, for `poll_fill_buf`, into the `Compat`'s buffer,
//!    kept for the next call); the readiness wait of a read that found nothing holds no data,
//!    so stopping between polls loses nothing. Bytes that a cancelled owned-buffer read of the
//!    same socket left behind come first (Baton's stash rule S4).
//! M2. **An accepted write is the kernel's.** `poll_write` returns `Ok(n)` once the kernel took
//!    `n` bytes (a short count when the socket buffer is full; the caller writes the rest);
//!    nothing is held back, so `poll_flush` has nothing to wait for, and dropping the `Compat`
//!    loses no accepted byte.
//! M3. **A read and a write may wait at once** (full duplex, as hyper needs): each has its own
//!    readiness wait. `S` is one of Baton's stream sockets (`TcpStream`, `UnixStream`); the
//!    owned halves of `into_split` and child stdio are not wrapped: wrap the whole stream and
//!    split the `Compat` with `tokio::io::split` or `futures::AsyncReadExt::split` instead.
//! M4. **`poll_shutdown` after the peer closed or reset is `Ok`** (Baton's `shutdown` maps
//!    `ENOTCONN` to `Ok`).
//! M5. **The end of the stream comes after the writes before it.** Writes are done when they
//!    return (M2), so a read that finds the end of the stream can never overtake one: a peer
//!    that closes right after reading a whole response is not seen closing "mid-message" by
//!    hyper's http1 dispatcher, which reads before it flushes.
//!
//! Cost: a read or write that can go at once is one system call, as on a readiness-based
//! runtime; one that must wait adds one ring request (`IORING_OP_POLL_ADD`), boxed once per
//! wait. The read buffer (16 KiB) is allocated only by `poll_fill_buf` (`AsyncBufRead`)
//! callers. A `Compat` is `Send` and `Unpin` (so it can move into `baton::spawn`ed tasks and be
//! polled through `Pin::new`) but not `Sync`: its in-flight waits are not.
//!
//! # How it is tested
//!
//! Unit tests (`src/tests/`) drive `Compat` over real TCP sockets on a Baton runtime: small
//! caller buffers reassembling a large body, a read abandoned mid-wait and then resumed with a
//! write passing it, bytes a cancelled owned-buffer read left behind coming first, a 1 MiB
//! write through flush and shutdown, vectored writes in order, writes failing after a reset
//! with `shutdown` still `Ok`, lines through `AsyncBufRead`, and echoes through tokio's and
//! futures' `split`/`copy`. `tests/http.rs` runs the example HTTP server in-process and
//! fetches from it with `curl` (http1 and h2c) and with hyper's client on Baton: JSON, a 1 MiB
//! file checked byte for byte, 64 concurrent keep-alive connections, clients closing right
//! after a large response (M5), and hyper's header-read timeout firing through
//! [`hyper::Timer`]; every run asserts zero connection errors on the server.
//! `docs/ecosystem.md`'s examples run as doc tests.

mod compat;
#[cfg(feature = "futures-io")]
mod futures_io;
#[cfg(feature = "hyper")]
pub mod hyper;
#[cfg(feature = "tokio-io")]
mod tokio_io;

pub use compat::{Compat, CompatExt};

#[cfg(test)]
mod tests;

/// `docs/ecosystem.md`'s examples, run as doc tests so the page stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/ecosystem.md")]
struct EcosystemDocs;
