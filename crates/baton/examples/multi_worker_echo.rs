//! A TCP echo server in the thread-per-core model: one worker per CPU (or as many as asked),
//! each with its own `SO_REUSEPORT` listener and accept loop, so the kernel spreads the
//! connections and every connection lives on the worker that accepted it.
//!
//! ```text
//! cargo run --release --example multi_worker_echo                 # 2 workers, built-in clients
//! cargo run --release --example multi_worker_echo -- --workers 4 --clients 128 --rounds 500
//! ```
//!
//! The built-in clients (blocking `std` sockets on threads of their own) each make one
//! connection and a bounded number of round trips, check every echo, and the example prints how
//! many connections each worker accepted, the round-trip rate, and the shutdown report.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use baton::net::TcpListener;

const MESSAGE: usize = 64;

fn main() -> io::Result<()> {
    let workers = flag("--workers").unwrap_or(2);
    let clients = flag("--clients").unwrap_or(64);
    let rounds = flag("--rounds").unwrap_or(200);
    let rt = baton::Builder::new().workers(workers).build()?;
    let first = TcpListener::bind_reuseport("127.0.0.1:0")?;
    let addr = first.local_addr()?;
    let mut first = Some(first);
    let accepted: Arc<Vec<AtomicUsize>> =
        Arc::new((0..workers).map(|_| AtomicUsize::new(0)).collect());
    // One accept loop per worker, each on a listener of its own over the same port.
    let loops = rt.on_each_worker(|index| {
        let listener = first
            .take()
            .map_or_else(|| TcpListener::bind_reuseport(addr), Ok);
        accept_loop(listener, Arc::clone(&accepted), index)
    });
    println!("{workers} workers serving echo on {addr}; {clients} clients x {rounds} round trips");
    let started = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|_| std::thread::spawn(move || client(addr, rounds)))
        .collect();
    for thread in threads {
        thread
            .join()
            .map_err(|_| io::Error::other("a client thread panicked"))??;
    }
    let elapsed = started.elapsed();
    let total = clients * rounds;
    println!(
        "{total} round trips in {:.2?}: {:.0} per second",
        elapsed,
        total as f64 / elapsed.as_secs_f64()
    );
    for (index, count) in accepted.iter().enumerate() {
        println!(
            "  worker {index} accepted {}",
            count.load(Ordering::Relaxed)
        );
    }
    for accept in loops {
        accept.abort();
    }
    let report = rt.shutdown_timeout(Duration::from_secs(5));
    println!(
        "shutdown: clean {}, {} tasks cancelled over {} workers",
        report.is_clean(),
        report.tasks_cancelled,
        report.workers.len()
    );
    Ok(())
}

/// Accepts on this worker's listener; each connection is a task on this worker (`baton::spawn`
/// keeps to the caller's worker).
async fn accept_loop(
    listener: io::Result<TcpListener>,
    accepted: Arc<Vec<AtomicUsize>>,
    index: usize,
) -> io::Result<()> {
    let listener = listener?;
    loop {
        let (stream, _) = listener.accept().await?;
        accepted[index].fetch_add(1, Ordering::Relaxed);
        drop(baton::spawn(async move {
            let mut buf = Vec::with_capacity(16 * 1024);
            loop {
                let (res, read) = stream.read(buf).await;
                match res {
                    Ok(n) if n > 0 => {}
                    _ => return,
                }
                let (res, written) = stream.write_all(read).await;
                if res.is_err() {
                    return;
                }
                buf = written;
            }
        }));
    }
}

/// One client: `rounds` round trips of a `MESSAGE`-byte message, each echo checked.
fn client(addr: SocketAddr, rounds: usize) -> io::Result<()> {
    let mut stream = std::net::TcpStream::connect(addr)?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut back = [0_u8; MESSAGE];
    for round in 0..rounds {
        let message = [(round % 251) as u8; MESSAGE];
        stream.write_all(&message)?;
        stream.read_exact(&mut back)?;
        if back != message {
            return Err(io::Error::other(format!("round {round}: wrong echo")));
        }
    }
    Ok(())
}

/// The number after `name` on the command line, if given.
fn flag(name: &str) -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|arg| arg == name)?;
    args.get(at + 1)?.parse().ok()
}
