//! End to end: the decision for dropped file-system futures. A call that changes the file
//! system (`create_dir`, `rename`, `remove_file`, ...) is **retained**: once polled, it
//! happens even if its future is dropped — by a `timeout`, a `select!`, an aborted task —
//! and a runtime shutting down finishes it, as a dropped write still lands. A call that only looks
//! (`metadata`) is cancelled and leaves nothing behind.

use std::future::{Future, poll_fn};
use std::io;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use baton::fs;
use baton_tests::runtime_with_scratch;

/// Waits (bounded) until `done` holds: the detached requests complete on the worker, which
/// the background thread runs between `block_on` calls.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(20), "{what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Polls `future` once — which registers its ring request — and drops it before the worker
/// had a turn to complete it.
async fn poll_once_and_drop<F: Future>(future: F) -> bool {
    let mut future = pin!(future);
    poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx).is_pending())).await
}

#[test]
fn dropped_create_dir_rename_and_remove_file_futures_still_happen() -> io::Result<()> {
    let (rt, scratch) = runtime_with_scratch("dropped")?;
    let [dir, from, to, doomed] = scratch.joins(["dir", "from", "to", "doomed"]);
    std::fs::write(&from, b"moved")?;
    std::fs::write(&doomed, b"x")?;
    rt.block_on(async {
        assert!(poll_once_and_drop(fs::create_dir(&dir)).await, "in flight");
        assert!(
            poll_once_and_drop(fs::rename(&from, &to)).await,
            "in flight"
        );
        assert!(
            poll_once_and_drop(fs::remove_file(&doomed)).await,
            "in flight"
        );
        assert!(!dir.exists(), "dropped before the worker's turn");
    });
    wait_for("the dropped create_dir happened", || dir.is_dir());
    wait_for("the dropped rename happened", || {
        to.exists() && !from.exists()
    });
    wait_for("the dropped unlink happened", || !doomed.exists());
    assert_eq!(std::fs::read(&to)?, b"moved");
    Ok(())
}

#[test]
fn path_changes_raced_against_an_expired_timeout_all_happen() -> io::Result<()> {
    const RACES: usize = 50;
    let (rt, scratch) = runtime_with_scratch("dropped-timeout")?;
    let dirs: Vec<_> = (0..RACES)
        .map(|i| scratch.join(format!("dir-{i}")))
        .collect();
    let timed_out = rt.block_on(async {
        let mut timed_out = 0;
        for dir in &dirs {
            // An expired timeout polls the call once and drops it at the next wake-up, unless
            // the mkdir completed first: either way the directory must be there.
            match baton::time::timeout(Duration::ZERO, fs::create_dir(dir)).await {
                Ok(created) => created?,
                Err(_elapsed) => timed_out += 1,
            }
        }
        io::Result::Ok(timed_out)
    })?;
    eprintln!("the timeout dropped {timed_out} of {RACES} create_dir calls");
    wait_for("every directory exists, whoever won", || {
        dirs.iter().all(|dir| dir.is_dir())
    });
    Ok(())
}

#[test]
fn a_path_change_dropped_just_before_shutdown_is_finished_by_shutdown() -> io::Result<()> {
    let (rt, scratch) = runtime_with_scratch("dropped-shutdown")?;
    let from = scratch.file("from", b"x")?;
    let to = scratch.join("to");
    let dir = scratch.join("dir");
    rt.block_on(async {
        assert!(poll_once_and_drop(fs::create_dir(&dir)).await);
        assert!(poll_once_and_drop(fs::rename(&from, &to)).await);
    });
    let report = rt.shutdown_timeout(Duration::from_secs(10));
    assert!(report.io_drained, "{report:?}");
    assert!(dir.is_dir() && to.exists() && !from.exists());
    Ok(())
}

#[test]
fn a_dropped_metadata_lookup_is_cancelled_and_leaves_nothing_behind() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    rt.block_on(async {
        for _ in 0..100 {
            poll_once_and_drop(fs::metadata("/")).await;
        }
        assert!(fs::metadata("/").await?.is_dir(), "the next call works");
        io::Result::Ok(())
    })?;
    wait_for("every dropped lookup retired", || {
        let metrics = rt.metrics();
        metrics.ops_in_flight == 0 && metrics.ops_queued == 0
    });
    Ok(())
}
