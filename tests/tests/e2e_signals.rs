//! End to end: `baton::signal` — every listener, on every runtime, sees a delivery whichever
//! thread the kernel picks; deliveries coalesce while nobody polls; shutdown ends listening.
//!
//! Each test uses a signal of its own: the test harness runs them in parallel in one process.

use std::future::Future;
use std::io;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use baton::signal::unix::{Signal, SignalKind, signal};
use baton_tests::on_runtime;

/// A generous bound for a delivery to arrive.
const ARRIVAL: Duration = Duration::from_secs(10);

/// Runs `body` on a runtime with a listener for `kind`, made there.
fn listening(kind: SignalKind, body: impl AsyncFnOnce(Signal) -> io::Result<()>) -> io::Result<()> {
    on_runtime(async { body(signal(kind)?).await })
}

/// Asserts that `listener` receives a delivery within [`ARRIVAL`].
async fn assert_delivered(listener: &mut Signal) {
    let got = baton::time::timeout(ARRIVAL, listener.recv()).await;
    assert_eq!(got, Ok(Some(())));
}

/// Asserts that `listener` receives nothing for 100 ms; `why` says why it must not.
async fn assert_quiet(listener: &mut Signal, why: &str) {
    let none = baton::time::timeout(Duration::from_millis(100), listener.recv()).await;
    assert!(none.is_err(), "{why}");
}

/// `future`'s output if it is woken and ready within `bound`, else `None`. Unlike
/// `time::timeout`, the bound is checked first, so a future that was never woken and only
/// happens to be ready when the bound fires still counts as late.
async fn within<F: Future>(bound: Duration, future: F) -> Option<F::Output> {
    let mut future = pin!(future);
    let mut sleep = pin!(baton::time::sleep(bound));
    std::future::poll_fn(|cx| {
        if sleep.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        future.as_mut().poll(cx).map(Some)
    })
    .await
}

fn raise(kind: SignalKind) {
    // SAFETY: kill(2) to this process has no memory-safety preconditions. Process-directed,
    // so the kernel picks the thread.
    let rc = unsafe { libc::kill(libc::getpid(), kind.as_raw_value()) };
    assert_eq!(rc, 0, "kill: {}", io::Error::last_os_error());
}

/// Raises `kind` on the calling thread with raise(3), which returns only after the handler
/// did: a delivery cannot arrive later than the test expects.
fn raise_here(kind: SignalKind) {
    // SAFETY: raise(3) has no memory-safety preconditions.
    let rc = unsafe { libc::raise(kind.as_raw_value()) };
    assert_eq!(rc, 0, "raise: {}", io::Error::last_os_error());
}

#[test]
fn every_listener_on_every_runtime_sees_a_delivery() -> io::Result<()> {
    let kind = SignalKind::user_defined1();
    let first = baton::Runtime::new()?;
    let second = baton::Runtime::new()?;
    let mut a = first.block_on(async { signal(kind) })?;
    let mut b = first.block_on(async { signal(kind) })?;
    let mut c = second.block_on(async { signal(kind) })?;
    // Raised from a thread that is no runtime's, once every listener is waiting: each must be
    // woken, not find the delivery on its first poll.
    let raiser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        raise(kind);
    });
    let on_second = std::thread::spawn(move || second.block_on(within(ARRIVAL, c.recv())));
    let on_first = first.block_on(async {
        let a = baton::spawn(async move { within(ARRIVAL, a.recv()).await });
        let b = within(ARRIVAL, b.recv()).await;
        (a.await.map_err(|e| e.to_string()), b)
    });
    raiser
        .join()
        .map_err(|_| io::Error::other("raising thread panicked"))?;
    let on_second = on_second
        .join()
        .map_err(|_| io::Error::other("second runtime's thread panicked"))?;
    assert_eq!(on_first, (Ok(Some(Some(()))), Some(Some(()))));
    assert_eq!(on_second, Some(Some(())));
    Ok(())
}

#[test]
fn deliveries_while_nobody_polls_coalesce_into_one() -> io::Result<()> {
    let kind = SignalKind::user_defined2();
    listening(kind, async |mut listener| {
        // Handled on this thread before each call returns: all three are in before the poll.
        for _ in 0..3 {
            raise_here(kind);
        }
        // Nobody polls while the hub reads the handler's writes.
        baton::time::sleep(Duration::from_millis(50)).await;
        assert_delivered(&mut listener).await;
        assert_quiet(
            &mut listener,
            "three deliveries before the poll were seen once",
        )
        .await;
        raise_here(kind);
        assert_delivered(&mut listener).await;
        Ok(())
    })
}

#[test]
fn a_listener_sees_only_deliveries_after_it_was_created() -> io::Result<()> {
    let kind = SignalKind::window_change();
    listening(kind, async |mut early| {
        raise(kind);
        assert_delivered(&mut early).await;
        let mut late = signal(kind)?;
        assert_quiet(&mut late, "the earlier delivery is not the new listener's").await;
        Ok(())
    })
}

#[test]
fn ctrl_c_resolves_on_sigint() -> io::Result<()> {
    on_runtime(async {
        let mut ctrl_c = pin!(baton::signal::ctrl_c());
        // The first poll installs the handler (before it, SIGINT would end the process).
        let first = ctrl_c
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()));
        assert!(matches!(first, Poll::Pending));
        raise(SignalKind::interrupt());
        baton::time::timeout(ARRIVAL, ctrl_c)
            .await
            .map_err(io::Error::other)?
    })
}

#[test]
fn signals_that_cannot_be_handled_are_refused_with_invalid_input() -> io::Result<()> {
    on_runtime(async {
        for raw in [libc::SIGKILL, libc::SIGSTOP, libc::SIGSEGV, 0, 65, -1] {
            let err = signal(SignalKind::from_raw(raw)).err().map(|e| e.kind());
            assert_eq!(err, Some(io::ErrorKind::InvalidInput), "signal {raw}");
        }
        Ok(())
    })
}

#[test]
fn listening_outside_a_runtime_says_so_and_shutdown_ends_listening() -> io::Result<()> {
    let err = signal(SignalKind::alarm()).err();
    assert!(err.is_some_and(|e| baton::Error::from_io(&e).is_some()));
    let rt = baton::Runtime::new()?;
    let handle = rt.handle();
    let mut listener = rt.block_on(async { signal(SignalKind::alarm()) })?;
    let report = rt.shutdown_timeout(Duration::from_secs(5));
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(
        handle.block_on(listener.recv()),
        None,
        "the runtime shut down"
    );
    Ok(())
}
