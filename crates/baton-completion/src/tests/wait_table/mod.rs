//! Unit tests of the wait table (crate rules E10–E13): routing a completion to its wait and
//! polling it (`routing`), and cancelling, discarding and bounding it (`cancel`), over the
//! fixture here.

use super::support::{RecordingSink, interruptible, kind, registrar};
use crate::dispatch::{AsyncDispatch, Dispatch, Submission};
use crate::prepared::{Decoder, PreparedOperation, from_fn};
use crate::registrar::Registrar;
use crate::sync::{Arc, AtomicUsize, Ordering};
use crate::wait_table::{SettleOutcome, WaitError, WaitKey, WaitTable};
use baton_cancel::{HookOutcome, Interruptible};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Wake, Waker};

mod cancel;
mod routing;

pub(super) struct Fixture {
    pub(super) registrar: Registrar,
    pub(super) sink: Arc<RecordingSink>,
    pub(super) table: WaitTable,
}

pub(super) fn fixture() -> Fixture {
    let (registrar, sink, allocator) = registrar();
    Fixture {
        registrar,
        sink,
        table: WaitTable::new(allocator),
    }
}

impl Fixture {
    pub(super) fn submit(&mut self, prepared: PreparedOperation) -> (WaitKey, Submission) {
        let identity = self.registrar.issue(kind(1)).expect("ids available");
        let binding = self.registrar.bind(identity, prepared).expect("valid bind");
        let (half, submission) = binding.split();
        let key = self.table.register(half).expect("same runtime");
        (key, submission)
    }

    /// An interruptible async job ("socket") that never finishes by itself, armed and polled
    /// once so it is claimed and running. Its hook counts its calls (returned) and reports
    /// `Reaped` from the `reap_after`-th call on, `PendingReap` before.
    pub(super) fn running_socket_job(
        &mut self,
        reap_after: u32,
    ) -> (WaitKey, AsyncDispatch, Rc<Cell<u32>>) {
        let calls = Rc::new(Cell::new(0));
        let seen = Rc::clone(&calls);
        let (key, submission) = self.submit(PreparedOperation::interruptible_async(
            kind(1),
            || Pending,
            Decoder::identity(),
            Interruptible::new("socket", move || {
                seen.set(seen.get() + 1);
                Ok(if seen.get() >= reap_after {
                    HookOutcome::Reaped
                } else {
                    HookOutcome::PendingReap
                })
            }),
        ));
        let Dispatch::Async(mut dispatch) = submission.arm() else {
            panic!("async job")
        };
        assert!(
            Pin::new(&mut dispatch)
                .poll(&mut Context::from_waker(Waker::noop()))
                .is_pending(),
            "claimed and running"
        );
        (key, dispatch, calls)
    }

    pub(super) fn blocking_u32(&mut self, value: u32) -> (WaitKey, Submission) {
        self.submit(PreparedOperation::interruptible_blocking(
            kind(1),
            from_fn(move || value),
            Decoder::new(|v: u32| format!("decoded {v}")),
            interruptible(),
        ))
    }

    /// Runs the submission to completion and feeds its completion to the table.
    pub(super) fn run_and_settle(&mut self, submission: Submission) -> SettleOutcome {
        let Dispatch::Blocking(dispatch) = submission.arm() else {
            panic!("blocking job")
        };
        let _ = dispatch.run();
        self.table.settle(self.sink.only())
    }

    /// Polls the wait `key` once with a no-op waker.
    pub(super) fn poll_now<T: 'static>(&mut self, key: WaitKey) -> Poll<Result<T, WaitError>> {
        poll::<T>(&mut self.table, key, Waker::noop())
    }

    /// [`run_and_settle`](Fixture::run_and_settle) for a wait polled before: it settles with the
    /// waker it stored, which is returned.
    pub(super) fn settle_polled(&mut self, submission: Submission) -> Waker {
        let SettleOutcome::Settled {
            waker: Some(returned),
        } = self.run_and_settle(submission)
        else {
            panic!("a polled wait settles with its waker")
        };
        returned
    }
}

#[derive(Default)]
pub(super) struct CountingWaker(pub(super) AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

pub(super) fn poll<T: 'static>(
    table: &mut WaitTable,
    key: WaitKey,
    waker: &Waker,
) -> Poll<Result<T, WaitError>> {
    table.poll_wait::<T>(key, &mut Context::from_waker(waker))
}

pub(super) struct Pending;

impl Future for Pending {
    type Output = u32;
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u32> {
        Poll::Pending
    }
}
