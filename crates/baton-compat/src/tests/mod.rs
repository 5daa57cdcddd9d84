//! Unit tests of `Compat` over real sockets on a Baton runtime. The peer side of each test
//! uses Baton's own owned-buffer API, so a bug in `Compat` cannot hide on both ends.

#[cfg(feature = "futures-io")]
mod futures_io;
#[cfg(feature = "tokio-io")]
mod owned;
#[cfg(feature = "tokio-io")]
mod sides;
#[cfg(feature = "tokio-io")]
mod split;
#[cfg(feature = "hyper")]
mod timer;
#[cfg(feature = "tokio-io")]
mod tokio_io;

use std::future::Future;
use std::io;

use baton::io::AsyncReadExt;
use baton::net::{TcpListener, TcpStream};

/// hyper and `baton::spawn` need a transport that is `Send + Unpin + 'static`. Over a socket,
/// `Compat` is `Unpin` because every Baton socket and every operation it keeps is; over any
/// other stream, because the stream is never pinned in place (each call boxes it).
#[test]
fn compat_over_baton_streams_is_send_and_unpin() {
    fn check<T: Send + Unpin + 'static>() {}
    check::<crate::Compat<TcpStream>>();
    check::<crate::Compat<baton::net::UnixStream>>();
    check::<crate::Compat<baton::net::OwnedReadHalf<TcpStream>>>();
    check::<crate::Compat<baton::net::OwnedWriteHalf<baton::net::UnixStream>>>();
    check::<crate::Compat<baton::process::ChildStdin>>();
    check::<crate::Compat<baton::process::ChildStdout>>();
    check::<crate::Compat<baton::process::ChildStderr>>();
    check::<crate::Compat<baton::fs::File>>();
    check::<crate::Compat<baton::io::BufReader<TcpStream>>>();
    check::<crate::Compat<baton::io::BufWriter<baton::fs::File>>>();
    check::<crate::Compat<baton::io::Cursor<Vec<u8>>>>();
}

/// Runs `test` on a fresh runtime.
fn run<F: Future<Output = io::Result<()>>>(test: F) {
    let runtime = baton::Runtime::new().expect("a runtime with default settings builds");
    runtime.block_on(test).expect("the test's I/O succeeds");
}

/// A connected TCP pair on loopback: (the side wrapped in `Compat`, the peer).
async fn tcp_pair() -> io::Result<(TcpStream, TcpStream)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let connect = baton::spawn(async move { TcpStream::connect(addr).await });
    let (accepted, _) = listener.accept().await?;
    let connected = connect.await.map_err(io::Error::other)??;
    Ok((connected, accepted))
}

/// A recognisable body: a period (251) that divides no buffer size, so a misplaced chunk shows.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// Reads everything the peer sends until it closes.
async fn read_all(peer: &TcpStream) -> io::Result<Vec<u8>> {
    let (result, received) = (&mut &*peer).read_to_end(Vec::new()).await;
    result.map(|_| received)
}
