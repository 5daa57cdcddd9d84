//! End to end: 64 loopback TCP connections echoing concurrently through the facade, with
//! messages large enough to force short writes, plus Unix sockets.

use std::io;

use baton::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use baton_tests::{assert_kind, join};

const CONNECTIONS: usize = 64;
const ROUNDS: usize = 8;

async fn echo(stream: TcpStream) -> io::Result<()> {
    let mut buf = Vec::with_capacity(16 * 1024);
    loop {
        let (res, b) = stream.read(buf).await;
        if res? == 0 {
            return Ok(());
        }
        let (res, mut b) = stream.write_all(b).await;
        res?;
        b.clear();
        buf = b;
    }
}

fn message(connection: usize, round: usize) -> Vec<u8> {
    // Round 3 sends 256 KiB: more than a socket buffer, so writes are short and reads split.
    let len = if round == 3 {
        256 * 1024
    } else {
        100 + connection * 10 + round
    };
    (0..len)
        .map(|i| ((i + connection * 31 + round) % 256) as u8)
        .collect()
}

async fn client(addr: std::net::SocketAddr, id: usize) -> io::Result<usize> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let mut echoed = 0;
    for round in 0..ROUNDS {
        let sent = message(id, round);
        let writer = {
            let sent = sent.clone();
            let stream = &stream;
            async move { stream.write_all(sent).await.0 }
        };
        // Write and read concurrently: a 256 KiB echo cannot fit in the socket buffers.
        let reader = async {
            let mut got = Vec::with_capacity(sent.len());
            while got.len() < sent.len() {
                let (res, buf) = stream.read(vec![0; 64 * 1024]).await;
                let n = res?;
                if n == 0 {
                    return Err(io::Error::other("the server hung up early"));
                }
                got.extend_from_slice(&buf[..n]);
            }
            io::Result::Ok(got)
        };
        let (written, got) = join(writer, reader).await;
        written?;
        assert!(
            got? == sent,
            "connection {id} round {round}: the echo differs"
        );
        echoed += sent.len();
    }
    stream.shutdown().await?;
    Ok(echoed)
}

#[test]
fn sixty_four_connections_echo_concurrently() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let echoed = rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let server = baton::spawn(async move {
            let mut sessions = Vec::new();
            for _ in 0..CONNECTIONS {
                let (stream, peer) = listener.accept().await?;
                assert!(peer.ip().is_loopback());
                stream.set_nodelay(true)?;
                sessions.push(baton::spawn(echo(stream)));
            }
            for session in sessions {
                session.await.map_err(io::Error::other)??;
            }
            io::Result::Ok(())
        });
        let clients: Vec<_> = (0..CONNECTIONS)
            .map(|id| baton::spawn(client(addr, id)))
            .collect();
        let mut echoed = 0;
        for client in clients {
            echoed += client.await.map_err(io::Error::other)??;
        }
        server.await.map_err(io::Error::other)??;
        io::Result::Ok(echoed)
    })?;
    let expected: usize = (0..CONNECTIONS)
        .flat_map(|id| (0..ROUNDS).map(move |round| message(id, round).len()))
        .sum();
    assert_eq!(echoed, expected);
    Ok(())
}

#[test]
fn connecting_to_a_closed_port_is_refused() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
    assert_kind(
        rt.block_on(TcpStream::connect(port)),
        io::ErrorKind::ConnectionRefused,
        "nobody listens there any more",
    );
    Ok(())
}

#[test]
fn unix_listener_and_pair_carry_bytes() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let path = std::env::temp_dir().join(format!("baton-e2e-unix-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    rt.block_on(async {
        let listener = UnixListener::bind(&path)?;
        let accept = baton::spawn(async move {
            let (stream, _) = listener.accept().await?;
            let (res, buf) = stream.read(vec![0; 5]).await;
            io::Result::Ok(buf[..res?].to_vec())
        });
        let client = UnixStream::connect(&path).await?;
        client.write_all(b"hello".to_vec()).await.0?;
        assert_eq!(accept.await.map_err(io::Error::other)??, b"hello");
        let (a, b) = UnixStream::pair()?;
        a.write_all(b"pair".to_vec()).await.0?;
        let (res, buf) = b.read(Vec::with_capacity(8)).await;
        assert_eq!(res?, 4);
        assert_eq!(buf, b"pair");
        io::Result::Ok(())
    })?;
    std::fs::remove_file(&path)
}
