//! End to end: operations polled on foreign threads, nested `block_on`, concurrent `block_on`
//! from several threads, and work spawned between `block_on` calls.

use baton_tests::{on_runtime, poll_here};
use std::io;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

#[test]
fn a_read_polled_on_a_foreign_thread_is_forwarded() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let path = std::env::temp_dir().join(format!("baton-e2e-foreign-{}", std::process::id()));
    let file = rt.block_on(async {
        baton::fs::write(&path, b"forwarded").await?;
        baton::fs::File::open(&path).await
    })?;
    let file = Arc::new(file);
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let file = Arc::clone(&file);
            thread::spawn(move || {
                let (res, buf) = poll_here(file.read_at(vec![0; 9], 0));
                res.map(|n| buf[..n].to_vec())
            })
        })
        .collect();
    for reader in readers {
        let read = reader.join().expect("a reader thread does not panic")?;
        assert_eq!(read, b"forwarded");
    }
    // And while a `block_on` holds the worker on this thread.
    let echoed = rt.block_on(async {
        let file = Arc::clone(&file);
        let reader = thread::spawn(move || poll_here(file.read_at(vec![0; 9], 0)).0);
        // Keep the worker turning (never block the root) until the forwarded read is served.
        let waited = Instant::now();
        while !reader.is_finished() && waited.elapsed() < Duration::from_secs(30) {
            baton::time::sleep(Duration::from_millis(1)).await;
        }
        reader.join().expect("the reader thread does not panic")
    })?;
    assert_eq!(echoed, 9);
    std::fs::remove_file(&path)
}

#[test]
fn nested_block_on_drives_the_same_worker() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let handle = rt.handle();
    let borrowed = String::from("borrowed, not 'static");
    let out = rt.block_on(async {
        let outer_task = baton::spawn(async { 1 });
        let inner = handle.block_on(async {
            baton::time::sleep(Duration::from_millis(1)).await;
            let innermost = handle.block_on(async { borrowed.len() });
            innermost + baton::spawn(async { 1 }).await.unwrap_or(0)
        });
        inner + outer_task.await.unwrap_or(0)
    });
    assert_eq!(out, borrowed.len() + 2);
    Ok(())
}

#[test]
fn concurrent_block_on_from_four_threads_all_finish() -> io::Result<()> {
    let rt = Arc::new(baton::Runtime::new()?);
    let threads: Vec<_> = (0..4u64)
        .map(|n| {
            let rt = Arc::clone(&rt);
            thread::spawn(move || {
                // All but one of these calls find the worker busy and poll in place: `spawn`
                // and `spawn_blocking` still reach the runtime.
                rt.block_on(async move {
                    baton::time::sleep(Duration::from_millis(5)).await;
                    let job = baton::blocking::spawn_blocking(move || n * 10).await;
                    let task = baton::spawn(async move { n }).await;
                    job.unwrap_or(0) + task.unwrap_or(0)
                })
            })
        })
        .collect();
    let total: u64 = threads
        .into_iter()
        .map(|t| t.join().expect("a block_on thread does not panic"))
        .sum();
    assert_eq!(total, (0..4).map(|n| n * 11).sum::<u64>());
    Ok(())
}

#[test]
fn work_spawned_between_block_on_calls_progresses() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let first = rt.block_on(async { 1 });
    let task = rt.spawn(async {
        for _ in 0..5 {
            baton::time::sleep(Duration::from_millis(1)).await;
        }
        "done"
    });
    let waited = Instant::now();
    while !task.is_finished() && waited.elapsed() < Duration::from_secs(30) {
        thread::sleep(Duration::from_millis(1));
    }
    assert!(
        task.is_finished(),
        "the background thread runs spawned work"
    );
    assert_eq!(rt.block_on(task).ok(), Some("done"));
    assert_eq!(first, 1);
    Ok(())
}

#[test]
fn timeout_cancels_a_read_that_never_completes() -> io::Result<()> {
    on_runtime(async {
        let (a, _b) = baton::net::UnixStream::pair()?;
        let read = baton::time::timeout(Duration::from_millis(20), a.read(vec![0; 8])).await;
        let elapsed = read.expect_err("nothing is ever written");
        let as_io: io::Error = elapsed.into();
        assert!(baton::Error::is_timeout(&as_io));
        // The socket is still usable after the cancelled read. Bounded: if the timed-out read
        // had not been cancelled it would take the byte, and this read would never complete.
        let bound = Duration::from_secs(10);
        let (res, _) = baton::time::timeout(bound, _b.write_all(b"x".to_vec())).await?;
        res?;
        let (res, _) = baton::time::timeout(bound, a.read(vec![0; 1])).await?;
        assert_eq!(res?, 1);
        io::Result::Ok(())
    })
}
