//! End to end: ten thousand idle connections, each with a task waiting in `read`, never hold
//! back other work. The connections' peers live in a child process (`idle_clients`), so this
//! process needs one descriptor per connection.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use baton::net::{TcpListener, TcpStream, UnixListener, UnixStream};

const IDLE: usize = 10_000;
/// Generous: the point is that the work completes at all, never how fast.
const BOUND: Duration = Duration::from_secs(60);

/// Raises this process's descriptor limit to its hard limit; returns the soft limit now.
fn raise_fd_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable rlimit for the duration of the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) } != 0 {
        return 0;
    }
    limit.rlim_cur = limit.rlim_max;
    // SAFETY: `limit` is a valid rlimit; raising the soft limit to the hard one needs no
    // privilege.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raw const limit) } != 0 {
        return 0;
    }
    limit.rlim_cur
}

#[test]
fn ten_thousand_idle_reads_never_hold_back_a_write_an_accept_or_a_timer() {
    let limit = raise_fd_limit();
    if limit < (IDLE + 512) as u64 {
        eprintln!(
            "SKIPPED: {IDLE} idle connections need {} descriptors; the hard limit here is {limit}",
            IDLE + 512
        );
        return;
    }
    let rt = baton::Runtime::new().expect("runtime");
    let path = std::env::temp_dir().join(format!("baton-idle-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let idle_listener = UnixListener::bind(&path).expect("bind the idle listener");
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    let mut peers = Command::new(env!("CARGO_BIN_EXE_idle_clients"))
        .arg(&path)
        .arg(IDLE.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the idle peers");
    let idle_reads = Arc::new(AtomicUsize::new(0));

    let result = rt.block_on(async {
        let reading = Arc::clone(&idle_reads);
        // Each connection's task waits in `read` until the peers exit.
        let mut readers = Vec::with_capacity(IDLE);
        while readers.len() < IDLE {
            let (stream, _) = baton::time::timeout(BOUND, idle_listener.accept())
                .await
                .map_err(|_| format!("only {} connections accepted in time", readers.len()))?
                .map_err(|e| format!("accept: {e}"))?;
            let reading = Arc::clone(&reading);
            readers.push(baton::spawn(async move {
                reading.fetch_add(1, Ordering::Relaxed);
                let (res, _buf) = stream.read(Vec::with_capacity(64)).await;
                res
            }));
        }
        while idle_reads.load(Ordering::Relaxed) < IDLE {
            baton::task::yield_now().await;
        }
        // With every read in flight: a write and read on another socket, an accept, a timer.
        let (a, b) = UnixStream::pair().map_err(|e| e.to_string())?;
        let other = async {
            let (res, _) = a.write_all(b"still moving".to_vec()).await;
            res.map_err(|e| format!("write: {e}"))?;
            let (res, got) = b.read(Vec::with_capacity(32)).await;
            let n = res.map_err(|e| format!("read: {e}"))?;
            if &got[..n] != b"still moving" {
                return Err(format!("read back {:?}", &got[..n]));
            }
            let connect = baton::spawn(async move { TcpStream::connect(addr).await });
            let (_fresh, _) = listener
                .accept()
                .await
                .map_err(|e| format!("accept: {e}"))?;
            connect
                .await
                .map_err(|e| format!("connect task: {e}"))?
                .map_err(|e| format!("connect: {e}"))?;
            baton::time::sleep(Duration::from_millis(10)).await;
            Ok::<_, String>(())
        };
        baton::time::timeout(BOUND, other)
            .await
            .map_err(|_| "the write, accept and timer did not complete in time".to_owned())??;
        Ok::<_, String>(readers)
    });
    let readers = match result {
        Ok(readers) => readers,
        Err(why) => {
            let _ = peers.kill();
            let _ = peers.wait();
            panic!("{why}");
        }
    };
    let metrics = rt.metrics();
    assert!(
        metrics.ops_in_flight >= IDLE,
        "every idle read is in flight: {metrics:?}"
    );
    // The peers exit; every read resolves (end of stream) and its task ends.
    let mut ready = String::new();
    let mut out = BufReader::new(peers.stdout.take().expect("piped stdout"));
    let _ = out.read_line(&mut ready);
    assert_eq!(ready.trim(), "connected");
    let mut stdin = peers.stdin.take().expect("piped stdin");
    let _ = writeln!(stdin, "exit");
    drop(stdin);
    assert!(peers.wait().expect("peers exit").success());
    let ended = rt.block_on(async {
        let mut ended = 0;
        for reader in readers {
            if let Ok(Ok(0)) = reader.await {
                ended += 1;
            }
        }
        ended
    });
    assert_eq!(ended, IDLE, "every idle read saw its peer close");
    let report = rt.shutdown_timeout(Duration::from_secs(10));
    assert!(report.is_clean(), "{report:?}");
    let _ = std::fs::remove_file(&path);
}
