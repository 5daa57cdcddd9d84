//! Baton's door to the ecosystem: code written against tokio's or `futures`' I/O traits, or
//! against hyper 1.x, runs on Baton's owned-buffer streams.
//!
//! # What it is for
//!
//! Baton's streams take and return owned buffers (`read(buf) -> (io::Result<usize>, buf)`),
//! because the kernel reads and writes them while the request is in flight. The ecosystem's
//! traits lend a buffer for one `poll` instead. [`Compat`] bridges the two: it owns one read
//! buffer and one write buffer per stream and keeps the in-flight owned-buffer operation across
//! polls, copying between its buffers and the caller's.
//!
//! - feature `tokio-io`: `Compat<S>` is `tokio::io::{AsyncRead, AsyncWrite}` (tokio's traits
//!   only; no tokio runtime is started or needed).
//! - feature `futures-io`: `Compat<S>` is `futures_io::{AsyncRead, AsyncWrite}`.
//! - feature `hyper`: [`hyper::Io`], [`hyper::Executor`] and [`hyper::Timer`] implement
//!   `hyper::rt`'s traits, so hyper's client and server connections run on Baton.
//!
//! # What it guarantees (the compat rules, M)
//!
//! M1. **Reads are cancel-safe at the poll level.** A read in flight stays in the `Compat` when
//!    the caller stops polling; its bytes are delivered by the next `poll_read`, never lost.
//!    Bytes read beyond what the caller's buffer takes are kept for the next call.
//! M2. **An accepted write is written.** `poll_write` returns `Ok(n)` once `n` bytes were copied
//!    into the write buffer and their write was started; the `Compat` finishes writing them
//!    (short writes are continued). `poll_flush` waits until they are all written. An error
//!    from such a background write is returned by the next `poll_write`, `poll_flush` or
//!    `poll_shutdown`. As with any write buffer, dropping the `Compat` before a flush may
//!    leave the tail of an accepted write unsent (the send already in the kernel completes;
//!    the rest of a short write is not continued): flush or shut down first, as hyper does.
//! M3. **A read and a write may be in flight at once** (full duplex, as hyper needs): each
//!    operation holds a shared reference to the stream, which Baton's sockets allow.
//!
//!    So `S` must read and write through `&S` (`TcpStream`, `UnixStream`). Types whose
//!    `baton::io::AsyncRead`/`AsyncWrite` need `&mut self`, such as the owned halves of
//!    `into_split` (and, later, child stdio), are not wrapped yet: wrap the whole stream and
//!    split the `Compat` with `tokio::io::split` or `futures::AsyncReadExt::split` instead.
//! M4. **`poll_shutdown` after the peer closed or reset is `Ok`** (Baton's `shutdown` maps
//!    `ENOTCONN` to `Ok`); it flushes first.
//! M5. **The end of the stream comes after the writes before it.** A read that finds the end of
//!    the stream while a write is in flight waits for that write, then returns `Pending` once
//!    (waking itself) so the caller's next `poll_flush` sees the write done before its next
//!    read sees the end. A flush here completes a poll later than on a readiness-based socket;
//!    without this, a peer that closes right after reading a whole response is seen closing
//!    "mid-message" by hyper's http1 dispatcher, which reads before it flushes.
//!
//! Cost: each read, write and shutdown boxes its future once (one allocation per operation,
//! not per poll); the buffers are allocated once per stream. A `Compat` is `Send` and `Unpin`
//! (so it can move into `baton::spawn`ed tasks and be polled through `Pin::new`) but not
//! `Sync`: its in-flight futures are not.
//!
//! # How it is tested
//!
//! Unit tests (`src/tests/`) drive `Compat` over real TCP sockets on a Baton runtime: small
//! caller buffers reassembling a large body, a read abandoned mid-flight and then resumed with
//! a write passing it, a 1 MiB write through flush and shutdown, writes failing after a reset
//! with `shutdown` still `Ok`, lines through `AsyncBufRead`, and echoes through tokio's and
//! futures' `split`/`copy`. `tests/http.rs` runs the example HTTP server in-process and
//! fetches from it with `curl` (http1 and h2c) and with hyper's client on Baton: JSON, a 1 MiB
//! file checked byte for byte, 64 concurrent keep-alive connections, clients closing right
//! after a large response (M5), and hyper's header-read timeout firing through
//! [`hyper::Timer`]; every run asserts zero connection errors on the server.
//! `docs/ecosystem.md`'s examples run as doc tests.

mod compat;
mod forward;
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
