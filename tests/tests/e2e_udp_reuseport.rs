//! End to end: `UdpSocket::bind_reuseport` — two sockets on one address, one per worker, share
//! the incoming datagrams (each arrives at exactly one of them), and a socket without
//! `SO_REUSEPORT` cannot join them.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use baton::net::UdpSocket;

/// Datagrams sent, from this many sockets of their own (the kernel spreads by address hash).
const SENDERS: usize = 64;

#[test]
fn reuseport_udp_sockets_share_one_address_and_each_datagram_arrives_once() -> io::Result<()> {
    let rt = baton::Builder::new().workers(2).build()?;
    let first = UdpSocket::bind_reuseport("127.0.0.1:0")?;
    let addr = first.local_addr()?;
    let second = UdpSocket::bind_reuseport(addr)?;
    assert_eq!(second.local_addr()?, addr);
    let plain = UdpSocket::bind(addr).expect_err("a socket without SO_REUSEPORT cannot join");
    assert_eq!(plain.kind(), io::ErrorKind::AddrInUse);

    let received = Arc::new(AtomicUsize::new(0));
    let mut sockets = [Some(first), Some(second)].into_iter();
    let receivers = rt.on_each_worker(|_| {
        let socket = sockets.next().flatten();
        let received = Arc::clone(&received);
        async move {
            let socket = socket.ok_or_else(|| io::Error::other("a socket per worker"))?;
            let mut got = 0_usize;
            // Bounded: after 40 quiet half-seconds the count is checked as it stands.
            let mut quiet = 0;
            while quiet < 40 {
                let wait = baton::time::timeout(
                    Duration::from_millis(500),
                    socket.recv_from(Vec::with_capacity(16)),
                );
                match wait.await {
                    Ok((Ok((_, _)), buf)) if buf.as_slice() == b"ping" => {
                        got += 1;
                        received.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok((Ok(_), other)) => return Err(io::Error::other(format!("got {other:?}"))),
                    Ok((Err(err), _)) => return Err(err),
                    // Quiet for half a second: every datagram that will come has come.
                    Err(_) if received.load(Ordering::SeqCst) >= SENDERS => return Ok(got),
                    Err(_) => quiet += 1,
                }
            }
            Ok(got)
        }
    });
    for _ in 0..SENDERS {
        let sender = std::net::UdpSocket::bind("127.0.0.1:0")?;
        sender.send_to(b"ping", addr)?;
    }
    let mut total = 0;
    for receiver in receivers {
        total += rt.block_on(receiver).map_err(io::Error::other)??;
    }
    assert_eq!(
        total, SENDERS,
        "each datagram arrives at exactly one of the two sockets"
    );
    Ok(())
}
