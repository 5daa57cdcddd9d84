//! The example HTTP server's logic, shared by `examples/http_server.rs` and `tests/http.rs`
//! (which runs it in-process): hyper 1.x connections on Baton sockets, through
//! `baton_compat::hyper`'s `Io`, `Executor` and `Timer`.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use baton::net::{TcpListener, TcpStream};
use baton_compat::hyper::{Executor, Io, Timer};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};

/// The `/json` body.
pub(crate) const JSON_BODY: &str = r#"{"message":"Hello, World!","runtime":"baton"}"#;

/// The size of the generated `/file` body when no file is given.
pub(crate) const GENERATED_FILE_LEN: usize = 1 << 20;

/// A deterministic `len`-byte body (a test regenerates it to compare byte for byte); the
/// pattern's period (251, a prime) does not divide any buffer size, so a misplaced chunk shows.
pub(crate) fn generated_file(len: usize) -> Bytes {
    (0..len)
        .map(|i| (i % 251) as u8)
        .collect::<Vec<u8>>()
        .into()
}

/// Which HTTP version a server speaks (http2 is "prior knowledge", h2c without upgrade).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// HTTP/1.1 with keep-alive.
    Http1,
    /// HTTP/2 over cleartext, prior knowledge (`curl --http2-prior-knowledge`).
    Http2,
}

/// How the server runs.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    /// The protocol every connection speaks.
    pub(crate) protocol: Protocol,
    /// hyper's http1 `header_read_timeout`, fired through `baton_compat::hyper::Timer`.
    pub(crate) header_read_timeout: Duration,
    /// The `/file` body, held in memory (read or generated once at start).
    pub(crate) file: Bytes,
}

/// What the server saw; a test asserts on it.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    /// Connections accepted.
    pub(crate) connections: AtomicU64,
    /// Requests answered.
    pub(crate) requests: AtomicU64,
    /// Connections that ended with an error other than a header-read timeout.
    pub(crate) errors: AtomicU64,
    /// Connections closed by the header-read timeout.
    pub(crate) header_timeouts: AtomicU64,
}

/// Accepts on `listener` forever, one Baton task per connection. Errors of single connections
/// are counted in `stats` (and printed), never fatal; an accept error is.
pub(crate) async fn serve(
    listener: TcpListener,
    config: Arc<Config>,
    stats: Arc<Stats>,
) -> std::io::Result<()> {
    loop {
        let (stream, _peer) = listener.accept().await?;
        stats.connections.fetch_add(1, Ordering::Relaxed);
        let config = Arc::clone(&config);
        let stats = Arc::clone(&stats);
        drop(baton::spawn(async move {
            if let Err(error) = serve_connection(stream, &config, &stats).await {
                if error.is_timeout() {
                    stats.header_timeouts.fetch_add(1, Ordering::Relaxed);
                } else {
                    stats.errors.fetch_add(1, Ordering::Relaxed);
                    eprintln!("http_server: connection error: {error}");
                }
            }
        }));
    }
}

async fn serve_connection(
    stream: TcpStream,
    config: &Arc<Config>,
    stats: &Arc<Stats>,
) -> Result<(), hyper::Error> {
    stream.set_nodelay(true).ok();
    let service = service_fn(|request| {
        let response = respond(&request, &config.file);
        stats.requests.fetch_add(1, Ordering::Relaxed);
        async move { Ok::<_, Infallible>(response) }
    });
    match config.protocol {
        Protocol::Http1 => {
            hyper::server::conn::http1::Builder::new()
                .timer(Timer)
                .header_read_timeout(config.header_read_timeout)
                .serve_connection(Io::new(stream), service)
                .await
        }
        Protocol::Http2 => {
            hyper::server::conn::http2::Builder::new(Executor)
                .timer(Timer)
                .serve_connection(Io::new(stream), service)
                .await
        }
    }
}

fn respond(request: &Request<Incoming>, file: &Bytes) -> Response<Full<Bytes>> {
    let (body, content_type) = match request.uri().path() {
        "/json" => (Bytes::from_static(JSON_BODY.as_bytes()), "application/json"),
        "/file" => (file.clone(), "application/octet-stream"),
        _ => {
            let mut response = Response::new(Full::new(Bytes::from_static(b"not found\n")));
            *response.status_mut() = StatusCode::NOT_FOUND;
            return response;
        }
    };
    let mut response = Response::new(Full::new(body));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
