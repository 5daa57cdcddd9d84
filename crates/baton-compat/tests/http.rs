//! End to end: the example HTTP server (`examples/shared/http_app.rs`), run in-process on its
//! own Baton runtime thread, fetched from with `curl` and with hyper's client on Baton.

#[path = "../examples/shared/http_app.rs"]
mod http_app;
#[path = "../examples/shared/http_fetch.rs"]
mod http_fetch;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use http_app::{Config, Protocol, Stats};
use hyper::StatusCode;

/// A server on its own thread and runtime; it lives until the test process ends.
fn start_server(protocol: Protocol, header_read_timeout: Duration) -> (SocketAddr, Arc<Stats>) {
    let config = Arc::new(Config {
        protocol,
        header_read_timeout,
        file: http_app::generated_file(http_app::GENERATED_FILE_LEN),
    });
    let stats = Arc::new(Stats::default());
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let server_stats = Arc::clone(&stats);
    std::thread::spawn(move || {
        let runtime = baton::Runtime::new().expect("the server's runtime builds");
        let result = runtime.block_on(async move {
            let listener = baton::net::TcpListener::bind("127.0.0.1:0")?;
            addr_tx
                .send(listener.local_addr()?)
                .map_err(std::io::Error::other)?;
            http_app::serve(listener, config, server_stats).await
        });
        panic!("the server stopped: {result:?}");
    });
    let addr = addr_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the server reports its address");
    (addr, stats)
}

fn expected_file() -> hyper::body::Bytes {
    http_app::generated_file(http_app::GENERATED_FILE_LEN)
}

/// Waits (bounded) until the server has counted `requests` answers: a client can see its last
/// response a moment before the server's counters move.
fn wait_for_requests(stats: &Stats, requests: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while stats.requests.load(Ordering::Relaxed) < requests && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(stats.requests.load(Ordering::Relaxed), requests);
}

/// Whether curl can be run; without it the curl tests skip loudly, except in CI (`CI=true`),
/// where `.ci/run` installs it and a missing curl is a failure.
fn curl_available() -> bool {
    let found = Command::new("curl")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "curl is missing in CI; .ci/run installs it"
        );
        eprintln!("SKIPPED: curl is not installed; these checks did not run");
    }
    found
}

fn curl(args: &[&str]) -> Vec<u8> {
    let out = Command::new("curl")
        .args(["--silent", "--show-error", "--fail", "--max-time", "30"])
        .args(args)
        .output()
        .expect("curl runs");
    assert!(
        out.status.success(),
        "curl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn curl_fetches_json_and_the_whole_file_over_http1_keep_alive() {
    if !curl_available() {
        return;
    }
    let (addr, stats) = start_server(Protocol::Http1, Duration::from_secs(10));
    let json = format!("http://{addr}/json");
    let file = format!("http://{addr}/file");
    assert_eq!(curl(&[&json]), http_app::JSON_BODY.as_bytes());
    assert!(curl(&[&file]) == expected_file(), "the file differs");
    // Three URLs in one curl run share one keep-alive connection.
    let both = curl(&[&json, &file, &json]);
    let mut expected = http_app::JSON_BODY.as_bytes().to_vec();
    expected.extend_from_slice(&expected_file());
    expected.extend_from_slice(http_app::JSON_BODY.as_bytes());
    assert!(both == expected, "the keep-alive bodies differ");
    wait_for_requests(&stats, 5);
    assert_eq!(stats.connections.load(Ordering::Relaxed), 3);
    assert_eq!(stats.errors.load(Ordering::Relaxed), 0);
}

#[test]
fn curl_fetches_over_http2_prior_knowledge() {
    if !curl_available() {
        return;
    }
    let supports_http2 = Command::new("curl")
        .arg("--version")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("HTTP2"));
    if !supports_http2 {
        eprintln!("SKIPPED: this curl is built without HTTP/2");
        return;
    }
    let (addr, stats) = start_server(Protocol::Http2, Duration::from_secs(10));
    let json = format!("http://{addr}/json");
    let file = format!("http://{addr}/file");
    // One URL per run: curl 7.88 fails a second prior-knowledge request on a reused
    // connection with "Error in the HTTP2 framing layer" against tokio + hyper-util as well.
    let out = curl(&["--http2-prior-knowledge", &json]);
    assert_eq!(out, http_app::JSON_BODY.as_bytes());
    let out = curl(&["--http2-prior-knowledge", &file]);
    assert!(out == expected_file(), "the http2 file differs");
    wait_for_requests(&stats, 2);
    assert_eq!(stats.errors.load(Ordering::Relaxed), 0);
}

#[test]
fn sixty_four_keep_alive_connections_each_fetch_json_and_the_file() {
    const CONNECTIONS: usize = 64;
    const JSON_PER_CONNECTION: usize = 16;
    let (addr, stats) = start_server(Protocol::Http1, Duration::from_secs(10));
    let runtime = baton::Runtime::new().expect("the client's runtime builds");
    runtime.block_on(async move {
        let clients: Vec<_> = (0..CONNECTIONS)
            .map(|_| {
                baton::spawn(async move {
                    let (mut sender, connection) = http_fetch::connect(addr).await?;
                    for _ in 0..JSON_PER_CONNECTION {
                        let (status, body) = http_fetch::get(&mut sender, addr, "/json").await?;
                        assert_eq!(status, StatusCode::OK);
                        assert_eq!(body, http_app::JSON_BODY.as_bytes());
                    }
                    let (status, body) = http_fetch::get(&mut sender, addr, "/file").await?;
                    assert_eq!(status, StatusCode::OK);
                    assert!(body == expected_file(), "the 1 MiB file differs");
                    drop(sender);
                    connection.await??;
                    Ok::<_, http_fetch::FetchError>(())
                })
            })
            .collect();
        for client in clients {
            client
                .await
                .expect("the client task ran to its end")
                .expect("every request succeeded");
        }
    });
    wait_for_requests(&stats, (CONNECTIONS * (JSON_PER_CONNECTION + 1)) as u64);
    assert_eq!(
        stats.connections.load(Ordering::Relaxed),
        CONNECTIONS as u64
    );
    assert_eq!(stats.errors.load(Ordering::Relaxed), 0);
}

/// hyper's `header_read_timeout` runs on `baton_compat::hyper::Timer`: a client that sends a
/// partial head, or nothing, is closed once it passes.
#[test]
fn header_read_timeout_closes_silent_and_partial_clients() {
    let timeout = Duration::from_millis(300);
    let (addr, stats) = start_server(Protocol::Http1, timeout);
    for first_bytes in [&b"GET /json HTTP/1.1\r\nHo"[..], &b""[..]] {
        let started = Instant::now();
        let mut client = std::net::TcpStream::connect(addr).expect("connects");
        client
            .write_all(first_bytes)
            .expect("the partial head is sent");
        // A hang guard, not a speed claim: a server that never closes fails the read.
        client
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("a read timeout can be set");
        let mut rest = Vec::new();
        // The server closes: end of stream (hyper may first answer 408 to a partial head).
        client
            .read_to_end(&mut rest)
            .expect("the server closed the connection before the 60 s read timeout");
        let waited = started.elapsed();
        assert!(
            waited >= timeout,
            "closed after {waited:?}, before the timeout"
        );
        assert!(
            rest.is_empty() || rest.starts_with(b"HTTP/1.1 408"),
            "unexpected reply {:?}",
            String::from_utf8_lossy(&rest)
        );
    }
    // The server counts a connection's end after closing it: wait (bounded) for both counts.
    let deadline = Instant::now() + Duration::from_secs(60);
    while stats.header_timeouts.load(Ordering::Relaxed) + stats.errors.load(Ordering::Relaxed) < 2
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(stats.header_timeouts.load(Ordering::Relaxed), 2);
    assert_eq!(stats.errors.load(Ordering::Relaxed), 0);
}

/// A client that reads a whole 1 MiB response and closes at once: the server's last write and
/// the end of the stream complete together, and hyper must still see an idle connection (M5 in
/// `baton_compat`'s docs), so no connection error is counted. Repeated to hit the race.
#[test]
fn clients_closing_right_after_a_large_response_are_not_errors() {
    const ROUNDS: u64 = 30;
    let (addr, stats) = start_server(Protocol::Http1, Duration::from_secs(10));
    let expected = expected_file();
    for _ in 0..ROUNDS {
        let mut client = std::net::TcpStream::connect(addr).expect("connects");
        client
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("a read timeout can be set");
        client
            .write_all(b"GET /file HTTP/1.1\r\nHost: test\r\n\r\n")
            .expect("the request is sent");
        let mut response = Vec::new();
        let mut chunk = vec![0u8; 64 * 1024];
        let head_end = loop {
            let count = client.read(&mut chunk).expect("the response arrives");
            assert!(count > 0, "the server closed before the whole response");
            response.extend_from_slice(&chunk[..count]);
            if let Some(end) = response.windows(4).position(|w| w == b"\r\n\r\n")
                && response.len() >= end + 4 + expected.len()
            {
                break end + 4;
            }
        };
        assert!(response.starts_with(b"HTTP/1.1 200"));
        assert!(response[head_end..] == expected[..], "the file differs");
        drop(client);
    }
    wait_for_requests(&stats, ROUNDS);
    // Let the server see the last close before reading its error count.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(stats.errors.load(Ordering::Relaxed), 0);
}
