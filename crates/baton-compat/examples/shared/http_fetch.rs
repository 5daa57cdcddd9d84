//! An HTTP/1.1 client connection on Baton (hyper's `client::conn::http1` over
//! `baton_compat::hyper::Io`), shared by `examples/http_client.rs` and `tests/http.rs`.

use std::net::SocketAddr;

use baton::net::TcpStream;
use baton_compat::hyper::Io;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::header::HOST;
use hyper::{Request, StatusCode};

/// Any error of a fetch.
pub(crate) type FetchError = Box<dyn std::error::Error + Send + Sync>;

/// The connection's task: it ends (with the connection's result) once the sender is dropped.
pub(crate) type ConnectionTask = baton::JoinHandle<Result<(), hyper::Error>>;

/// One keep-alive connection to `addr`: requests go through the returned sender, one at a time;
/// the connection itself runs as a Baton task until the sender is dropped.
pub(crate) async fn connect(
    addr: SocketAddr,
) -> Result<(SendRequest<Empty<Bytes>>, ConnectionTask), FetchError> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(Io::new(stream)).await?;
    Ok((sender, baton::spawn(connection)))
}

/// `GET path` on `sender`'s connection: the status and the whole body.
pub(crate) async fn get(
    sender: &mut SendRequest<Empty<Bytes>>,
    addr: SocketAddr,
    path: &str,
) -> Result<(StatusCode, Bytes), FetchError> {
    sender.ready().await?;
    let request = Request::get(path)
        .header(HOST, addr.to_string())
        .body(Empty::<Bytes>::new())?;
    let response = sender.send_request(request).await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, body))
}
