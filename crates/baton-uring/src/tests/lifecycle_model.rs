//! A state-machine property test: the driver over the simulated ring against a reference model,
//! for random sequences of register / poll (local and foreign) / drop (local and foreign) /
//! explicit cancel / kernel completion / cancel resolution / turn / close.
//!
//! The model tracks, per operation, what the simulated kernel reported and what the handle
//! observed, and checks after every step:
//!
//! * a handle resolves at most once, to exactly the kernel's result for *its* request (never a
//!   stale or reused slot's), to `ECANCELED` only after a cancel, to `Closed` only after
//!   closure;
//! * a result never comes back while the kernel still owns the request (its buffer);
//! * the in-flight limit holds, and the driver's in-flight count equals the kernel's;
//! * dropped in-flight reads get exactly one async cancel; dropped writes still reach the kernel,
//!   also when the driver closed while they were queued (lifecycle rule U9);
//! * at the end, with everything completed, every live handle resolves, every slot retires, and
//!   every `Arc` (fd, wakers) is back to one strong count.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use proptest::prelude::*;

use crate::driver::{Driver, Park};
use crate::error::Error;
use crate::operation::Op;
use crate::ops;
use crate::tests::sim::{SimRing, sim_ring};

#[derive(Debug, Clone)]
enum Action {
    RegisterRead,
    RegisterWrite,
    PollLocal(usize),
    PollForeign(usize),
    DropLocal(usize),
    DropForeign(usize),
    Cancel(usize),
    Complete(usize, i32),
    /// Resolves a pending cancel; `true` posts the cancel's CQE before its target's.
    ResolveCancel(usize, bool),
    Turn,
    Close,
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        6 => Just(Action::RegisterRead),
        4 => Just(Action::RegisterWrite),
        6 => any::<usize>().prop_map(Action::PollLocal),
        4 => any::<usize>().prop_map(Action::PollForeign),
        2 => any::<usize>().prop_map(Action::DropLocal),
        2 => any::<usize>().prop_map(Action::DropForeign),
        2 => any::<usize>().prop_map(Action::Cancel),
        6 => (any::<usize>(), 0..64i32).prop_map(|(i, r)| Action::Complete(i, r)),
        2 => (any::<usize>(), any::<bool>()).prop_map(|(i, first)| Action::ResolveCancel(i, first)),
        6 => Just(Action::Turn),
        1 => Just(Action::Close),
    ]
}

struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

type ReadOp = Op<(std::io::Result<usize>, Vec<u8>)>;

struct Handle {
    op: Option<ReadOp>,
    write: bool,
    user_data: Option<u64>,
    cancelled: bool,
    resolved: bool,
}

struct Model {
    driver: Driver,
    sim: SimRing,
    fd: Arc<OwnedFd>,
    flag: Arc<Flag>,
    waker: Waker,
    handles: Vec<Handle>,
    /// The kernel's result per request `user_data`.
    kernel: HashMap<u64, i32>,
    /// Requests whose handle was dropped, with whether they must still reach the kernel
    /// (retained and never explicitly cancelled).
    dropped: HashMap<u64, bool>,
    closed: bool,
    max_in_flight: usize,
}

impl Model {
    fn new(sq: usize, max_in_flight: usize) -> Model {
        let (backend, sim) = sim_ring(sq);
        let driver = Driver::with_backend(Box::new(backend), max_in_flight, None);
        let fd = Arc::new(OwnedFd::from(
            std::fs::File::open("/dev/null").expect("open /dev/null"),
        ));
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = Waker::from(flag.clone());
        Model {
            driver,
            sim,
            fd,
            flag,
            waker,
            handles: Vec::new(),
            kernel: HashMap::new(),
            dropped: HashMap::new(),
            closed: false,
            max_in_flight,
        }
    }

    fn live(&self, i: usize) -> Option<usize> {
        let live: Vec<usize> = (0..self.handles.len())
            .filter(|&h| self.handles[h].op.is_some())
            .collect();
        (!live.is_empty()).then(|| live[i % live.len()])
    }

    fn observe(&mut self, h: usize, polled: Poll<(std::io::Result<usize>, Vec<u8>)>) {
        let Poll::Ready((result, buf)) = polled else {
            return;
        };
        let handle = &mut self.handles[h];
        assert!(!handle.resolved, "a handle resolved twice");
        handle.resolved = true;
        handle.op = None;
        let ud = handle.user_data;
        if let Some(ud) = ud.filter(|_| !buf.is_empty()) {
            assert!(
                !self.sim.in_flight().contains(&ud),
                "a result came back while the kernel still owned the request"
            );
        }
        match result {
            Ok(n) => {
                let ud = ud.expect("an Ok result belongs to a registered request");
                assert_eq!(
                    Some(n as i32),
                    self.kernel.get(&ud).copied(),
                    "the result is the kernel's result for this very request"
                );
                let expected = if handle.write { 4 } else { n };
                assert_eq!(
                    buf.len(),
                    expected,
                    "the buffer comes back with the result (a read extended over the bytes read)"
                );
            }
            Err(err) if Error::is_closed(&err) => assert!(self.closed, "Closed before closure"),
            Err(err) if err.raw_os_error() == Some(libc::ECANCELED) => {
                assert!(handle.cancelled, "ECANCELED without a cancel");
            }
            Err(err) => panic!("unexpected error {err}"),
        }
    }

    fn poll(&mut self, h: usize, local: bool) {
        let Some(mut op) = self.handles[h].op.take() else {
            return;
        };
        let polled = {
            let _entered = local.then(|| self.driver.enter());
            let mut cx = Context::from_waker(&self.waker);
            std::pin::Pin::new(&mut op).poll(&mut cx)
        };
        if self.handles[h].user_data.is_none() {
            self.handles[h].user_data = op.key().map(|k| k.user_data());
        }
        self.handles[h].op = Some(op);
        self.observe(h, polled);
    }

    fn apply(&mut self, action: Action) {
        match action {
            Action::RegisterRead | Action::RegisterWrite => {
                let write = matches!(action, Action::RegisterWrite);
                let op = if write {
                    ops::write_at(self.fd.clone(), vec![1; 4], 0)
                } else {
                    ops::read_at(self.fd.clone(), crate::tests::sim::zeroed_spare(64), 0)
                };
                self.handles.push(Handle {
                    op: Some(op),
                    write,
                    user_data: None,
                    cancelled: false,
                    resolved: false,
                });
                self.poll(self.handles.len() - 1, true);
            }
            Action::PollLocal(i) => {
                if let Some(h) = self.live(i) {
                    self.poll(h, true);
                }
            }
            Action::PollForeign(i) => {
                if let Some(h) = self.live(i) {
                    self.poll(h, false);
                }
            }
            Action::DropLocal(i) | Action::DropForeign(i) => {
                if let Some(h) = self.live(i) {
                    let op = self.handles[h].op.take();
                    if let Some(ud) = self.handles[h].user_data {
                        let must_land = self.handles[h].write && !self.handles[h].cancelled;
                        self.dropped.insert(ud, must_land);
                    }
                    let _entered =
                        matches!(action, Action::DropLocal(_)).then(|| self.driver.enter());
                    drop(op);
                }
            }
            Action::Cancel(i) => {
                if let Some(h) = self.live(i) {
                    let _entered = self.driver.enter();
                    if let Some(op) = &self.handles[h].op {
                        op.cancel();
                        self.handles[h].cancelled = true;
                    }
                }
            }
            Action::Complete(i, result) => {
                let in_flight = self.sim.in_flight();
                if !in_flight.is_empty() {
                    let ud = in_flight[i % in_flight.len()];
                    assert!(self.sim.complete(ud, result));
                    self.kernel.insert(ud, result);
                }
            }
            Action::ResolveCancel(i, cancel_first) => {
                let cancels = self.sim.pending_cancels();
                if !cancels.is_empty() {
                    let target = cancels[i % cancels.len()];
                    let was_in_flight = self.sim.in_flight().contains(&target);
                    assert!(self.sim.resolve_cancel_ordered(target, cancel_first));
                    if was_in_flight {
                        self.kernel.insert(target, -libc::ECANCELED);
                    }
                }
            }
            Action::Turn => {
                let _ = self.driver.turn(Park::Poll);
            }
            Action::Close => {
                self.driver.close();
                self.closed = true;
            }
        }
        self.check();
    }

    fn check(&self) {
        let metrics = self.driver.metrics();
        let kernel = self.sim.unreaped_requests();
        assert_eq!(
            metrics.in_flight, kernel,
            "driver and kernel agree on in-flight count"
        );
        assert!(
            metrics.in_flight <= self.max_in_flight,
            "in-flight limit exceeded"
        );
        let cancels = self.sim.pending_cancels();
        let mut unique = cancels.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(
            unique.len(),
            cancels.len(),
            "at most one cancel per request"
        );
    }

    /// Completes everything and checks that every handle resolves and every slot retires.
    fn drain(&mut self) {
        for _ in 0..64 {
            let _ = self.driver.turn(Park::Poll);
            for target in self.sim.pending_cancels() {
                let was_in_flight = self.sim.in_flight().contains(&target);
                assert!(self.sim.resolve_cancel(target));
                if was_in_flight {
                    self.kernel.insert(target, -libc::ECANCELED);
                }
            }
            for ud in self.sim.in_flight() {
                assert!(self.sim.complete(ud, 3));
                self.kernel.insert(ud, 3);
            }
            let _ = self.driver.turn(Park::Poll);
            for h in 0..self.handles.len() {
                if self.handles[h].op.is_some() {
                    self.poll(h, h % 2 == 0);
                }
            }
            self.check();
            if self.handles.iter().all(|h| h.op.is_none())
                && self.driver.metrics().slots == 0
                && self.sim.in_flight().is_empty()
            {
                break;
            }
        }
        assert!(
            self.handles.iter().all(|h| h.op.is_none()),
            "every live handle resolves once the kernel is done"
        );
        for handle in &self.handles {
            if let Some(ud) = handle
                .user_data
                .filter(|_| handle.write && !handle.cancelled)
            {
                assert!(
                    self.kernel.contains_key(&ud),
                    "a registered, uncancelled write reached the kernel, closure or not"
                );
            }
        }
        for (ud, retained) in &self.dropped {
            if *retained {
                assert!(
                    self.kernel.get(ud).is_some_and(|&r| r >= 0),
                    "a dropped write still reached the kernel, closure or not"
                );
            }
        }
        let m = self.driver.metrics();
        assert_eq!((m.slots, m.in_flight, m.queued), (0, 0, 0), "{m:?}");
        assert!(self.driver.is_idle());
    }
}

proptest! {
    #[test]
    fn prop_driver_matches_the_reference_model(
        sq in 1usize..4,
        max_in_flight in 1usize..4,
        actions in proptest::collection::vec(action(), 1..60),
    ) {
        let mut model = Model::new(sq, max_in_flight);
        for action in actions {
            model.apply(action);
        }
        model.drain();
        let Model { driver, fd, flag, waker, .. } = model;
        drop(driver);
        drop(waker);
        prop_assert_eq!(Arc::strong_count(&fd), 1);
        prop_assert_eq!(Arc::strong_count(&flag), 1);
    }
}

#[test]
fn unsupported_opcode_is_a_clear_error_naming_it() {
    let (backend, sim) = sim_ring(4);
    let backend = backend.without(io_uring::opcode::Statx::CODE);
    let driver = Driver::with_backend(Box::new(backend), 4, None);
    let _entered = driver.enter();
    let mut op = ops::statx("/");
    let Poll::Ready(result) =
        std::pin::Pin::new(&mut op).poll(&mut Context::from_waker(Waker::noop()))
    else {
        panic!("refused at registration")
    };
    let err = result.expect_err("unsupported");
    assert_eq!(err.kind(), std::io::ErrorKind::Unsupported);
    assert!(err.to_string().contains("IORING_OP_STATX"), "{err}");
    assert!(sim.in_flight().is_empty(), "nothing was submitted");
}
