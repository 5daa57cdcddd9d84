//! End to end: a runtime with two workers (SPEC §12) — where spawns go, that tasks stay where
//! they started, that operations cross workers, that `bind_reuseport` spreads connections, and
//! that shutdown stops both workers without losing a write.

use std::io::{self, Read, Write};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use baton::fs::File;
use baton::net::{TcpListener, UnixStream};
use baton::task::{CancelReason, worker_index};
use baton_tests::Scratch;
use baton_tests::chunks::{assert_all_landed, poll_once, write_chunk};

/// Bound of every wait in this file; no assertion is about speed.
const DEADLINE: Duration = Duration::from_secs(60);

fn two_workers() -> io::Result<baton::Runtime> {
    baton::Builder::new().workers(2).build()
}

fn two_workers_and_handle() -> io::Result<(baton::Runtime, baton::Handle)> {
    let rt = two_workers()?;
    let handle = rt.handle();
    Ok((rt, handle))
}

fn joined<T>(rt: &baton::Runtime, join: baton::JoinHandle<T>) -> io::Result<T> {
    rt.block_on(join)
        .map_err(|err| io::Error::other(err.to_string()))
}

#[test]
fn zero_workers_is_a_clear_invalid_input_error() {
    baton_tests::assert_build_refused(baton::Builder::new().workers(0), "workers(0)");
}

#[test]
fn outside_spawns_spread_over_both_workers() -> io::Result<()> {
    let rt = two_workers()?;
    // Every task stays live until all are spawned, so each placement sees the load the earlier
    // ones made (rule Q1: fewest live tasks, ties round-robin); tasks that finished at once
    // would leave the split to how fast each worker drains.
    let go = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let joins: Vec<_> = (0..1000)
        .map(|_| {
            let go = Arc::clone(&go);
            rt.spawn(async move {
                while !go.load(Ordering::Acquire) {
                    baton::time::sleep(Duration::from_millis(1)).await;
                }
                worker_index()
            })
        })
        .collect();
    go.store(true, Ordering::Release);
    let mut per_worker = [0_usize; 2];
    for join in joins {
        match joined(&rt, join)? {
            Some(index) => per_worker[index] += 1,
            None => panic!("a task ran on no worker"),
        }
    }
    assert!(
        per_worker.iter().all(|&count| count >= 250),
        "{per_worker:?}"
    );
    let metrics = rt.metrics();
    assert_eq!(metrics.workers.len(), 2);
    let spawned: Vec<u64> = metrics.workers.iter().map(|w| w.tasks.spawned).collect();
    assert_eq!(spawned.iter().sum::<u64>(), 1000, "{metrics:?}");
    assert_eq!(metrics.tasks.spawned, 1000, "{metrics:?}");
    Ok(())
}

#[test]
fn spawn_on_lands_where_asked_and_a_missing_worker_is_named() -> io::Result<()> {
    let (rt, handle) = two_workers_and_handle()?;
    for index in [1, 0, 1, 1, 0] {
        let join = handle.spawn_on(index, async { worker_index() });
        assert_eq!(joined(&rt, join)?, Some(index));
    }
    let err = rt
        .block_on(handle.spawn_on(5, async {}))
        .expect_err("there is no worker 5");
    assert_eq!(
        err.cancel_reason(),
        Some(CancelReason::NoSuchWorker {
            index: 5,
            workers: 2
        })
    );
    assert!(err.to_string().contains("worker 5"), "{err}");
    Ok(())
}

#[test]
fn a_tasks_thread_and_worker_never_change_across_awaits() -> io::Result<()> {
    let rt = two_workers()?;
    let joins = rt.on_each_worker(|_| async {
        let (a, b) = UnixStream::pair()?;
        let thread = std::thread::current().id();
        let worker = worker_index();
        let (mut same_worker, mut same_thread) = (true, true);
        let mut buf = Vec::with_capacity(8);
        for round in 0..50_u8 {
            match round % 3 {
                0 => baton::task::yield_now().await,
                1 => baton::time::sleep(Duration::from_micros(50)).await,
                _ => {
                    a.write_all(vec![round]).await.0?;
                    let (res, back) = b.read(buf).await;
                    res?;
                    buf = back;
                }
            }
            // A local task spawned here stays here too.
            let child = baton::spawn(async { (std::thread::current().id(), worker_index()) });
            let (child_thread, child_worker) = child.await.map_err(io::Error::other)?;
            same_worker &= worker_index() == worker && child_worker == worker;
            same_thread &= std::thread::current().id() == thread && child_thread == thread;
        }
        Ok::<_, io::Error>((worker, same_worker, same_thread))
    });
    // Worker 0 moves to a `block_on` caller and back (SPEC §5), so its tasks may change
    // threads, never workers; worker 1 has one thread for the runtime's life.
    for (index, join) in joins.into_iter().enumerate() {
        let (worker, same_worker, same_thread) = joined(&rt, join)??;
        assert_eq!(worker, Some(index));
        assert!(same_worker, "worker {index}: a task changed workers");
        assert!(
            index == 0 || same_thread,
            "worker {index}: a task changed threads"
        );
    }
    Ok(())
}

/// Sockets and a sleep made (and first polled) on worker 1 are finished by a task on worker 0:
/// their requests stay on worker 1's ring, and the results cross to the task that polls them.
#[test]
fn operations_made_on_worker_one_complete_when_polled_on_worker_zero() -> io::Result<()> {
    let (rt, handle) = two_workers_and_handle()?;
    let made = handle.spawn_on(1, async {
        let (a, b) = UnixStream::pair()?;
        let mut sleep = Box::pin(baton::time::sleep(Duration::from_millis(20)));
        // One poll binds the sleep to this worker's timers.
        poll_once(sleep.as_mut()).await;
        Ok::<_, io::Error>((a, b, sleep, worker_index()))
    });
    let (a, b, sleep, made_on) = joined(&rt, made)??;
    assert_eq!(made_on, Some(1));
    let finished = handle.spawn_on(0, async move {
        sleep.await;
        let writer = baton::spawn(async move { a.write_all(b"across workers".to_vec()).await });
        let mut got = Vec::new();
        while got.len() < 14 {
            let (res, buf) = b.read(Vec::with_capacity(64)).await;
            if res? == 0 {
                break;
            }
            got.extend_from_slice(&buf);
        }
        let (res, _) = writer.await.map_err(io::Error::other)?;
        res?;
        Ok::<_, io::Error>((got, worker_index()))
    });
    let (got, polled_on) = joined(&rt, finished)??;
    assert_eq!(polled_on, Some(0));
    assert_eq!(got, b"across workers");
    Ok(())
}

#[test]
fn a_stream_made_on_worker_zero_does_its_io_on_worker_one_while_worker_zero_is_busy()
-> io::Result<()> {
    let (rt, handle) = two_workers_and_handle()?;
    let made = handle.spawn_on(0, async { UnixStream::pair() });
    let (a, b) = joined(&rt, made)??;
    // Worker 0's thread blocks in a task until worker 1's echo is done (or the bound passes):
    // a stream whose I/O still went through worker 0's ring could not progress meanwhile.
    let (blocking_tx, blocking) = mpsc::channel();
    let (release_tx, release) = mpsc::channel::<()>();
    let blocker = handle.spawn_on(0, async move {
        let _ = blocking_tx.send(());
        release.recv_timeout(Duration::from_secs(20)).is_ok()
    });
    blocking
        .recv_timeout(DEADLINE)
        .map_err(|_| io::Error::other("worker 0 never started the blocking task"))?;
    let (done_tx, done) = mpsc::channel();
    let echo = handle.spawn_on(1, async move {
        let mut got = Vec::new();
        for round in 0..20_u8 {
            let (res, _) = a.write_all(vec![round; 8]).await;
            res?;
            let mut need = 8;
            while need > 0 {
                let (res, buf) = b.read(Vec::with_capacity(need)).await;
                let n = res?;
                if n == 0 {
                    return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
                }
                got.extend_from_slice(&buf);
                need -= n;
            }
        }
        let _ = release_tx.send(());
        let _ = done_tx.send(());
        Ok::<_, io::Error>(got)
    });
    done.recv_timeout(DEADLINE)
        .map_err(|_| io::Error::other("the echo on worker 1 never finished"))?;
    assert!(
        joined(&rt, blocker)?,
        "worker 1 finished its I/O only after worker 0 was free again"
    );
    let got = joined(&rt, echo)??;
    let expected: Vec<u8> = (0..20_u8).flat_map(|round| [round; 8]).collect();
    assert_eq!(got, expected);
    Ok(())
}

#[test]
fn blocking_jobs_from_either_worker_and_awaited_on_the_other_complete() -> io::Result<()> {
    let (rt, handle) = two_workers_and_handle()?;
    let started = handle.spawn_on(1, async {
        let direct = baton::blocking::spawn_blocking(|| 2).await;
        let handed_over = baton::blocking::spawn_blocking(|| 40);
        (direct, handed_over)
    });
    let (direct, handed_over) = joined(&rt, started)?;
    assert_eq!(direct, Ok(2));
    let awaited = handle.spawn_on(0, handed_over);
    assert_eq!(joined(&rt, awaited)?, Ok(40));
    assert_eq!(rt.block_on(rt.spawn_blocking(|| 7)), Ok(7));
    Ok(())
}

/// 64 clients against one accept loop per worker over `bind_reuseport`: every client is echoed,
/// and both workers accepted some connections.
#[test]
fn reuseport_listeners_serve_every_client_and_both_workers_accept() -> io::Result<()> {
    const CLIENTS: usize = 64;
    let rt = two_workers()?;
    let first = TcpListener::bind_reuseport("127.0.0.1:0")?;
    let addr = first.local_addr()?;
    let mut first = Some(first);
    let accepted: Arc<[AtomicUsize; 2]> = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let loops = rt.on_each_worker(|index| {
        let listener = first
            .take()
            .map_or_else(|| TcpListener::bind_reuseport(addr), Ok);
        accept_and_echo(listener, Arc::clone(&accepted), index)
    });
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            std::thread::spawn(move || -> io::Result<Vec<u8>> {
                let mut stream = std::net::TcpStream::connect(addr)?;
                stream.set_read_timeout(Some(DEADLINE))?;
                stream.write_all(format!("client {i}").as_bytes())?;
                stream.shutdown(std::net::Shutdown::Write)?;
                let mut back = Vec::new();
                stream.read_to_end(&mut back)?;
                Ok(back)
            })
        })
        .collect();
    for (i, client) in clients.into_iter().enumerate() {
        let back = client.join().expect("a client thread does not panic")?;
        assert_eq!(back, format!("client {i}").as_bytes());
    }
    let counts = [0, 1].map(|i| accepted[i].load(Ordering::Relaxed));
    assert_eq!(counts.iter().sum::<usize>(), CLIENTS, "{counts:?}");
    assert!(counts.iter().all(|&count| count > 0), "{counts:?}");
    for accept_loop in loops {
        accept_loop.abort();
    }
    Ok(())
}

/// One worker's accept loop: counts its connections and echoes each until the peer is done.
async fn accept_and_echo(
    listener: io::Result<TcpListener>,
    accepted: Arc<[AtomicUsize; 2]>,
    index: usize,
) -> io::Result<()> {
    let listener = listener?;
    loop {
        let (stream, _) = listener.accept().await?;
        accepted[index].fetch_add(1, Ordering::Relaxed);
        drop(baton::spawn(async move {
            let (mut from_peer, mut to_peer) = stream.into_split();
            baton::io::copy(&mut from_peer, &mut to_peer).await
        }));
    }
}

/// Writes per worker: together within each worker's in-flight limit.
const WRITES: usize = 64;

/// Writes issued on both workers (one poll each, then the writing tasks park) are all in the
/// file after shutdown, every worker reports a drained ring, and every `Arc` the tasks held
/// is back to one.
#[test]
fn shutdown_with_writes_in_flight_on_both_workers_loses_none() -> io::Result<()> {
    let scratch = Scratch::new("workers-shutdown")?;
    let path = scratch.join("file");
    let rt = two_workers()?;
    let file = Arc::new(rt.block_on(File::create(&path))?);
    let (issued, all_issued) = mpsc::channel();
    for i in 0..2 * WRITES {
        let file = Arc::clone(&file);
        let issued = issued.clone();
        drop(rt.handle().spawn_on(i % 2, async move {
            poll_once(pin!(write_chunk(&file, i))).await;
            let _ = issued.send(worker_index());
            baton::time::sleep(Duration::from_secs(600)).await;
        }));
    }
    let mut per_worker = [0_usize; 2];
    for _ in 0..2 * WRITES {
        let worker = all_issued
            .recv_timeout(DEADLINE)
            .expect("every write was issued");
        per_worker[worker.expect("issued on a worker")] += 1;
    }
    assert_eq!(per_worker, [WRITES, WRITES]);
    let report = rt.shutdown_timeout(DEADLINE);
    assert!(report.io_drained, "{report:?}");
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.workers.len(), 2);
    assert!(report.workers.iter().all(Option::is_some), "{report:?}");
    assert_eq!(report.tasks_cancelled, 2 * WRITES, "{report:?}");
    assert_eq!(
        Arc::strong_count(&file),
        1,
        "a task's Arc outlived shutdown"
    );
    drop(file);
    let data = std::fs::read(&path)?;
    assert_all_landed(&data, 2 * WRITES, "");
    Ok(())
}

/// The runtime moved into a task on worker 1 and shut down there: the call returns without
/// waiting, later spawns on either worker are refused, and both workers really stop.
#[test]
fn shutdown_from_a_task_on_worker_one_stops_both_workers() -> io::Result<()> {
    let (rt, handle) = two_workers_and_handle()?;
    let pending = [0, 1].map(|i| handle.spawn_on(i, std::future::pending::<()>()));
    let shutter = handle.spawn_on(1, async move {
        let report = rt.shutdown_timeout(DEADLINE);
        (report.called_from_runtime, baton::spawn(async {}))
    });
    let (inside, refused) = handle
        .block_on(shutter)
        .map_err(|err| io::Error::other(err.to_string()))?;
    assert!(inside);
    for join in [
        refused,
        handle.spawn_on(0, async {}),
        handle.spawn(async {}),
    ] {
        let err = handle.block_on(join).expect_err("refused after shutdown");
        assert_eq!(err.cancel_reason(), Some(CancelReason::SpawnAfterShutdown));
    }
    for join in pending {
        let err = handle.block_on(join).expect_err("cancelled by shutdown");
        assert_eq!(err.cancel_reason(), Some(CancelReason::RuntimeShutdown));
    }
    Ok(())
}

#[test]
fn pinned_workers_run_on_the_cpu_their_metrics_name() -> io::Result<()> {
    let rt = baton::Builder::new().workers(2).pin_workers(true).build()?;
    let cpus = rt.on_each_worker(|_| async {
        // SAFETY: `sched_getcpu` has no preconditions.
        let cpu = unsafe { libc::sched_getcpu() };
        usize::try_from(cpu).ok()
    });
    let seen: Vec<Option<usize>> = cpus
        .into_iter()
        .map(|join| joined(&rt, join))
        .collect::<io::Result<_>>()?;
    // Worker 0's background thread pins itself when it starts, which may come after this
    // thread borrowed the worker from the slot: wait (bounded) for it.
    let waited = std::time::Instant::now();
    let mut metrics = rt.metrics();
    while metrics.workers[0].cpu.is_none() && waited.elapsed() < DEADLINE {
        std::thread::sleep(Duration::from_millis(5));
        metrics = rt.metrics();
    }
    // Worker 1 runs on its own pinned thread; worker 0's task may have run on this thread
    // (a `block_on` borrowing it is never pinned), so only its background pin is checked.
    assert!(metrics.workers[0].cpu.is_some(), "{metrics:?}");
    assert_eq!(seen[1], metrics.workers[1].cpu, "{metrics:?}");
    Ok(())
}

/// A `block_on` inside a task of worker 1 drives worker 1's own driver (nested-drive rules):
/// its timer and its blocking job complete there, and worker 0 is never borrowed.
#[test]
fn block_on_inside_a_task_of_worker_one_drives_that_worker() -> io::Result<()> {
    let rt = two_workers()?;
    let nested = rt.handle().spawn_on(1, async {
        let handle = baton::Handle::current();
        handle.block_on(baton::time::sleep(Duration::from_millis(2)));
        let job = handle.block_on(baton::blocking::spawn_blocking(|| 5));
        (job, worker_index())
    });
    assert_eq!(joined(&rt, nested)?, (Ok(5), Some(1)));
    Ok(())
}
