//! A tour of Baton: runs with no arguments and no set-up, exercises every crate on real work,
//! and prints a short report with timings.
//!
//! ```text
//! cargo run --release --example tour
//! ```

use std::future::Future;
use std::io;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use baton::blocking::BlockingCancel;
use baton::fs::{File, OpenOptions};
use baton::net::{TcpListener, TcpStream, UdpSocket};

const CONNECTIONS: usize = 64;
const MESSAGES_PER_CONNECTION: usize = 16;
const FILE_BYTES: usize = 4 * 1024 * 1024;

fn main() -> io::Result<()> {
    let started = Instant::now();
    let rt = baton::Builder::new()
        .ring_entries(256)
        .blocking_threads(2)
        .build()?;
    let mut report = Report::default();

    report.time("file: write, sync, read back", || {
        rt.block_on(file_round_trip())
    })?;
    report.time("fs: build, walk and remove a tree", || {
        rt.block_on(directory_walk())
    })?;
    report.time("tcp: loopback echo", || rt.block_on(tcp_echo()))?;
    report.time("udp: datagram exchange", || rt.block_on(udp_exchange()))?;
    report.time("blocking: jobs, one cancelled", || {
        rt.block_on(blocking_jobs())
    })?;
    report.time("foreign thread: polled off the runtime", || {
        foreign_poll(&rt)
    })?;
    report.time("block_on: nested three deep", || nested(&rt))?;
    report.time("between block_on calls", || between_calls(&rt))?;

    let metrics = rt.metrics();
    let shutdown = rt.shutdown_timeout(Duration::from_secs(5));
    println!("Baton tour");
    println!("==========");
    for line in &report.lines {
        println!("{line}");
    }
    println!(
        "metrics: {} tasks spawned ({} completed), {} I/O requests completed, {} blocking jobs \
         accepted ({} cancelled), {} external completions settled",
        metrics.tasks.spawned,
        metrics.tasks.completed,
        metrics.ops_completed,
        metrics.blocking.accepted,
        metrics.blocking.cancelled,
        metrics.inbox.settled,
    );
    println!(
        "shutdown: I/O drained: {}, tasks cancelled: {}, blocking drained: {}, clean: {}",
        shutdown.io_drained,
        shutdown.tasks_cancelled,
        shutdown.blocking_drained.unwrap_or(true),
        shutdown.is_clean(),
    );
    println!("total: {:.1} ms", ms(started.elapsed()));
    Ok(())
}

/// Section timings and what each section measured.
#[derive(Default)]
struct Report {
    lines: Vec<String>,
}

impl Report {
    fn time(&mut self, name: &str, section: impl FnOnce() -> io::Result<String>) -> io::Result<()> {
        let start = Instant::now();
        let detail = section()?;
        self.lines.push(format!(
            "{name:<42} {:>8.2} ms  {detail}",
            ms(start.elapsed())
        ));
        Ok(())
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// baton-uring: open, write, fsync and read back a file larger than one ring buffer.
async fn file_round_trip() -> io::Result<String> {
    let path = std::env::temp_dir().join(format!("baton-tour-{}.bin", std::process::id()));
    let data: Vec<u8> = (0..FILE_BYTES).map(|i| (i % 251) as u8).collect();
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .await?;
    let (res, data) = file.write_all_at(data, 0).await;
    res?;
    file.sync_all().await?;
    let (res, back) = file.read_exact_at(vec![0; FILE_BYTES], 0).await;
    res?;
    let whole = baton::fs::read(&path).await?;
    baton::fs::remove_file(&path).await?;
    if back != data || whole != data {
        return Err(io::Error::other(
            "the file read back differs from what was written",
        ));
    }
    Ok(format!("{} MiB, byte-for-byte equal", FILE_BYTES >> 20))
}

/// baton-uring + the blocking pool: a small tree made with ring `mkdirat`s and writes, walked
/// with `read_dir` (batches from the pool) and `statx` on the ring, then removed.
async fn directory_walk() -> io::Result<String> {
    let root = std::env::temp_dir().join(format!("baton-tour-tree-{}", std::process::id()));
    for branch in ["src/net", "src/fs", "docs"] {
        baton::fs::create_dir_all(root.join(branch)).await?;
    }
    for (i, file) in [
        "src/lib.rs",
        "src/net/tcp.rs",
        "src/fs/dir.rs",
        "docs/io.md",
    ]
    .into_iter()
    .enumerate()
    {
        baton::fs::write(root.join(file), vec![b'x'; 1024 << i]).await?;
    }
    baton::fs::symlink("src/lib.rs", root.join("lib.rs")).await?;
    let (mut dirs, mut files, mut links, mut bytes) = (0, 0, 0, 0);
    let mut pending = vec![root.clone()];
    while let Some(dir) = pending.pop() {
        dirs += 1;
        let mut entries = baton::fs::read_dir(&dir).await?;
        while let Some(entry) = entries.next_entry().await? {
            let kind = entry.file_type().await?;
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_symlink() {
                links += 1;
            } else {
                files += 1;
                bytes += baton::fs::metadata(entry.path()).await?.len();
            }
        }
    }
    baton::fs::remove_dir_all(&root).await?;
    if baton::fs::try_exists(&root).await? {
        return Err(io::Error::other("remove_dir_all left the tree behind"));
    }
    Ok(format!(
        "{dirs} dirs, {files} files ({} KiB), {links} symlink, removed",
        bytes >> 10
    ))
}

/// baton-task + baton-uring: a loopback echo server and 64 concurrent clients.
async fn tcp_echo() -> io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let server = baton::spawn(async move {
        for _ in 0..CONNECTIONS {
            let (stream, _) = listener.accept().await?;
            // Request/response traffic: do not let Nagle's algorithm wait for delayed ACKs.
            stream.set_nodelay(true)?;
            baton::spawn(echo(stream));
        }
        io::Result::Ok(())
    });
    let clients: Vec<_> = (0..CONNECTIONS)
        .map(|id| baton::spawn(client(addr, id)))
        .collect();
    let mut bytes = 0;
    for client in clients {
        bytes += client.await.map_err(io::Error::other)??;
    }
    server.await.map_err(io::Error::other)??;
    Ok(format!(
        "{CONNECTIONS} connections x {MESSAGES_PER_CONNECTION} messages, {bytes} bytes echoed"
    ))
}

/// baton-uring's datagram requests: a UDP echo peer and a connected client, lock-step, each
/// datagram checked (none may be lost or reordered on loopback).
async fn udp_exchange() -> io::Result<String> {
    const DATAGRAMS: u32 = 256;
    let server = UdpSocket::bind("127.0.0.1:0")?;
    let client = UdpSocket::bind("127.0.0.1:0")?;
    client.connect(server.local_addr()?).await?;
    let peer = baton::spawn(async move {
        let mut buf = Vec::with_capacity(1500);
        for _ in 0..DATAGRAMS {
            let (res, got) = server.recv_from(buf).await;
            let (_, from) = res?;
            let (res, sent) = server.send_to(got, from).await;
            res?;
            buf = sent;
        }
        io::Result::Ok(())
    });
    let mut buf = Vec::with_capacity(1500);
    for i in 0..DATAGRAMS {
        buf.clear();
        buf.extend_from_slice(&i.to_be_bytes());
        let (res, sent) = client.send(buf).await;
        res?;
        let (res, got) = baton::time::timeout(Duration::from_secs(5), client.recv(sent))
            .await
            .map_err(|_| io::Error::other(format!("datagram {i} was lost")))?;
        res?;
        if got[..] != i.to_be_bytes() {
            return Err(io::Error::other(format!("datagram {i} came back altered")));
        }
        buf = got;
    }
    peer.await.map_err(io::Error::other)??;
    Ok(format!("{DATAGRAMS} datagrams echoed in order"))
}

async fn echo(stream: TcpStream) -> io::Result<()> {
    // A read fills the buffer from its beginning and leaves its length at the count.
    let mut buf = Vec::with_capacity(4096);
    loop {
        let (res, b) = stream.read(buf).await;
        if res? == 0 {
            return Ok(());
        }
        let (res, b) = stream.write_all(b).await;
        res?;
        buf = b;
    }
}

async fn client(addr: std::net::SocketAddr, id: usize) -> io::Result<usize> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let mut echoed = 0;
    for seq in 0..MESSAGES_PER_CONNECTION {
        let message = format!("connection {id} message {seq}").into_bytes();
        let (res, message) = stream.write_all(message).await;
        res?;
        let mut got = Vec::new();
        while got.len() < message.len() {
            let (res, buf) = stream.read(vec![0; message.len() - got.len()]).await;
            let n = res?;
            if n == 0 {
                return Err(io::Error::other("the echo server hung up early"));
            }
            got.extend_from_slice(&buf[..n]);
        }
        if got != message {
            return Err(io::Error::other("an echo came back different"));
        }
        echoed += got.len();
    }
    stream.shutdown().await?;
    Ok(echoed)
}

/// baton-completion + baton-cancel: blocking jobs through the registrar, the pool and the
/// worker's inbox; with both pool threads busy, a queued job is cancelled before it starts.
async fn blocking_jobs() -> io::Result<String> {
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let gate = Arc::new(std::sync::Mutex::new(gate));
    let busy: Vec<_> = (0..2)
        .map(|_| {
            let gate = Arc::clone(&gate);
            baton::blocking::spawn_blocking(move || {
                let _ = gate.lock().map(|gate| gate.recv());
            })
        })
        .collect();
    let queued = baton::blocking::spawn_blocking(|| "this body never runs");
    let cancel = queued.cancel();
    if cancel != BlockingCancel::CancelledBeforeStart {
        return Err(io::Error::other(format!(
            "the cancel did not win: {cancel:?}"
        )));
    }
    let cancelled = queued.await;
    for _ in 0..busy.len() {
        release.send(()).map_err(io::Error::other)?;
    }
    for job in busy {
        job.await.map_err(io::Error::other)?;
    }
    let sums: Vec<_> = (0..32u64)
        .map(|n| baton::blocking::spawn_blocking(move || (0..=n).sum::<u64>()))
        .collect();
    let mut total = 0;
    for sum in sums {
        total += sum.await.map_err(io::Error::other)?;
    }
    Ok(format!(
        "34 jobs ran (sum {total}); the queued one: {}",
        match cancelled {
            Err(err) if err.is_cancelled() => "cancelled before start".to_owned(),
            other => format!("unexpected {other:?}"),
        }
    ))
}

/// baton-uring forwarding: a read made on the runtime is polled on a plain thread with its own
/// tiny executor; the worker forwards the result through its mailbox.
fn foreign_poll(rt: &baton::Runtime) -> io::Result<String> {
    let path = std::env::temp_dir().join(format!("baton-tour-foreign-{}", std::process::id()));
    let file = rt.block_on(async {
        baton::fs::write(&path, b"read on a foreign thread").await?;
        File::open(&path).await
    })?;
    let polled_on = thread::spawn(move || {
        let (res, buf) = poll_here(file.read_at(vec![0; 64], 0));
        res.map(|n| {
            (
                String::from_utf8_lossy(&buf[..n]).into_owned(),
                thread::current().id(),
            )
        })
    })
    .join()
    .map_err(|_| io::Error::other("the foreign thread panicked"))?;
    rt.block_on(baton::fs::remove_file(&path))?;
    let (text, id) = polled_on?;
    Ok(format!("{text:?} ({id:?}, outside the runtime)"))
}

/// baton-loan: a `block_on` inside a `block_on` inside a `block_on`, all driving one worker.
fn nested(rt: &baton::Runtime) -> io::Result<String> {
    let handle = rt.handle();
    let depth = rt.block_on(async {
        let spawned = baton::spawn(async { 1 });
        let inner = handle.block_on(async {
            baton::time::sleep(Duration::from_millis(1)).await;
            handle.block_on(async {
                baton::task::yield_now().await;
                1
            }) + 1
        });
        let spawned = spawned.await.map_err(io::Error::other)?;
        io::Result::Ok(inner + spawned)
    })?;
    Ok(format!(
        "{depth} levels, borrowed data and no 'static needed"
    ))
}

/// baton-loan's background thread: tasks spawned from a plain thread progress while nobody is
/// in `block_on`.
fn between_calls(rt: &baton::Runtime) -> io::Result<String> {
    let ticks = Arc::new(AtomicUsize::new(0));
    let handle = rt.handle();
    let task = {
        let ticks = Arc::clone(&ticks);
        handle.spawn(async move {
            for _ in 0..10 {
                baton::time::sleep(Duration::from_millis(1)).await;
                ticks.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let waited = Instant::now();
    while !task.is_finished() && waited.elapsed() < Duration::from_secs(10) {
        thread::sleep(Duration::from_millis(1));
    }
    let done_before_block_on = task.is_finished();
    rt.block_on(task).map_err(io::Error::other)?;
    Ok(format!(
        "{} timer ticks, finished before the next block_on: {done_before_block_on}",
        ticks.load(Ordering::Relaxed)
    ))
}

/// A minimal single-future executor for a thread that has no runtime.
fn poll_here<F: Future>(future: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        thread::park();
    }
}
