//! End to end: `baton::net::UdpSocket` on loopback — datagrams keep their boundaries, none is
//! lost in a lock-step exchange, receives are cancel-safe, and every error matches the kind
//! `std::net::UdpSocket` reports for the same input.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use baton::net::UdpSocket;
use baton_tests::on_runtime;

/// Bound of one exchange step: a lost datagram fails the test instead of hanging it.
const STEP: Duration = Duration::from_secs(10);

fn pair() -> io::Result<(UdpSocket, UdpSocket)> {
    Ok((
        UdpSocket::bind("127.0.0.1:0")?,
        UdpSocket::bind("127.0.0.1:0")?,
    ))
}

#[test]
fn ten_thousand_datagrams_ping_pong_with_none_lost() -> io::Result<()> {
    const ROUNDS: u64 = 10_000;
    on_runtime(async {
        let (client, server) = pair()?;
        let client_addr = client.local_addr()?;
        let server_addr = server.local_addr()?;
        let echo = baton::spawn(async move {
            let mut buf = Vec::with_capacity(64);
            for _ in 0..ROUNDS {
                let (res, got) = baton::time::timeout(STEP, server.recv_from(buf))
                    .await
                    .map_err(io::Error::other)?;
                let (n, from) = res?;
                assert_eq!((n, from), (8, client_addr));
                let (res, sent) = server.send_to(got, from).await;
                assert_eq!(res?, 8);
                buf = sent;
            }
            io::Result::Ok(())
        });
        let mut buf = Vec::with_capacity(64);
        for round in 0..ROUNDS {
            buf.clear();
            buf.extend_from_slice(&round.to_le_bytes());
            let (res, sent) = client.send_to(buf, server_addr).await;
            assert_eq!(res?, 8);
            let (res, got) = baton::time::timeout(STEP, client.recv_from(sent))
                .await
                .map_err(|_| io::Error::other(format!("datagram {round} was lost")))?;
            let (n, from) = res?;
            assert_eq!((n, from), (8, server_addr));
            assert_eq!(
                got[..],
                round.to_le_bytes(),
                "datagrams arrive in order, intact"
            );
            buf = got;
        }
        echo.await.map_err(io::Error::other)?
    })
}

#[test]
fn an_empty_datagram_is_sent_and_received_as_one() -> io::Result<()> {
    on_runtime(async {
        let (a, b) = pair()?;
        let (res, _) = a.send_to(Vec::new(), b.local_addr()?).await;
        assert_eq!(res?, 0, "a zero-length datagram is a valid send");
        a.send_to(b"after".to_vec(), b.local_addr()?).await.0?;
        let (res, _) = b.recv_from(Vec::with_capacity(16)).await;
        assert_eq!(res?, (0, a.local_addr()?));
        let (res, buf) = b.recv_from(Vec::with_capacity(16)).await;
        assert_eq!(res?.0, 5);
        assert_eq!(buf, b"after");
        Ok(())
    })
}

#[test]
fn a_datagram_larger_than_the_buffer_is_truncated_as_std_truncates_it() -> io::Result<()> {
    let payload: Vec<u8> = (0..100u8).collect();
    // What std does with the same datagram and a 10-byte buffer.
    let std_count = {
        let (a, b) = (
            std::net::UdpSocket::bind("127.0.0.1:0")?,
            std::net::UdpSocket::bind("127.0.0.1:0")?,
        );
        a.send_to(&payload, b.local_addr()?)?;
        let mut small = [0u8; 10];
        b.recv_from(&mut small)?.0
    };
    on_runtime(async {
        let (a, b) = pair()?;
        a.send_to(payload.clone(), b.local_addr()?).await.0?;
        a.send_to(b"next".to_vec(), b.local_addr()?).await.0?;
        let (res, buf) = b.recv_from(Vec::with_capacity(10)).await;
        assert_eq!(res?.0, std_count);
        assert_eq!(
            buf,
            payload[..10],
            "the datagram's head, the rest discarded"
        );
        let (res, buf) = b.recv_from(Vec::with_capacity(64)).await;
        assert_eq!(res?.0, 4);
        assert_eq!(buf, b"next", "the next datagram is intact");
        Ok(())
    })
}

#[test]
fn peek_from_leaves_the_datagram_for_the_next_receive() -> io::Result<()> {
    on_runtime(async {
        let (a, b) = pair()?;
        a.send_to(b"look".to_vec(), b.local_addr()?).await.0?;
        let (res, peeked) = b.peek_from(Vec::with_capacity(2)).await;
        assert_eq!(res?, (2, a.local_addr()?));
        assert_eq!(peeked, b"lo");
        assert_receives(&b, b"look", a.local_addr()?).await?;
        Ok(())
    })
}

#[test]
fn a_connected_socket_sends_to_and_receives_from_its_peer_only() -> io::Result<()> {
    on_runtime(async {
        let (a, b) = pair()?;
        let stranger = UdpSocket::bind("127.0.0.1:0")?;
        a.connect(b.local_addr()?).await?;
        assert_eq!(a.peer_addr()?, b.local_addr()?);
        stranger
            .send_to(b"ignored".to_vec(), a.local_addr()?)
            .await
            .0?;
        b.send_to(b"from b".to_vec(), a.local_addr()?).await.0?;
        let (res, buf) = a.recv(Vec::with_capacity(16)).await;
        assert_eq!(res?, 6);
        assert_eq!(
            buf, b"from b",
            "datagrams from other addresses are filtered"
        );
        let (res, _) = a.send(b"to b".to_vec()).await;
        assert_eq!(res?, 4);
        assert_receives(&b, b"to b", a.local_addr()?).await?;
        Ok(())
    })
}

#[test]
fn receives_cut_off_by_timeouts_lose_no_datagram() -> io::Result<()> {
    const TOTAL: u32 = 400;
    // Datagrams sent and not yet received, at most: well within a socket's receive buffer,
    // so a receiver that falls behind loses none to the kernel.
    const WINDOW: u32 = 32;
    const BOUND: Duration = Duration::from_secs(60);
    on_runtime(async {
        let receiver = UdpSocket::bind("127.0.0.1:0")?;
        let to = receiver.local_addr()?;
        let fired = Arc::new(AtomicU32::new(0));
        let received = Arc::new(AtomicU32::new(0));
        // A peer thread sends each datagram once the receiver's timeout count moved past its
        // value at the previous one, after a short irregular pause, while the receiver's
        // receives time out at random: every datagram races a fresh timeout, and some complete
        // in the kernel after their future is gone.
        let peer = {
            let (fired, received) = (Arc::clone(&fired), Arc::clone(&received));
            std::thread::spawn(move || -> io::Result<()> {
                let socket = std::net::UdpSocket::bind("127.0.0.1:0")?;
                let start = Instant::now();
                for i in 0..TOTAL {
                    let seen = fired.load(Ordering::Acquire);
                    while fired.load(Ordering::Acquire) == seen
                        || i >= received.load(Ordering::Acquire) + WINDOW
                    {
                        assert!(start.elapsed() < BOUND, "the receiver stopped at {i}");
                        std::thread::sleep(Duration::from_micros(5));
                    }
                    std::thread::sleep(Duration::from_micros(u64::from(i % 7) * 20));
                    socket.send_to(&i.to_le_bytes(), to)?;
                }
                Ok(())
            })
        };
        let start = Instant::now();
        let mut round = 0u64;
        loop {
            let next = received.load(Ordering::Acquire);
            if next == TOTAL {
                break;
            }
            assert!(start.elapsed() < BOUND, "datagram {next} never came");
            round += 1;
            let limit = Duration::from_micros(1 + (round * 7919) % 50);
            match baton::time::timeout(limit, receiver.recv_from(Vec::with_capacity(8))).await {
                Ok((res, buf)) => {
                    assert_eq!(res?.0, 4);
                    let got = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]);
                    assert_eq!(got, next, "in order, none lost, none twice");
                    received.store(next + 1, Ordering::Release);
                }
                Err(_elapsed) => {
                    fired.fetch_add(1, Ordering::Release);
                }
            }
        }
        peer.join()
            .map_err(|_| io::Error::other("peer panicked"))??;
        let fired = fired.load(Ordering::Acquire);
        assert!(
            fired >= TOTAL,
            "a receive was cut off before each datagram ({fired} were)"
        );
        Ok(())
    })
}

fn kind<T>(result: io::Result<T>) -> Option<io::ErrorKind> {
    result.err().map(|err| err.kind())
}

#[test]
fn errors_match_std_for_the_same_input() -> io::Result<()> {
    let taken = std::net::UdpSocket::bind("127.0.0.1:0")?;
    let taken_addr = taken.local_addr()?;
    let std_unconnected = std::net::UdpSocket::bind("127.0.0.1:0")?;
    let too_large = vec![0u8; 70_000];
    let std_kinds = [
        kind(std::net::UdpSocket::bind(taken_addr)),
        kind(std_unconnected.send_to(&too_large, taken_addr)),
        kind(std_unconnected.send(b"x")),
        kind(std_unconnected.peer_addr()),
        kind(std::net::UdpSocket::bind("127.0.0.1:99999")),
        kind(std::net::UdpSocket::bind("no port")),
    ];
    on_runtime(async {
        let socket = UdpSocket::bind("127.0.0.1:0")?;
        let ours = [
            kind(UdpSocket::bind(taken_addr)),
            kind(socket.send_to(too_large.clone(), taken_addr).await.0),
            kind(socket.send(b"x".to_vec()).await.0),
            kind(socket.peer_addr()),
            kind(UdpSocket::bind("127.0.0.1:99999")),
            kind(UdpSocket::bind("no port")),
        ];
        assert_eq!(ours, std_kinds);
        assert_eq!(std_kinds[0], Some(io::ErrorKind::AddrInUse));
        let (res, _) = socket.recv_from(Vec::new()).await;
        assert_eq!(
            kind(res),
            Some(io::ErrorKind::InvalidInput),
            "no room to receive"
        );
        Ok(())
    })
}

#[test]
fn broadcast_multicast_and_ttl_options_round_trip_as_on_std() -> io::Result<()> {
    let group = Ipv4Addr::new(239, 255, 77, 1);
    let std_socket = std::net::UdpSocket::bind("127.0.0.1:0")?;
    let std_join = kind(std_socket.join_multicast_v4(&group, &Ipv4Addr::LOCALHOST));
    on_runtime(async {
        let socket = UdpSocket::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
        socket.set_broadcast(true)?;
        assert!(socket.broadcast()?);
        socket.set_ttl(17)?;
        assert_eq!(socket.ttl()?, 17);
        socket.set_multicast_ttl_v4(3)?;
        assert_eq!(socket.multicast_ttl_v4()?, 3);
        socket.set_multicast_loop_v4(false)?;
        assert!(!socket.multicast_loop_v4()?);
        assert_eq!(
            kind(socket.join_multicast_v4(group, Ipv4Addr::LOCALHOST)),
            std_join
        );
        if std_join.is_none() {
            socket.leave_multicast_v4(group, Ipv4Addr::LOCALHOST)?;
        }
        assert_eq!(
            kind(socket.join_multicast_v4(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST)),
            kind(std_socket.join_multicast_v4(&Ipv4Addr::LOCALHOST, &Ipv4Addr::LOCALHOST)),
            "joining a unicast address"
        );
        assert_eq!(kind(socket.set_ttl(256)), kind(std_socket.set_ttl(256)));
        Ok(())
    })
}

/// Receives one datagram on `socket` and asserts that it is `expected`, sent from `from`.
async fn assert_receives(socket: &UdpSocket, expected: &[u8], from: SocketAddr) -> io::Result<()> {
    let (res, got) = socket.recv_from(Vec::with_capacity(64)).await;
    assert_eq!(res?, (expected.len(), from));
    assert_eq!(got, expected);
    Ok(())
}
