//! End to end: a `Sleep` as code ported from tokio uses it — polled again after it completed
//! (a `select!` loop over `&mut sleep`), and moved to a new deadline with `reset`.

use std::future::{Future, poll_fn};
use std::io;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use baton::time::{Instant, Sleep, sleep, timeout};

/// How long a sleep that should finish at once may take, generously.
const PROMPTLY: Duration = Duration::from_secs(20);

/// Polls `sleep` exactly once.
async fn poll_once(sleep: &mut Sleep) -> Poll<()> {
    poll_fn(|cx| Poll::Ready(Pin::new(&mut *sleep).poll(cx))).await
}

/// A sleep of `after` that its first poll found waiting, its timer registered. A first poll
/// that comes only after the deadline (this thread ran late) completes the sleep at once, so
/// that sleep is dropped and another made.
async fn waiting_sleep(after: Duration) -> Sleep {
    for _ in 0..1000 {
        let mut sleep = sleep(after);
        if poll_once(&mut sleep).await.is_pending() {
            return sleep;
        }
    }
    panic!("no sleep of {after:?} was still waiting at its first poll");
}

#[test]
fn a_sleep_polled_again_after_it_completed_is_ready_again() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    rt.block_on(async {
        for wait in [Duration::ZERO, Duration::from_millis(2)] {
            let mut sleep = sleep(wait);
            (&mut sleep).await;
            assert_eq!(
                poll_once(&mut sleep).await,
                Poll::Ready(()),
                "after {wait:?}"
            );
            let again = timeout(PROMPTLY, &mut sleep).await;
            assert!(
                again.is_ok(),
                "a completed sleep awaited again after {wait:?}"
            );
        }
    });
    Ok(())
}

#[test]
fn reset_moves_a_waiting_sleep_earlier_and_later() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    rt.block_on(async {
        let mut early = sleep(Duration::from_secs(600));
        assert_eq!(poll_once(&mut early).await, Poll::Pending);
        let deadline = Instant::now() + Duration::from_millis(5);
        early.reset(deadline);
        assert_eq!(early.deadline(), deadline);
        let fired = timeout(PROMPTLY, &mut early).await;
        assert!(
            fired.is_ok(),
            "a sleep reset from 600 s to 5 ms did not end"
        );

        let mut later = waiting_sleep(Duration::from_millis(1)).await;
        reset_and_wait(
            &mut later,
            Duration::from_millis(150),
            "reset from 1 ms to 150 ms",
        )
        .await;
    });
    Ok(())
}

#[test]
fn reset_after_completion_waits_again() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    rt.block_on(async {
        let mut sleep = sleep(Duration::from_millis(1));
        (&mut sleep).await;
        reset_and_wait(
            &mut sleep,
            Duration::from_millis(100),
            "reset after completing",
        )
        .await;
    });
    Ok(())
}

/// Resets `sleep` to `after` from now and checks that it waits for that deadline: pending at
/// its next poll unless that poll came after the deadline, and ended no earlier than the
/// deadline (a timer never fires early).
async fn reset_and_wait(sleep: &mut Sleep, after: Duration, what: &str) {
    let deadline = Instant::now() + after;
    sleep.reset(deadline);
    assert_eq!(sleep.deadline(), deadline, "{what}");
    let polled = poll_once(sleep).await;
    assert!(
        polled.is_pending() || Instant::now() >= deadline,
        "{what}: ready at once, before its deadline"
    );
    (&mut *sleep).await;
    assert!(
        Instant::now() >= deadline,
        "{what}: ended before its deadline"
    );
}

#[test]
fn reset_keeps_a_sleep_made_outside_a_runtime_with_the_runtime_it_bound_to() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let mut cx = Context::from_waker(Waker::noop());
    for reset in [false, true] {
        // Made outside any runtime: it binds to `rt` at its first poll.
        let mut sleep = sleep(Duration::from_secs(600));
        assert_eq!(rt.block_on(poll_once(&mut sleep)), Poll::Pending);
        if reset {
            sleep.reset(Instant::now() + Duration::from_secs(300));
        }
        let polled =
            std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(&mut sleep).poll(&mut cx)));
        assert!(
            matches!(polled, Ok(Poll::Pending)),
            "reset = {reset}: the sleep lost its runtime when polled outside it"
        );
    }
    Ok(())
}
