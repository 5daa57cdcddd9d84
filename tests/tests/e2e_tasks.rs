//! End to end: thousands of tasks through the facade — spawned inside `block_on`, from foreign
//! threads through a `Handle`, and as local tasks — all complete with the right results.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const TASKS: usize = 10_000;

#[test]
fn ten_thousand_tasks_inside_block_on_all_complete() -> std::io::Result<()> {
    let rt = baton::Runtime::new()?;
    let total = rt.block_on(async {
        let joins: Vec<_> = (0..TASKS)
            .map(|i| {
                baton::spawn(async move {
                    baton::task::yield_now().await;
                    i as u64
                })
            })
            .collect();
        let mut total = 0;
        for join in joins {
            total += join.await.map_err(std::io::Error::other)?;
        }
        std::io::Result::Ok(total)
    })?;
    assert_eq!(total, (0..TASKS as u64).sum::<u64>());
    let metrics = rt.metrics();
    assert!(metrics.tasks.completed >= TASKS as u64, "{metrics:?}");
    Ok(())
}

#[test]
fn tasks_spawned_from_four_threads_progress_without_block_on() -> std::io::Result<()> {
    let rt = baton::Runtime::new()?;
    let done = Arc::new(AtomicUsize::new(0));
    let spawners: Vec<_> = (0..4)
        .map(|_| {
            let handle = rt.handle();
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                (0..TASKS / 4)
                    .map(|_| {
                        let done = Arc::clone(&done);
                        handle.spawn(async move {
                            baton::task::yield_now().await;
                            done.fetch_add(1, Ordering::Relaxed);
                        })
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut joins = Vec::new();
    for spawner in spawners {
        joins.extend(spawner.join().expect("a spawner thread does not panic"));
    }
    // Nobody is in `block_on`: the background thread runs them.
    let started = Instant::now();
    while done.load(Ordering::Relaxed) < TASKS && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(done.load(Ordering::Relaxed), TASKS);
    assert!(joins.iter().all(baton::JoinHandle::is_finished));
    Ok(())
}

#[test]
fn local_tasks_hold_rc_and_finish_on_the_calling_thread() -> std::io::Result<()> {
    let rt = baton::Runtime::new()?;
    let sum = rt.block_on(async {
        let shared = std::rc::Rc::new(std::cell::Cell::new(0u64));
        let joins: Vec<_> = (0..1000u64)
            .map(|i| {
                let shared = std::rc::Rc::clone(&shared);
                baton::spawn_local(async move {
                    baton::task::yield_now().await;
                    shared.set(shared.get() + i);
                })
            })
            .collect();
        for join in joins {
            join.await.map_err(std::io::Error::other)?;
        }
        std::io::Result::Ok(shared.get())
    })?;
    assert_eq!(sum, (0..1000u64).sum::<u64>());
    Ok(())
}

#[test]
fn abort_and_panic_are_reported_through_join_handles() -> std::io::Result<()> {
    let rt = baton::Runtime::new()?;
    rt.block_on(async {
        let sleeper = baton::spawn(baton::time::sleep(Duration::from_secs(600)));
        sleeper.abort();
        let aborted = sleeper.await.expect_err("an aborted task has no output");
        assert!(aborted.is_cancelled());
        let panicked = baton::spawn(async { panic!("boom") }).await;
        assert!(panicked.is_err_and(|err| err.is_panic()));
    });
    Ok(())
}

#[test]
fn the_current_handle_is_the_runtime_everywhere_its_worker_runs() -> std::io::Result<()> {
    let rt = baton::Runtime::new()?;
    let other = baton::Runtime::new()?;
    let handle = rt.handle();
    // In a task on the background thread.
    let in_task =
        rt.block_on(rt.spawn(async { baton::Handle::try_current().map(|h| h.runtime_id()) }));
    assert_eq!(in_task.ok().and_then(Result::ok), Some(handle.runtime_id()));
    // In the root, and in another runtime's block_on nested inside it.
    rt.block_on(async {
        assert!(baton::Handle::current().same_runtime(&handle));
        other.block_on(async {
            assert!(baton::Handle::current().same_runtime(&other.handle()));
        });
        assert!(baton::Handle::current().same_runtime(&handle));
    });
    assert!(baton::Handle::try_current().is_err());
    Ok(())
}

/// The drain after a root (loan rule L12): a local task the root spawned and left runnable has
/// run when `block_on` returns, on the calling thread, with the worker at rest after it.
#[test]
fn a_local_task_left_by_a_block_on_root_runs_before_block_on_returns() -> std::io::Result<()> {
    let rt = baton::Runtime::new()?;
    for round in 0..100 {
        let ran = std::rc::Rc::new(std::cell::Cell::new(false));
        let flag = std::rc::Rc::clone(&ran);
        rt.block_on(async move {
            let _join = baton::spawn_local(async move { flag.set(true) });
        });
        assert!(ran.get(), "round {round}: the local task had not run");
    }
    Ok(())
}

/// `?` on a join or a blocking handle works in `io::Result` code (as tokio's `JoinError`
/// does): the failure arrives as an `ErrorKind::Other` error carrying the original one.
#[test]
fn join_and_blocking_errors_convert_into_io_errors() {
    let rt = baton::Runtime::new().expect("runtime");
    rt.block_on(async {
        async fn joined(handle: baton::JoinHandle<u8>) -> std::io::Result<u8> {
            Ok(handle.await?)
        }
        async fn blocked(handle: baton::blocking::BlockingHandle<u8>) -> std::io::Result<u8> {
            Ok(handle.await?)
        }
        assert_eq!(joined(baton::spawn(async { 7 })).await.expect("ok"), 7);
        let pending = baton::spawn(std::future::pending::<u8>());
        pending.abort();
        let err = joined(pending).await.expect_err("aborted");
        assert_eq!(err.kind(), std::io::ErrorKind::Other);
        let inner = err
            .get_ref()
            .and_then(|e| e.downcast_ref::<baton::JoinError>());
        assert!(inner.is_some_and(baton::JoinError::is_cancelled), "{err:?}");

        assert_eq!(
            blocked(baton::blocking::spawn_blocking(|| 9))
                .await
                .expect("ok"),
            9
        );
        let err = blocked(baton::blocking::spawn_blocking(|| -> u8 { panic!("boom") }))
            .await
            .expect_err("panicked");
        assert_eq!(err.kind(), std::io::ErrorKind::Other);
        let inner = err
            .get_ref()
            .and_then(|e| e.downcast_ref::<baton::BlockingError>());
        assert!(inner.is_some_and(baton::BlockingError::is_panic), "{err:?}");
    });
}
