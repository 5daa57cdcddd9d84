//! A TCP line-echo server that shuts down gracefully: on Ctrl-C it stops accepting, lets the
//! open connections finish, and prints the runtime's shutdown report.
//!
//! ```text
//! cargo run --release --example graceful -- 127.0.0.1:7000   # then press Ctrl-C
//! cargo run --release --example graceful -- --demo           # clients and Ctrl-C built in
//! ```
//!
//! With `--demo` the example starts a few clients of its own, sends itself `SIGINT` while they
//! are still connected, and shows that each of them still gets every reply.

use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use baton::io::{AsyncWriteExt, BufReader};
use baton::net::{OwnedReadHalf, OwnedWriteHalf, TcpListener, TcpStream};
use baton::task::JoinSet;

const DEMO_CLIENTS: usize = 4;
const DEMO_LINES: usize = 5;

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let demo = args.iter().any(|a| a == "--demo");
    let addr = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map_or("127.0.0.1:0", String::as_str)
        .to_owned();
    let rt = baton::Runtime::new()?;
    rt.block_on(serve(addr, demo))?;
    let report = rt.shutdown_timeout(Duration::from_secs(5));
    println!(
        "shutdown report: clean {}, I/O drained {}, tasks cancelled {}, tasks leaked {}",
        report.is_clean(),
        report.io_drained,
        report.tasks_cancelled,
        report.tasks_leaked
    );
    Ok(())
}

async fn serve(addr: String, demo: bool) -> io::Result<()> {
    let listener = TcpListener::bind(addr.as_str())?;
    let local = listener.local_addr()?;
    println!("listening on {local}; press Ctrl-C to stop accepting");
    let mut ctrl_c = pin!(baton::signal::ctrl_c());
    // Polled once now, so the handler is installed before the demo sends its signal.
    let installed = poll_fn(|cx| Poll::Ready(ctrl_c.as_mut().poll(cx))).await;
    if let Poll::Ready(result) = installed {
        result?;
    }
    let demo_clients = demo.then(|| baton::spawn(run_demo(local)));
    let mut connections = JoinSet::new();
    loop {
        // Accepts until Ctrl-C. `accept` is cancel-safe, so dropping the one in flight when
        // the signal wins loses no client.
        let next = {
            let mut accept = pin!(listener.accept());
            poll_fn(|cx| {
                if let Poll::Ready(signal) = ctrl_c.as_mut().poll(cx) {
                    return Poll::Ready(Err(signal));
                }
                accept.as_mut().poll(cx).map(Ok)
            })
            .await
        };
        match next {
            Ok(Ok((stream, peer))) => connections.spawn(echo_lines(stream, peer)),
            Ok(Err(err)) => eprintln!("accept failed: {err}"),
            Err(signal) => {
                signal?;
                break;
            }
        }
    }
    drop(listener);
    println!(
        "Ctrl-C: no longer accepting; waiting for {} open connection(s)",
        connections.len()
    );
    while let Some(finished) = connections.join_next().await {
        match finished {
            Ok(Ok(lines)) => println!("a connection finished after {lines} line(s)"),
            Ok(Err(err)) => println!("a connection failed: {err}"),
            Err(err) => println!("a connection task ended: {err}"),
        }
    }
    if let Some(demo) = demo_clients {
        let replies = demo.await.map_err(io::Error::other)??;
        println!("the demo clients got all {replies} replies");
    }
    Ok(())
}

/// Echoes each line back until the peer closes; returns how many lines it echoed.
async fn echo_lines(stream: TcpStream, peer: SocketAddr) -> io::Result<usize> {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut lines = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await? == 0 {
            println!("{peer} closed");
            return Ok(lines);
        }
        let (res, _) = write.write_all(line.into_bytes()).await;
        res?;
        lines += 1;
    }
}

/// The demo: clients connect and are answered once (so the server has accepted each), then
/// Ctrl-C arrives while they are connected, and they go on talking; returns the replies they
/// got. (A client the server had not accepted yet when Ctrl-C came would be refused: it was
/// still in the listener's backlog.)
async fn run_demo(server: SocketAddr) -> io::Result<usize> {
    let mut connected = Vec::new();
    for id in 0..DEMO_CLIENTS {
        let stream = TcpStream::connect(server).await?;
        let (read, mut write) = stream.into_split();
        let mut reader = BufReader::new(read);
        exchange(&mut reader, &mut write, format!("client {id} says hello\n")).await?;
        connected.push((reader, write));
    }
    // SAFETY: kill(2) to this process has no memory-safety preconditions.
    unsafe { libc::kill(libc::getpid(), libc::SIGINT) };
    let mut clients = JoinSet::new();
    for (id, (mut reader, mut write)) in connected.into_iter().enumerate() {
        clients.spawn(async move {
            for n in 0..DEMO_LINES {
                baton::time::sleep(Duration::from_millis(20)).await;
                exchange(&mut reader, &mut write, format!("client {id} line {n}\n")).await?;
            }
            io::Result::Ok(DEMO_LINES + 1)
        });
    }
    let mut total = 0;
    while let Some(done) = clients.join_next().await {
        total += done.map_err(io::Error::other)??;
    }
    Ok(total)
}

/// Sends `line` and checks that it comes back.
async fn exchange(
    reader: &mut BufReader<OwnedReadHalf<TcpStream>>,
    write: &mut OwnedWriteHalf<TcpStream>,
    line: String,
) -> io::Result<()> {
    let (res, sent) = write.write_all(line.into_bytes()).await;
    res?;
    let mut reply = String::new();
    reader.read_line(&mut reply).await?;
    if reply.as_bytes() != sent {
        return Err(io::Error::other(format!("wrong reply {reply:?}")));
    }
    Ok(())
}
