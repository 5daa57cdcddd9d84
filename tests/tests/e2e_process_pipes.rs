//! End to end: a child's piped standard streams are real pipes — what a child does with a pipe
//! works, our reads of them are cancel-safe, writes after the child or we closed fail as std's
//! do, and a write stuck on a child that never reads does not hold up shutdown.

use std::io;
use std::time::{Duration, Instant};

use baton::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use baton::process::{Command, Stdio};
use baton_tests::on_runtime;

/// A bound for a child to finish what it was asked: a hang fails instead of blocking CI.
const BOUND: Duration = Duration::from_secs(20);

fn sh(script: &str) -> Command {
    let mut command = Command::new("sh");
    command.args(["-c", script]);
    command
}

/// `test -p`, `/dev/stdin`, `/dev/stdout` and `/dev/stderr` in the child: each needs a pipe
/// (a socket pair fails `test -p`, and opening it through `/dev/std*` fails with `ENXIO`).
#[test]
fn the_child_sees_pipes_and_can_open_them_by_name() -> io::Result<()> {
    on_runtime(async {
        let mut child = sh(
            "test -p /dev/stdin && test -p /dev/stdout && test -p /dev/stderr \
                            && echo out > /dev/stdout && echo err > /dev/stderr \
                            && cat /dev/stdin",
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
        let mut stdin = child.stdin.take().expect("stdin was piped");
        stdin.write_all(b"in\n").await.0?;
        drop(stdin);
        let output = baton::time::timeout(BOUND, child.wait_with_output())
            .await
            .map_err(io::Error::other)??;
        assert_eq!(String::from_utf8_lossy(&output.stderr), "err\n");
        assert_eq!(String::from_utf8_lossy(&output.stdout), "out\nin\n");
        assert!(
            output.status.success(),
            "the child's checks failed: {output:?}"
        );
        Ok(())
    })
}

/// A read of the child's output dropped by a timeout loses nothing: what the child writes
/// later comes with the next read, every byte once and in order.
#[test]
fn reads_cut_short_by_timeouts_lose_no_byte() -> io::Result<()> {
    on_runtime(async {
        let mut child = sh("for i in 1 2 3 4 5 6 7 8; do printf \"$i\"; sleep 0.03; done")
            .stdout(Stdio::piped())
            .spawn()?;
        let mut stdout = child.stdout.take().expect("stdout was piped");
        let mut got = Vec::new();
        let started = Instant::now();
        loop {
            assert!(started.elapsed() < BOUND, "the child's output never ended");
            let read = stdout.read(Vec::with_capacity(1));
            match baton::time::timeout(Duration::from_millis(7), read).await {
                Err(_elapsed) => continue,
                Ok((res, buf)) => {
                    if res? == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf);
                }
            }
        }
        assert_eq!(got, b"12345678");
        assert!(child.wait().await?.success());
        Ok(())
    })
}

/// `shutdown` closes the child's input (a `cat` ends), and a write after it is refused with
/// std's error for a closed pipe; a second `shutdown` is fine.
#[test]
fn shutting_stdin_ends_the_child_s_input_and_refuses_later_writes() -> io::Result<()> {
    on_runtime(async {
        let (mut child, mut stdin, mut stdout) = baton_tests::cat()?;
        stdin.write_all(b"abc").await.0?;
        AsyncWrite::shutdown(&mut stdin).await?;
        let (res, out) = baton::time::timeout(BOUND, stdout.read_to_end(Vec::new()))
            .await
            .map_err(io::Error::other)?;
        res?;
        assert_eq!(out, b"abc");
        assert!(child.wait().await?.success());
        let (res, _) = stdin.write(b"more").await;
        let err = res.expect_err("the input was shut down");
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
        AsyncWrite::shutdown(&mut stdin).await?;
        Ok(())
    })
}

/// A write to a child that exited without reading fails with `BrokenPipe`, as std's write to
/// a pipe whose reader is gone does (the test harness ignores `SIGPIPE`, as Rust programs do).
///
/// "Eventually": a process another test forks while this pipe exists holds a copy of its read
/// end until that process execs (the end closes on exec), so a write may still succeed for a
/// moment after the child is gone.
#[test]
fn a_write_to_a_child_that_is_gone_is_broken_pipe() -> io::Result<()> {
    on_runtime(async {
        let mut child = Command::new("true").stdin(Stdio::piped()).spawn()?;
        let mut stdin = child.stdin.take().expect("stdin was piped");
        assert!(child.wait().await?.success());
        let started = Instant::now();
        let err = loop {
            match stdin.write(b"nobody reads this").await {
                (Err(err), _) => break err,
                (Ok(_), _) if started.elapsed() < BOUND => {
                    baton::time::sleep(Duration::from_millis(10)).await;
                }
                (Ok(_), _) => panic!("writes still succeed {BOUND:?} after the reader is gone"),
            }
        };
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
        assert_eq!(err.raw_os_error(), Some(libc::EPIPE));
        Ok(())
    })
}

/// A write blocked on a full pipe whose reader never reads (and dropped, so it is retained)
/// does not hold up the runtime's shutdown: closure cancels it, as it does a stuck send.
#[test]
fn a_write_stuck_on_a_child_that_never_reads_does_not_hold_up_shutdown() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let mut child = rt.block_on(async {
        let mut child = Command::new("sleep")
            .arg("30")
            .stdin(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let mut stdin = child.stdin.take().expect("stdin was piped");
        // Fills the pipe (64 KiB by default), then waits for room that never comes.
        let stuck = baton::spawn(async move { stdin.write_all(vec![7u8; 1 << 20]).await.0 });
        baton::time::sleep(Duration::from_millis(50)).await;
        assert!(!stuck.is_finished(), "a 1 MiB write cannot fit in the pipe");
        drop(stuck);
        io::Result::Ok(child)
    })?;
    // Dropped on a thread of its own, so a shutdown that hangs fails the test instead.
    let (done, dropped) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(rt);
        let _ = done.send(());
    });
    // Half the drop's own 10 s deadline, after which it would give up on the write anyway:
    // waiting that long at all is the failure (a clean shutdown takes milliseconds).
    let waited = dropped.recv_timeout(Duration::from_secs(5));
    child.start_kill()?;
    assert!(waited.is_ok(), "shutdown waited on the stuck write");
    Ok(())
}

/// Our end of a pipe reads in order across vectored reads too.
#[test]
fn a_vectored_read_of_the_child_s_output_fills_the_buffers_in_order() -> io::Result<()> {
    on_runtime(async {
        let mut child = Command::new("printf")
            .arg("abcdefg")
            .stdout(Stdio::piped())
            .spawn()?;
        let mut stdout = child.stdout.take().expect("stdout was piped");
        assert!(child.wait().await?.success());
        let bufs = vec![Vec::with_capacity(3), Vec::with_capacity(10)];
        let (res, bufs) = AsyncRead::read_vectored(&mut stdout, bufs).await;
        assert_eq!(res?, 7);
        assert_eq!(bufs[0], b"abc");
        assert_eq!(bufs[1], b"defg");
        Ok(())
    })
}
