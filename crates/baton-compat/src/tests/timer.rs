//! `hyper::Timer`: its sleeps as hyper uses them — polled after they completed, and reset.

use std::future::poll_fn;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use hyper::rt::{Sleep, Timer as _};

use super::run;
use crate::hyper::Timer;

/// Polls `sleep` exactly once.
async fn poll_once(sleep: &mut Pin<Box<dyn Sleep>>) -> Poll<()> {
    poll_fn(|cx| Poll::Ready(sleep.as_mut().poll(cx))).await
}

/// A sleep of `after` that its first poll found waiting, its timer registered. A first poll
/// that comes only after the deadline (this thread ran late) completes the sleep at once, so
/// that sleep is dropped and another made.
async fn waiting_sleep(after: Duration) -> Pin<Box<dyn Sleep>> {
    for _ in 0..1000 {
        let mut sleep = Timer.sleep(after);
        if poll_once(&mut sleep).await.is_pending() {
            return sleep;
        }
    }
    panic!("no sleep of {after:?} was still waiting at its first poll");
}

#[test]
fn a_completed_sleep_is_ready_when_polled_again() {
    run(async {
        let mut sleep = Timer.sleep(Duration::from_millis(1));
        sleep.as_mut().await;
        assert_eq!(poll_once(&mut sleep).await, Poll::Ready(()));
        Ok(())
    });
}

#[test]
fn reset_moves_the_same_sleep_to_its_new_deadline() {
    run(async {
        let mut sleep = waiting_sleep(Duration::from_millis(1)).await;
        let before: *const dyn Sleep = &*sleep;
        let deadline = Instant::now() + Duration::from_millis(100);
        Timer.reset(&mut sleep, deadline);
        assert!(
            std::ptr::addr_eq(before, &*sleep),
            "reset boxed a new sleep"
        );
        sleep.as_mut().await;
        assert!(
            Instant::now() >= deadline,
            "the old 1 ms timer ended the sleep"
        );
        Ok(())
    });
}
