//! `#[baton::main]` and `JoinSet`: a loopback echo server and eight clients, joined in the order
//! they finish.
//!
//! ```text
//! cargo run --example main_macro --features macros
//! ```

use std::io;

use baton::io::AsyncReadExt;
use baton::net::{TcpListener, TcpStream};
use baton::task::JoinSet;

const CLIENTS: usize = 8;

#[baton::main(ring_entries = 64)]
async fn main() -> io::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let server = baton::spawn(async move {
        for _ in 0..CLIENTS {
            let (stream, _peer) = listener.accept().await?;
            baton::spawn(echo(stream));
        }
        io::Result::Ok(())
    });

    let mut clients = JoinSet::new();
    for id in 0..CLIENTS {
        clients.spawn(async move {
            let mut stream = TcpStream::connect(addr).await?;
            let line = format!("hello from client {id}").into_bytes();
            let (res, line) = stream.write_all(line).await;
            res?;
            stream.shutdown().await?;
            let (res, echoed) = stream.read_exact(Vec::with_capacity(line.len())).await;
            res?;
            io::Result::Ok((id, echoed == line))
        });
    }
    while let Some(joined) = clients.join_next().await {
        let (id, echoed) = joined.map_err(io::Error::other)??;
        println!(
            "client {id}: echoed {}",
            if echoed { "intact" } else { "garbled" }
        );
    }
    server.await.map_err(io::Error::other)?
}

/// Echoes what the peer sends until it shuts its side down.
async fn echo(stream: TcpStream) -> io::Result<()> {
    let mut buf = Vec::with_capacity(64);
    loop {
        let (res, read) = stream.read(buf).await;
        if res? == 0 {
            return Ok(());
        }
        let (res, written) = stream.write_all(read).await;
        res?;
        buf = written;
    }
}
