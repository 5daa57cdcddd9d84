//! End to end: TCP socket set-up — the `TcpSocket` builder, options on listeners and streams,
//! the listen backlog, ports released on drop, and name resolution off the worker.

use std::io;
use std::net::{Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use baton::net::{TcpListener, TcpSocket, TcpStream};
use baton_tests::on_runtime;

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn ipv6_loopback_available() -> bool {
    std::net::TcpListener::bind((Ipv6Addr::LOCALHOST, 0)).is_ok()
}

#[test]
fn the_builder_sets_every_option_before_bind_and_listen() -> io::Result<()> {
    on_runtime(async {
        let socket = TcpSocket::new_v4()?;
        socket.set_reuseaddr(true)?;
        socket.set_reuseport(true)?;
        socket.set_keepalive(true)?;
        socket.set_linger(Some(Duration::from_secs(3)))?;
        socket.set_send_buffer_size(64 * 1024)?;
        socket.set_recv_buffer_size(64 * 1024)?;
        socket.set_ttl(33)?;
        socket.set_nodelay(true)?;
        assert!(socket.reuseaddr()? && socket.reuseport()? && socket.keepalive()?);
        assert_eq!(socket.linger()?, Some(Duration::from_secs(3)));
        // Linux doubles the value set, for its bookkeeping.
        assert!(socket.send_buffer_size()? >= 64 * 1024);
        assert!(socket.recv_buffer_size()? >= 64 * 1024);
        assert_eq!(socket.ttl()?, 33);
        assert!(socket.nodelay()?);
        socket.bind(loopback(0))?;
        let addr = socket.local_addr()?;
        let listener = socket.listen(64)?;
        assert_eq!(listener.local_addr()?, addr);
        assert!(
            listener.reuseport()?,
            "the listener reads the options set on its socket"
        );

        // SO_REUSEPORT lets a second socket listen on the same port.
        let twin = TcpSocket::new_v4()?;
        twin.set_reuseport(true)?;
        twin.bind(addr)?;
        let twin = twin.listen(64)?;
        assert_eq!(twin.local_addr()?, addr);

        let client = TcpSocket::new_v4()?;
        client.set_nodelay(true)?;
        let stream = client.connect(addr).await?;
        assert!(stream.nodelay()?);
        assert_eq!(stream.peer_addr()?, addr);
        Ok(())
    })
}

#[test]
fn options_are_readable_and_settable_on_listeners_and_streams() -> io::Result<()> {
    on_runtime(async {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        assert!(
            listener.reuseaddr()?,
            "bind sets SO_REUSEADDR, as std and tokio"
        );
        listener.set_ttl(20)?;
        assert_eq!(listener.ttl()?, 20);
        let client = TcpStream::connect(listener.local_addr()?).await?;
        let (server, _) = listener.accept().await?;
        for stream in [&client, &server] {
            stream.set_nodelay(true)?;
            assert!(stream.nodelay()?);
            stream.set_keepalive(true)?;
            assert!(stream.keepalive()?);
            stream.set_linger(None)?;
            assert_eq!(stream.linger()?, None);
            stream.set_ttl(42)?;
            assert_eq!(stream.ttl()?, 42);
            stream.set_send_buffer_size(32 * 1024)?;
            assert!(stream.send_buffer_size()? >= 32 * 1024);
            stream.set_recv_buffer_size(32 * 1024)?;
            assert!(stream.recv_buffer_size()? >= 32 * 1024);
        }
        let std_stream = std::net::TcpStream::connect(listener.local_addr()?)?;
        assert_eq!(
            client.set_ttl(1000).map_err(|e| e.kind()),
            std_stream.set_ttl(1000).map_err(|e| e.kind()),
            "an out-of-range TTL fails as std's"
        );
        assert_eq!(
            client.only_v6().map_err(|e| e.kind()),
            socket2_free_only_v6(&std_stream),
            "IPV6_V6ONLY on an IPv4 socket fails as the OS says"
        );
        Ok(())
    })
}

/// `getsockopt(IPV6_V6ONLY)` on a std socket, through libc (std has no getter for it).
fn socket2_free_only_v6(stream: &std::net::TcpStream) -> Result<bool, io::ErrorKind> {
    use std::os::fd::AsRawFd;
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `value` and `len` are valid for writes of the sizes given, for the call.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_IPV6,
            libc::IPV6_V6ONLY,
            (&raw mut value).cast(),
            &raw mut len,
        )
    };
    if rc == 0 {
        Ok(value != 0)
    } else {
        Err(io::Error::last_os_error().kind())
    }
}

#[test]
fn only_v6_is_settable_on_an_ipv6_socket_before_bind() -> io::Result<()> {
    if !ipv6_loopback_available() {
        eprintln!("skipped: no IPv6 loopback on this machine");
        return Ok(());
    }
    on_runtime(async {
        let socket = TcpSocket::new_v6()?;
        socket.set_only_v6(true)?;
        assert!(socket.only_v6()?);
        socket.bind(SocketAddr::from((Ipv6Addr::LOCALHOST, 0)))?;
        let listener = socket.listen(16)?;
        let stream = TcpStream::connect(listener.local_addr()?).await?;
        assert!(stream.peer_addr()?.is_ipv6());
        Ok(())
    })
}

#[test]
fn a_listener_dropped_with_an_accept_in_flight_frees_its_port_at_once() -> io::Result<()> {
    on_runtime(async {
        let mut port = 0;
        for round in 0..100 {
            let listener = TcpListener::bind(loopback(port)).map_err(|err| {
                io::Error::new(err.kind(), format!("round {round}: re-bind failed: {err}"))
            })?;
            port = listener.local_addr()?.port();
            // The accept is in the kernel when its timeout drops it: the cancel is still on
            // its way when the listener is dropped.
            let accept = baton::time::timeout(Duration::from_millis(1), listener.accept()).await;
            assert!(accept.is_err(), "nobody connects");
            drop(listener);
        }
        Ok(())
    })
}

#[test]
fn a_listener_closed_by_the_runtime_s_shutdown_or_drop_frees_its_port() -> io::Result<()> {
    for dropped in [false, true] {
        let rt = baton::Runtime::new()?;
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let accepting = rt.spawn(async move { listener.accept().await.map(drop) });
        rt.block_on(baton::time::sleep(Duration::from_millis(20)));
        assert!(!accepting.is_finished());
        if dropped {
            drop(rt);
        } else {
            let report = rt.shutdown_timeout(Duration::from_secs(5));
            assert!(report.is_clean(), "{report:?}");
        }
        std::net::TcpListener::bind(addr)
            .map_err(|err| io::Error::new(err.kind(), format!("dropped {dropped}: {err}")))?;
    }
    Ok(())
}

#[test]
fn bind_listens_with_a_backlog_of_1024() -> io::Result<()> {
    // Connections the kernel completes before anyone accepts: the backlog plus one (capped by
    // the system's somaxconn); past them, SYNs are dropped and clients wait on retransmits.
    let somaxconn: usize = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(4096);
    let expected = 1024.min(somaxconn) + 1;
    let attempts = expected + 200;
    on_runtime(async {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let connected = Arc::new(AtomicUsize::new(0));
        let mut clients = Vec::with_capacity(attempts);
        for _ in 0..attempts {
            let connected = Arc::clone(&connected);
            clients.push(baton::spawn(async move {
                if let Ok(stream) = TcpStream::connect(addr).await {
                    connected.fetch_add(1, Ordering::SeqCst);
                    // Held until the count is read (the client is aborted then).
                    std::future::pending::<()>().await;
                    drop(stream);
                }
            }));
        }
        // Only a hang guard: the loop ends as soon as the expected connects completed.
        let deadline = Instant::now() + Duration::from_secs(60);
        while connected.load(Ordering::SeqCst) < expected && Instant::now() < deadline {
            baton::time::sleep(Duration::from_millis(20)).await;
        }
        let completed = connected.load(Ordering::SeqCst);
        for client in &clients {
            client.abort();
        }
        assert!(
            completed >= expected,
            "only {completed} of {attempts} connects completed without an accept; \
             a backlog of 1024 completes {expected}"
        );
        drop(listener);
        Ok(())
    })
}

/// A resolver that answers `name`s once `wait` returned `Ok`, counting its calls.
fn gated_resolver(
    wait: impl Fn() -> io::Result<()> + Send + Sync + 'static,
    answers: Vec<SocketAddr>,
    calls: Arc<AtomicUsize>,
) -> impl Fn(&str, u16) -> io::Result<Vec<SocketAddr>> + Send + Sync + 'static {
    move |host, port| {
        calls.fetch_add(1, Ordering::SeqCst);
        wait()?;
        match host {
            "service.test" => Ok(answers
                .iter()
                .map(|a| SocketAddr::new(a.ip(), if a.port() == 0 { port } else { a.port() }))
                .collect()),
            _ => Err(io::Error::new(io::ErrorKind::NotFound, "unknown host")),
        }
    }
}

/// A resolver that answers at once.
fn instant_resolver(
    answers: Vec<SocketAddr>,
    calls: Arc<AtomicUsize>,
) -> impl Fn(&str, u16) -> io::Result<Vec<SocketAddr>> + Send + Sync + 'static {
    gated_resolver(|| Ok(()), answers, calls)
}

/// The lookup blocks in the resolver until the test has seen `TICKS` timer ticks beside it
/// and releases it. A lookup run on the worker would hold the worker, so no tick could
/// complete: the resolver gives up after `RELEASE_BOUND` (instead of hanging) with an error,
/// and the connect ends with it before the ticks did, which fails the test.
#[test]
fn a_slow_resolver_does_not_delay_a_timer_running_beside_it() -> io::Result<()> {
    const TICKS: usize = 20;
    const RELEASE_BOUND: Duration = Duration::from_secs(60);
    let calls = Arc::new(AtomicUsize::new(0));
    let (release, released) = crossbeam_channel::bounded::<()>(1);
    let rt = baton::Builder::new()
        .resolver(gated_resolver(
            // Also gives up at once if the test failed (and dropped `release`).
            move || {
                released.recv_timeout(RELEASE_BOUND).map_err(|_| {
                    io::Error::new(io::ErrorKind::TimedOut, "the lookup was never released")
                })
            },
            vec![loopback(0)],
            Arc::clone(&calls),
        ))
        .build()?;
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let connect = baton::spawn(TcpStream::connect(("service.test", port)));
        for tick in 0..TICKS {
            baton::time::sleep(Duration::from_millis(5)).await;
            assert!(
                !connect.is_finished(),
                "the connect ended before the lookup was released, at tick {tick}: \
                 the lookup held the worker until the resolver gave up"
            );
        }
        release.send(()).map_err(io::Error::other)?;
        let stream = connect.await.map_err(io::Error::other)??;
        let (_server, peer) = listener.accept().await?;
        assert_eq!(peer, stream.local_addr()?);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        Ok(())
    })
}

#[test]
fn connect_tries_each_resolved_address_in_order_and_returns_the_last_error() -> io::Result<()> {
    let closed = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0")?;
        probe.local_addr()?
    };
    let open = std::net::TcpListener::bind("127.0.0.1:0")?;
    let other = std::net::TcpListener::bind("127.0.0.1:0")?;
    let calls = Arc::new(AtomicUsize::new(0));
    let rt = baton::Builder::new()
        .resolver(instant_resolver(
            vec![closed, open.local_addr()?, other.local_addr()?],
            Arc::clone(&calls),
        ))
        .build()?;
    rt.block_on(async {
        let stream = TcpStream::connect("service.test:1").await?;
        assert_eq!(
            stream.peer_addr()?,
            open.local_addr()?,
            "the first address that accepts, in the resolver's order"
        );
        let err = TcpStream::connect("nowhere.test:1").await.err();
        assert_eq!(err.map(|e| e.kind()), Some(io::ErrorKind::NotFound));
        let addrs: Vec<_> = baton::net::lookup_host("service.test:7").await?.collect();
        assert_eq!(addrs[0], closed);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        // IP literals never reach the resolver.
        let _ = baton::net::lookup_host("127.0.0.1:9").await?;
        let _ = baton::net::lookup_host(("::1", 9)).await?;
        let err = TcpStream::connect(closed).await.err();
        assert_eq!(
            err.map(|e| e.kind()),
            Some(io::ErrorKind::ConnectionRefused)
        );
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        io::Result::Ok(())
    })?;

    let only_closed = baton::Builder::new()
        .resolver(instant_resolver(vec![closed, closed], calls))
        .build()?;
    only_closed.block_on(async {
        let err = TcpStream::connect("service.test:1").await.err();
        assert_eq!(
            err.map(|e| e.kind()),
            Some(io::ErrorKind::ConnectionRefused)
        );
        Ok(())
    })
}

#[test]
fn address_strings_fail_as_std_parses_them() -> io::Result<()> {
    on_runtime(async {
        for input in ["no port", "127.0.0.1:99999", "127.0.0.1:port"] {
            let std_kind = std::net::ToSocketAddrs::to_socket_addrs(input)
                .err()
                .map(|e| e.kind());
            let ours = baton::net::lookup_host(input).await.err().map(|e| e.kind());
            assert_eq!(ours, std_kind, "{input:?}");
            let bind = TcpListener::bind(input).err().map(|e| e.kind());
            assert_eq!(bind, std_kind, "bind {input:?}");
        }
        let empty: &[SocketAddr] = &[];
        let err = TcpStream::connect(empty).await.err();
        assert_eq!(err.map(|e| e.kind()), Some(io::ErrorKind::InvalidInput));
        Ok(())
    })
}
