//! Baton's door to the ecosystem: code written against tokio's or `futures`' I/O traits, or
//! against hyper 1.x, runs on Baton's owned-buffer streams.
//!
//! # What it is for
//!
//! Baton's streams take and return owned buffers (`read(buf) -> (io::Result<usize>, buf)`),
//! because the kernel reads and writes them while the request is in flight. The ecosystem's
//! traits lend a buffer for one `poll` instead. [`Compat`] bridges the two: its reads are
//! receives on Baton's ring into one owned read buffer per stream, kept across polls and copied
//! out to the caller; a write of up to 16 KiB is copied into one owned write buffer and written
//! by the ring in the background, submitted together with the other connections' requests; a
//! larger write goes the way readiness-based runtimes write, through [`baton::io::PollWrite`]:
//! straight from the caller's buffers to a non-blocking `sendmsg`, a one-shot readiness request
//! on the ring waiting when the socket has no room — no copy of a large body.
//!
//! - feature `tokio-io`: `Compat<S>` is `tokio::io::{AsyncRead, AsyncBufRead, AsyncWrite}`
//!   (tokio's traits only; no tokio runtime is started or needed).
//! - feature `futures-io`: `Compat<S>` is `futures_io::{AsyncRead, AsyncBufRead, AsyncWrite}`.
//! - feature `hyper`: [`hyper::Io`], [`hyper::Executor`] and [`hyper::Timer`] implement
//!   `hyper::rt`'s traits, so hyper's client and server connections run on Baton.
//!
//! # What it guarantees (the compat rules, M)
//!
//! M1. **Reads are cancel-safe at the poll level.** A receive in flight stays in the `Compat`
//!    when the caller stops polling; its bytes are delivered by the next read, never lost.
//!    Bytes received beyond what the caller's buffer takes are kept for the next call.
//! M2. **An accepted write is written.** A write of up to 16 KiB returns `Ok(n)` once its
//!    bytes were copied into the write buffer and their write was started; the `Compat`
//!    finishes writing them (short writes are continued), `poll_flush` waits until they are all
//!    written, and an error from such a background write is returned by the next `poll_write`,
//!    `poll_flush` or `poll_shutdown`. A larger write returns `Ok(n)` once the kernel took `n`
//!    of its bytes (the caller writes the rest). Writes go out in the order they were accepted.
//!    Socket sends are retained, so dropping the `Compat` right after `write_all` still sends
//!    what was accepted (tokio code that returns without a flush keeps working); only when the
//!    kernel took part of a background write and the `Compat` is dropped before the rest was
//!    sent is that tail lost. Flush or shut down first when every byte matters, as hyper does.
//!    On any other stream (M6) the background write moves when the `Compat` is polled (the
//!    next write, read, flush or shutdown); when the `Compat` is dropped while it runs, a task
//!    of the current runtime finishes it, short writes continued, so `write_all(..).await?`
//!    then a drop delivers every byte to a child's stdin, as with tokio. Outside a runtime, or
//!    once it shuts down, the rest of such a write is lost; a `Compat` kept but not polled
//!    does not move the rest of a large write to a full pipe: flush it.
//! M3. **A read and a write may wait at once** on a socket (full duplex, as hyper needs): each
//!    has its own request in flight, and when both wait on the background write (a flush, and
//!    a read at the end of the stream, M5), its end wakes both, also with the halves of a split
//!    `Compat` in two tasks. The sockets are `TcpStream`, `UnixStream` and their borrowed
//!    and owned halves ([`CompatIo`] lists every type `Compat` wraps). The read traits are implemented when `S`
//!    reads, the write traits when it writes, so a read half's `Compat` is a reader only and a
//!    write half's a writer only.
//! M4. **`poll_shutdown` after the peer closed or reset is `Ok`** (Baton's `shutdown` maps
//!    `ENOTCONN` to `Ok`).
//! M5. **The end of the stream comes after the writes before it.** A read that finds the end of
//!    the stream while a background write is in flight waits for that write, then returns
//!    `Pending` once (waking itself) so the caller's next `poll_flush` sees the write done
//!    before its next read sees the end. Without this, a peer that closes right after reading a
//!    whole response is seen closing "mid-message" by hyper's http1 dispatcher, which reads
//!    before it flushes.
//! M6. **Any other Baton stream takes turns** (a child's piped stdio, a `File`, a
//!    `BufReader`, a `BufWriter`, a `Cursor<Vec<u8>>`): it is driven through its owned-buffer calls, one at a time, each
//!    holding the stream in a boxed future kept across polls (so M1 and M2 hold). A write waits
//!    for a read in flight to end and the reverse; the side that waits is woken when the call
//!    ends, also from another task. `poll_flush` runs the stream's own `flush` (a `BufWriter`
//!    writes its buffer out), `poll_shutdown` its `shutdown`. On a file or a cursor a write
//!    lands right after the bytes the caller read: bytes read ahead are put back first.
//!
//! Cost, on a socket: each receive and each small write copies its bytes once (their futures are kept
//! unboxed, so a request allocates nothing of its own); a large write is one system call when
//! the socket has room, plus one ring request (`IORING_OP_POLL_ADD`) per wait for room. The
//! read buffer is 16 KiB and the write buffer grows to the largest copied write (at most
//! 16 KiB), each allocated on first use. On any other stream, each call boxes one future and
//! copies its bytes once; a read asks for what the caller takes, at least 16 KiB, and a write
//! copies up to 1 MiB (on a file or a cursor, after moving the cursor back over what was read
//! ahead, M6). A `Compat`
//! is `Send` and `Unpin` (so it can move into `baton::spawn`ed tasks and be polled through
//! `Pin::new`) but not `Sync`: its in-flight futures are not.
//!
//! # How it is tested
//!
//! Unit tests (`src/tests/`) drive `Compat` over real TCP sockets, their halves and child
//! stdio on a Baton runtime: small
//! caller buffers reassembling a large body, a read abandoned mid-flight and then resumed with
//! a write passing it, owned-buffer reads cut short by timeouts interleaved with `Compat`
//! reads, a 1 MiB
//! write through flush and shutdown, vectored writes in order, writes failing after a reset
//! with `shutdown` still `Ok`, lines through `AsyncBufRead`, and echoes through tokio's and
//! futures' `split`/`copy`; and over files, buffered streams and cursors (M6): a 3 MiB file
//! round trip in uneven pieces, `tokio::io::copy` from a file to a socket, lines from a
//! buffered file, a flush reaching through a `BufWriter`, an abandoned buffered read resumed
//! with a write waiting on it, the two sides of tokio's `split` in two tasks both woken, a
//! refused file write failing with std's error, a write after a short file read landing right
//! after it, and 300 KB written to a child's stdin and dropped at once arriving whole. `tests/http.rs` runs the example HTTP server in-process and
//! fetches from it with `curl` (http1 and h2c) and with hyper's client on Baton: JSON, a 1 MiB
//! file checked byte for byte, 64 concurrent keep-alive connections, clients closing right
//! after a large response (M5), and hyper's header-read timeout firing through
//! [`hyper::Timer`]; every run asserts zero connection errors on the server.
//! `docs/ecosystem.md`'s examples run as doc tests.

mod compat;
mod engine;
mod forward;
#[cfg(feature = "futures-io")]
mod futures_io;
#[cfg(feature = "hyper")]
pub mod hyper;
mod owned;
mod read_buffer;
mod socket;
#[cfg(feature = "tokio-io")]
mod tokio_io;
mod waiters;

pub use compat::{Compat, CompatExt, CompatIo};

#[cfg(test)]
mod tests;

/// `docs/ecosystem.md`'s examples, run as doc tests so the page stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/ecosystem.md")]
struct EcosystemDocs;
