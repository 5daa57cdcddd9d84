//! The blocking-pool fallback of the file-system calls, driven with the `cfg(test)` knob that
//! makes every ring request refuse as a kernel without its opcode would (`fs::knob`): the same
//! answers and the same error kinds as on the ring, path changes that finish when dropped
//! (fallback rule Y1), and a `set_len` on the pool that the next sync does not skip.

use std::future::{Future, poll_fn};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use super::Scratch;
use crate::fs::{self, File, Metadata, knob};
use crate::{Builder, Runtime};

fn runtime() -> Runtime {
    Builder::new()
        .blocking_threads(2)
        .build()
        .expect("a runtime")
}

/// Pool jobs `rt` accepted so far.
fn pool_jobs(rt: &Runtime) -> u64 {
    rt.metrics().blocking.accepted
}

#[test]
fn every_ring_call_falls_back_to_the_pool_with_the_same_answer() -> io::Result<()> {
    let rt = runtime();
    let scratch = Scratch::new("fallback-answers");
    let (dir, file, link, hard, moved) = (
        scratch.join("dir"),
        scratch.join("file"),
        scratch.join("link"),
        scratch.join("hard"),
        scratch.join("moved"),
    );
    rt.block_on(async {
        fs::write(&file, b"0123456789").await?;
        let _refusing = knob::refuse_ring();
        let before = pool_jobs(&rt);
        fs::create_dir(&dir).await?;
        fs::create_dir_all(dir.join("a/b/c")).await?;
        assert!(std::fs::metadata(dir.join("a/b/c"))?.is_dir());
        let meta = fs::metadata(&file).await?;
        assert_eq!(meta, Metadata::from(std::fs::metadata(&file)?));
        fs::symlink(&file, &link).await?;
        assert!(fs::symlink_metadata(&link).await?.is_symlink());
        fs::hard_link(&file, &hard).await?;
        assert_eq!(fs::metadata(&hard).await?.nlink(), 2);
        fs::rename(&hard, &moved).await?;
        assert!(fs::try_exists(&moved).await? && !fs::try_exists(&hard).await?);
        let opened = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&file)
            .await?;
        opened.set_len(4).await?;
        opened.sync_range(0, 0).await?;
        let meta = opened.metadata().await?;
        assert_eq!(meta.len(), 4);
        assert_eq!(meta, Metadata::from(std::fs::metadata(&file)?));
        fs::remove_file(&moved).await?;
        fs::remove_dir(dir.join("a/b/c")).await?;
        assert!(!dir.join("a/b/c").exists() && !moved.exists());
        let used = pool_jobs(&rt) - before;
        assert!(used >= 16, "each call ran on the pool: {used} jobs");
        Ok(())
    })
}

#[test]
fn fallback_errors_have_the_kinds_std_gives() -> io::Result<()> {
    let rt = runtime();
    let scratch = Scratch::new("fallback-errors");
    let (file, full) = (scratch.join("file"), scratch.join("full"));
    std::fs::write(&file, b"x")?;
    std::fs::create_dir(&full)?;
    std::fs::write(full.join("inside"), b"x")?;
    rt.block_on(async {
        let _refusing = knob::refuse_ring();
        let kind = |r: io::Result<()>| r.expect_err("an error").kind();
        let missing = fs::metadata(scratch.join("missing")).await.map(drop);
        assert_eq!(kind(missing), io::ErrorKind::NotFound);
        assert_eq!(
            kind(fs::create_dir(&full).await),
            io::ErrorKind::AlreadyExists
        );
        assert_eq!(
            kind(fs::remove_dir(&full).await),
            io::ErrorKind::DirectoryNotEmpty
        );
        let through_a_file = fs::metadata(file.join("child")).await.map(drop);
        assert_eq!(kind(through_a_file), io::ErrorKind::NotADirectory);
        let before = pool_jobs(&rt);
        let nul = fs::create_dir(scratch.join("a\0b")).await.expect_err("NUL");
        assert_eq!(nul.kind(), io::ErrorKind::InvalidInput);
        assert!(nul.to_string().contains("NUL byte"), "{nul}");
        assert_eq!(pool_jobs(&rt), before, "refused before the pool");
        Ok(())
    })
}

#[test]
fn both_roads_refuse_a_nul_path_with_the_same_message() -> io::Result<()> {
    let rt = runtime();
    rt.block_on(async {
        let ring = baton_uring::ops::mkdirat("a\0b", 0o777).await;
        let ring = ring.expect_err("the driver refuses it").to_string();
        let _refusing = knob::refuse_ring();
        let facade = fs::canonicalize("a\0b").await.expect_err("the facade too");
        assert_eq!(facade.to_string(), ring);
        Ok(())
    })
}

/// Polls `future` once inside the runtime, asserts it is still pending, and drops it.
async fn poll_once_and_drop<F: Future>(future: F) {
    let mut future = pin!(future);
    let pending = poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx).is_pending())).await;
    assert!(pending, "queued behind the busy pool thread");
}

/// Waits (bounded) until `done` holds.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(20), "{what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn dropped_path_changes_queued_on_the_pool_still_happen_and_a_dropped_lookup_is_cancelled()
-> io::Result<()> {
    let rt = Builder::new().blocking_threads(1).build()?;
    let scratch = Scratch::new("fallback-dropped");
    let (dir, from, to, doomed) = (
        scratch.join("dir"),
        scratch.join("from"),
        scratch.join("to"),
        scratch.join("doomed"),
    );
    std::fs::write(&from, b"x")?;
    std::fs::write(&doomed, b"x")?;
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let busy = rt.spawn_blocking(move || gate.recv().ok());
    wait_for("the gate job started", || {
        rt.metrics().blocking.running_interruptible == 1
    });
    let cancelled_before = rt.metrics().blocking.cancelled;
    rt.block_on(async {
        let _refusing = knob::refuse_ring();
        poll_once_and_drop(fs::create_dir(&dir)).await;
        poll_once_and_drop(fs::rename(&from, &to)).await;
        poll_once_and_drop(fs::remove_file(&doomed)).await;
        poll_once_and_drop(fs::metadata(&from)).await;
    });
    assert!(!dir.exists() && from.exists(), "nothing ran yet");
    release.send(()).map_err(io::Error::other)?;
    assert_eq!(rt.block_on(busy), Ok(Some(())));
    wait_for("the dropped calls finished", || {
        dir.is_dir() && to.exists() && !from.exists() && !doomed.exists()
    });
    wait_for("the dropped lookup was cancelled, not run", || {
        rt.metrics().blocking.cancelled == cancelled_before + 1
    });
    Ok(())
}

#[test]
fn set_len_on_the_pool_makes_the_next_sync_go_to_the_kernel() -> io::Result<()> {
    let rt = runtime();
    let scratch = Scratch::new("fallback-set-len");
    let path = scratch.join("file");
    rt.block_on(async {
        let file = File::create(&path).await?;
        file.write_all_at(b"0123456789".to_vec(), 0).await.0?;
        file.sync_all().await?;
        let ops = || rt.metrics().ops_completed;
        let before = ops();
        file.sync_all().await?;
        assert_eq!(ops(), before, "a clean file's sync needs no SQE");
        {
            let _refusing = knob::refuse_ring();
            file.set_len(3).await?;
        }
        assert_eq!(std::fs::read(&path)?, b"012");
        let before = ops();
        file.sync_all().await?;
        assert_eq!(ops(), before + 1, "the truncate on the pool made it dirty");
        Ok(())
    })
}
