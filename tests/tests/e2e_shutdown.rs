//! End to end: shutdown with writes in flight loses none of them, and a runtime used after
//! shutdown gives clear errors instead of hanging or panicking.

use std::io;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use baton::fs::{File, OpenOptions};
use baton_tests::chunks::{assert_all_landed, poll_once, write_chunk};

/// Writes per phase; both phases together fit the ring's in-flight limit (256), so every write
/// is owned by the kernel or about to be submitted when shutdown starts.
const WRITES: usize = 128;

fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("baton-e2e-{name}-{}", std::process::id()))
}

/// Spawns one task per chunk index in `indices`; each issues its chunk's write (one poll),
/// then parks on a long sleep, so shutdown cancels it while the write is queued or in flight.
/// Returns once every task has issued its write.
fn spawn_writers_then_park(rt: &baton::Runtime, file: &Arc<File>, indices: std::ops::Range<usize>) {
    let expected = indices.len();
    let started = Arc::new(AtomicUsize::new(0));
    for i in indices {
        let file = Arc::clone(file);
        let started = Arc::clone(&started);
        rt.spawn(async move {
            // The write stays pinned in the task until shutdown cancels the task.
            let mut write = pin!(write_chunk(&file, i));
            poll_once(write.as_mut()).await;
            started.fetch_add(1, Ordering::Release);
            baton::time::sleep(Duration::from_secs(600)).await;
        });
    }
    let waited = std::time::Instant::now();
    while started.load(Ordering::Acquire) < expected && waited.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(started.load(Ordering::Acquire), expected);
}

/// Polls `future` exactly once (registering its request), then drops it.
async fn poll_once_then_drop<F: Future>(future: F) {
    poll_once(pin!(future)).await;
}

#[test]
fn shutdown_with_writes_in_flight_loses_none() -> io::Result<()> {
    let rt = baton::Builder::new().ring_entries(256).build()?;
    let path = temp_path("inflight");
    let file = Arc::new(rt.block_on(File::create(&path))?);
    rt.block_on(async {
        for i in 0..WRITES {
            // Dropping a registered write does not cancel it (retained).
            poll_once_then_drop(write_chunk(&file, i)).await;
        }
    });
    // Tasks cancelled by shutdown mid-way: their issued writes must land too.
    spawn_writers_then_park(&rt, &file, WRITES..2 * WRITES);
    let report = rt.shutdown_timeout(Duration::from_secs(30));
    assert!(report.io_drained, "{report:?}");
    assert_eq!(report.io_leaked, 0, "{report:?}");
    assert!(report.tasks_cancelled >= WRITES, "{report:?}");
    drop(file);
    let data = std::fs::read(&path)?;
    std::fs::remove_file(&path)?;
    assert_all_landed(&data, 2 * WRITES, "");
    Ok(())
}

#[test]
fn a_runtime_used_after_shutdown_gives_clear_errors() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let handle = rt.handle();
    let path = temp_path("after");
    let file = rt.block_on(async {
        baton::fs::write(&path, b"before shutdown").await?;
        OpenOptions::new().read(true).open(&path).await
    })?;
    let report = rt.shutdown_timeout(Duration::from_secs(5));
    assert!(report.is_clean(), "{report:?}");
    assert!(handle.is_shutting_down());

    let spawned = handle.block_on(handle.spawn(async { 1 }));
    let err = spawned.expect_err("a task spawned after shutdown never runs");
    assert!(err.is_cancelled());
    assert!(err.to_string().contains("shut down"), "{err}");

    let refused = handle
        .try_spawn(async { 1 })
        .expect_err("refused after shutdown");
    assert_eq!(refused, baton::Error::ShuttingDown);

    let (read, _) = handle.block_on(file.read_at(vec![0; 8], 0));
    let read = read.expect_err("the driver is closed");
    assert_eq!(
        baton::Error::from_io(&read),
        Some(&baton::Error::Closed),
        "{read}"
    );

    let open = handle
        .block_on(File::open(&path))
        .expect_err("no ring to open it on");
    assert!(baton::Error::is_closed(&open), "{open}");

    let job = handle.block_on(handle.spawn_blocking(|| 1));
    assert_eq!(job, Err(baton::BlockingError::Closed));

    let slept = handle.block_on(baton::time::timeout(
        Duration::from_secs(5),
        baton::time::sleep(Duration::from_secs(600)),
    ));
    assert!(slept.is_ok(), "a sleep on a closed runtime ends at once");
    std::fs::remove_file(&path)
}

#[test]
fn dropping_a_runtime_with_live_tasks_cancels_them() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let sleeper = rt.spawn(baton::time::sleep(Duration::from_secs(600)));
    drop(rt);
    assert!(sleeper.is_finished());
    Ok(())
}

#[test]
fn a_long_blocking_job_does_not_cost_the_writes_in_flight() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let (started_tx, started) = std::sync::mpsc::channel::<()>();
    let (release, wait) = std::sync::mpsc::channel::<()>();
    let job = rt.spawn_blocking(move || {
        let _ = started_tx.send(());
        let _ = wait.recv_timeout(Duration::from_secs(60));
    });
    started
        .recv_timeout(Duration::from_secs(30))
        .map_err(io::Error::other)?;
    let path = temp_path("long-job");
    let file = Arc::new(rt.block_on(File::create(&path))?);
    rt.block_on(async {
        for i in 0..64 {
            poll_once_then_drop(write_chunk(&file, i)).await;
        }
    });
    let report = rt.shutdown_timeout(Duration::from_secs(2));
    let _ = release.send(());
    drop(job);
    assert!(report.io_drained, "{report:?}");
    assert_eq!(report.blocking_drained, Some(false), "{report:?}");
    assert_eq!(report.blocking_still_running(), 1, "{report:?}");
    drop(file);
    let data = std::fs::read(&path)?;
    std::fs::remove_file(&path)?;
    assert_all_landed(&data, 64, "");
    Ok(())
}

/// Writes issued through a ring of 4 entries: almost all of them sit in the driver's queue,
/// not in the kernel, when their futures go away and shutdown starts.
const QUEUED_WRITES: usize = 512;

#[test]
fn shutdown_finishes_queued_writes_of_a_tiny_ring() -> io::Result<()> {
    let rt = baton::Builder::new().ring_entries(4).build()?;
    let path = temp_path("tiny-ring");
    let file = Arc::new(rt.block_on(File::create(&path))?);
    let half = QUEUED_WRITES / 2;
    // Registered by the root, then dropped: retained writes, most of them queued.
    rt.block_on(async {
        for i in 0..half {
            poll_once_then_drop(write_chunk(&file, i)).await;
        }
    });
    // Registered by tasks that shutdown cancels while their writes are queued or in flight.
    spawn_writers_then_park(&rt, &file, half..QUEUED_WRITES);
    let report = rt.shutdown_timeout(Duration::from_secs(30));
    assert!(report.io_drained, "{report:?}");
    assert_eq!(report.io_leaked, 0, "{report:?}");
    drop(file);
    let data = std::fs::read(&path)?;
    std::fs::remove_file(&path)?;
    assert_all_landed(&data, QUEUED_WRITES, &format!("({report:?})"));
    Ok(())
}
