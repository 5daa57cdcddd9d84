//! End to end: `baton::process` — children spawned, fed and read through Baton streams,
//! waited for on the ring (no thread blocks), killed, and reaped when dropped.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::{Duration, Instant};

use baton::io::{AsyncReadExt, AsyncWriteExt};
use baton::process::{Command, Stdio};
use baton_tests::on_runtime;

/// A bound for a child to finish what it was asked: a hang fails instead of blocking CI.
const BOUND: Duration = Duration::from_secs(20);

/// Waits (polling `/proc`) until process `pid` is gone — exited *and* reaped: a zombie still
/// has its `/proc` entry.
async fn gone(pid: u32) -> bool {
    let started = Instant::now();
    while Path::new(&format!("/proc/{pid}")).exists() {
        if started.elapsed() > BOUND {
            return false;
        }
        baton::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

#[test]
fn a_child_s_output_is_read_through_a_baton_stream() -> io::Result<()> {
    on_runtime(async {
        let mut child = Command::new("echo")
            .args(["from", "the child"])
            .stdout(Stdio::piped())
            .spawn()?;
        let mut stdout = child.stdout.take().expect("stdout was piped");
        let (res, out) = stdout.read_to_end(Vec::new()).await;
        res?;
        assert_eq!(out, b"from the child\n");
        let status = child.wait().await?;
        assert!(status.success());
        assert_eq!(
            child.wait().await?,
            status,
            "a later wait returns the same status"
        );
        Ok(())
    })
}

#[test]
fn a_mebibyte_through_cat_comes_back_intact() -> io::Result<()> {
    on_runtime(async {
        let (mut child, mut stdin, mut stdout) = baton_tests::cat()?;
        let data: Vec<u8> = (0..1 << 20).map(|i| (i % 253) as u8).collect();
        let expected = data.clone();
        // Written and read at once: cat's pipe buffers hold far less than a mebibyte.
        let writer = baton::spawn(async move {
            let (res, _) = stdin.write_all(data).await;
            res
        });
        let (res, out) = baton::time::timeout(BOUND, stdout.read_to_end(Vec::new()))
            .await
            .map_err(io::Error::other)?;
        res?;
        writer.await.map_err(io::Error::other)??;
        assert_eq!(out.len(), expected.len());
        assert!(out == expected, "the bytes came back in order");
        assert!(child.wait().await?.success());
        Ok(())
    })
}

#[test]
fn output_captures_both_streams_and_the_exit_code() -> io::Result<()> {
    on_runtime(async {
        let output = Command::new("sh")
            .args(["-c", "echo out; echo err >&2; exit 3"])
            .output()
            .await?;
        assert_eq!(output.stdout, b"out\n");
        assert_eq!(output.stderr, b"err\n");
        assert_eq!(output.status.code(), Some(3));
        let status = Command::new("true").status().await?;
        assert!(status.success());
        Ok(())
    })
}

/// The child runs until the test closes its standard input, which it does only after `TICKS`
/// timer ticks beside the wait. A wait that blocked the worker would hold it, so no tick could
/// complete: the child ends by itself after `GIVE_UP` (instead of hanging) with `timeout`'s
/// status 124, and the wait ends before the ticks did, which fails the test.
#[test]
fn waiting_blocks_no_thread_a_timer_beside_it_keeps_time() -> io::Result<()> {
    const TICKS: usize = 20;
    const GIVE_UP: &str = "60";
    on_runtime(async {
        let mut child = Command::new("timeout")
            .args([GIVE_UP, "cat"])
            .stdin(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child.stdin.take().expect("stdin was piped");
        let waiting = baton::spawn(async move { child.wait().await });
        for tick in 0..TICKS {
            baton::time::sleep(Duration::from_millis(5)).await;
            assert!(
                !waiting.is_finished(),
                "the wait ended before the child was let go, at tick {tick}: \
                 it held the worker until the child gave up"
            );
        }
        drop(stdin);
        let status = baton::time::timeout(BOUND, waiting)
            .await
            .map_err(io::Error::other)?
            .map_err(io::Error::other)??;
        assert!(
            status.success(),
            "cat ended at the end of its input: {status:?}"
        );
        Ok(())
    })
}

#[test]
fn a_wait_cut_off_by_a_timeout_leaves_the_child_to_a_later_wait() -> io::Result<()> {
    on_runtime(async {
        // Runs until killed below (or dropped, if the test fails first).
        let mut child = Command::new("sleep").arg("30").kill_on_drop(true).spawn()?;
        let early = baton::time::timeout(Duration::from_millis(10), child.wait()).await;
        assert!(early.is_err(), "still running");
        child.start_kill()?;
        let status = baton::time::timeout(BOUND, child.wait())
            .await
            .map_err(io::Error::other)??;
        assert_eq!(
            status.signal(),
            Some(libc::SIGKILL),
            "the later wait sees the child's end"
        );
        Ok(())
    })
}

#[test]
fn kill_ends_the_child_with_sigkill() -> io::Result<()> {
    on_runtime(async {
        let mut child = Command::new("sleep").arg("30").spawn()?;
        baton::time::timeout(BOUND, child.kill())
            .await
            .map_err(io::Error::other)??;
        let status = child.wait().await?;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        Ok(())
    })
}

#[test]
fn a_dropped_child_is_reaped_and_kill_on_drop_kills_it() -> io::Result<()> {
    on_runtime(async {
        let finishing = Command::new("true").spawn()?;
        let finishing_pid = finishing.id();
        drop(finishing);
        assert!(
            gone(finishing_pid).await,
            "a dropped child that exits is reaped"
        );

        let sleeper = Command::new("sleep").arg("30").kill_on_drop(true).spawn()?;
        let sleeper_pid = sleeper.id();
        drop(sleeper);
        assert!(gone(sleeper_pid).await, "kill_on_drop killed and reaped it");
        Ok(())
    })
}

#[test]
fn a_missing_program_fails_as_std_fails() -> io::Result<()> {
    let std_kind = std::process::Command::new("/nonexistent/baton-test")
        .spawn()
        .err()
        .map(|e| e.kind());
    let rt = baton::Runtime::new()?;
    rt.block_on(async {
        let ours = Command::new("/nonexistent/baton-test")
            .spawn()
            .err()
            .map(|e| e.kind());
        assert_eq!(ours, std_kind);
        assert_eq!(ours, Some(io::ErrorKind::NotFound));
        io::Result::Ok(())
    })?;
    let outside = Command::new("true").spawn().err();
    assert!(outside.is_some_and(|e| baton::Error::from_io(&e).is_some()));
    Ok(())
}
