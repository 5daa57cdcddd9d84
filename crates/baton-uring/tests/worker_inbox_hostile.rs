//! Hostile callbacks on the completion inbox's path: a waker panicking when its wait settles
//! (propagated or contained, every other waker still runs), decoders that panic or try to
//! re-enter the wait table, and a panicking waker woken by a turn while the thread unwinds.

mod support;
mod worker_support;

use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Poll, Waker};

use baton_completion::{Decoder, WaitError};
use baton_uring::{
    DriverConfig, Park, WaitsError, WakerPanics, Worker, WorkerConfig, with_current_waits,
};
use support::per_waker_policy;
use worker_support::inbox::{
    PanicOnWake, assert_wait_then_shut_down, interruptible_job, poll_wait, poll_wait_with,
    register_job, register_prepared, shut_down_clean,
};
use worker_support::{run_here, serial, serial_worker, worker_with};

/// A waker counting its wakes.
struct CountWakes(AtomicUsize);

impl std::task::Wake for CountWakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

per_waker_policy!(
    panicking_waker_of_a_settled_wait =>
    a_panicking_waker_fails_the_turn_only_after_every_completion_settled_and_woke,
    a_panicking_waker_of_a_settled_wait_is_contained_after_every_completion_settled_and_woke
);

/// Worker rule W2: a waker panicking when its wait settles; every other settled wait's waker
/// still runs, and the panic reaches the runner only under `Propagate`.
fn panicking_waker_of_a_settled_wait(policy: WakerPanics) {
    let _serial = serial();
    let config =
        WorkerConfig::new().driver(DriverConfig::new().ring_entries(64).waker_panics(policy));
    let Some(worker) = worker_with(config) else {
        return;
    };
    let registrar = worker.handle().registrar();
    let counter = Arc::new(CountWakes(AtomicUsize::new(0)));
    let (first, second, submissions) = {
        let _entered = worker.enter();
        let (first, s1) = register_job(&registrar, 1);
        let (second, s2) = register_job(&registrar, 2);
        let panicky = Waker::from(Arc::new(PanicOnWake));
        let counting = Waker::from(Arc::clone(&counter));
        assert!(poll_wait_with::<u32>(first, &panicky).is_pending());
        assert!(poll_wait_with::<u32>(second, &counting).is_pending());
        (first, second, [s1, s2])
    };
    for submission in submissions {
        run_here(submission);
    }
    let turn = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker.turn(Park::Poll)));
    assert_eq!(
        turn.is_err(),
        policy == WakerPanics::Propagate,
        "the waker's panic reaches the runner only when asked to"
    );
    assert_eq!(worker.metrics().driver.waker_panics, 1);
    assert_eq!(
        counter.0.load(Ordering::Acquire),
        1,
        "the other waker still ran"
    );
    assert_eq!(worker.metrics().inbox.settled, 2);
    assert!(
        !worker.turn(Park::Poll).reentered,
        "the worker is usable afterwards"
    );
    {
        let _entered = worker.enter();
        assert_eq!(poll_wait(first), Poll::Ready(Ok(2)));
        assert_eq!(poll_wait(second), Poll::Ready(Ok(3)));
    }
    shut_down_clean(worker);
}

#[test]
fn a_hostile_decoder_is_contained_and_cannot_reenter_the_table() {
    serial_worker!(worker);
    let registrar = worker.handle().registrar();
    let reentry = Rc::new(std::cell::Cell::new(None));
    let (panicking, reentering, submissions) = {
        let _entered = worker.enter();
        let decoders: [Decoder<u32>; 2] = [
            Decoder::new(|_: u32| -> u32 { panic!("this decoder panics") }),
            Decoder::new({
                let reentry = Rc::clone(&reentry);
                move |n: u32| {
                    reentry.set(Some(with_current_waits(|_| ())));
                    n
                }
            }),
        ];
        let (keys, submissions): (Vec<_>, Vec<_>) = decoders
            .into_iter()
            .map(|decoder| register_prepared(&registrar, interruptible_job(|| 1_u32, decoder)))
            .unzip();
        (keys[0], keys[1], submissions)
    };
    for submission in submissions {
        run_here(submission);
    }
    let turn = worker.turn(Park::Poll);
    assert_eq!(
        turn.settled, 2,
        "both completions settled despite the hostile decoders"
    );
    assert_eq!(reentry.get(), Some(Err(WaitsError::Busy)));
    let _entered = worker.enter();
    assert!(matches!(
        poll_wait(panicking),
        Poll::Ready(Err(WaitError::Decode(
            baton_completion::DecodeError::Panicked { .. }
        )))
    ));
    assert_eq!(poll_wait(reentering), Poll::Ready(Ok(1)));
    drop(_entered);
    shut_down_clean(worker);
}

/// Turns the worker from a destructor, which runs while the thread unwinds.
struct TurnOnDrop<'a>(&'a Worker);

impl Drop for TurnOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.turn(Park::Poll);
    }
}

#[test]
fn a_panicking_waker_woken_by_a_turn_during_unwinding_does_not_abort() {
    serial_worker!(worker);
    let registrar = worker.handle().registrar();
    let (key, submission) = {
        let _entered = worker.enter();
        let (key, submission) = register_job(&registrar, 1);
        let panicky = Waker::from(Arc::new(PanicOnWake));
        assert!(poll_wait_with::<u32>(key, &panicky).is_pending());
        (key, submission)
    };
    run_here(submission);
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _turn = TurnOnDrop(&worker);
        panic!("the thread is already unwinding");
    }));
    assert!(unwound.is_err(), "the first panic still propagates");
    assert_eq!(
        worker.metrics().inbox.settled,
        1,
        "the turn settled the job"
    );
    assert_wait_then_shut_down(worker, key, Poll::Ready(Ok(2)));
}
