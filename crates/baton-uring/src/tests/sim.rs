//! A deterministic simulated ring. The test holding the [`SimRing`] control decides when each
//! submitted request completes, with which result, and how each async cancel resolves — so
//! property tests and loom models can produce every ordering of completion and cancel that the
//! kernel can produce.

use std::collections::VecDeque;
use std::io;

use io_uring::squeue;

use crate::backend::{Backend, Cqe, RingFlags, SqFull, Wait};
use crate::key::{self, Tagged};
use crate::sync::{Arc, Mutex, lock};

#[derive(Debug, Default)]
struct SimState {
    /// Pushed, not yet submitted.
    sq: Vec<u64>,
    /// Submitted requests the "kernel" still owns.
    in_flight: Vec<u64>,
    /// Submitted async cancels, by their own `user_data`.
    cancels: Vec<u64>,
    cq: VecDeque<Cqe>,
    /// Submits consume nothing, as when the kernel cannot take SQEs.
    stalled: bool,
    /// Every submit fails with this errno.
    failing: Option<i32>,
    /// Submitted requests complete at once with this result, as a read the kernel serves
    /// inline from the page cache.
    completing: Option<i32>,
}

/// The backend half, owned by the driver.
#[derive(Debug)]
pub(crate) struct SimBackend {
    state: Arc<Mutex<SimState>>,
    sq_capacity: usize,
    unsupported: Vec<u8>,
}

/// The test's control over a simulated ring.
#[derive(Debug, Clone)]
pub(crate) struct SimRing {
    state: Arc<Mutex<SimState>>,
}

/// Creates a simulated ring with `sq_capacity` submission entries.
pub(crate) fn sim_ring(sq_capacity: usize) -> (SimBackend, SimRing) {
    let state = Arc::new(Mutex::new(SimState::default()));
    (
        SimBackend {
            state: state.clone(),
            sq_capacity,
            unsupported: Vec::new(),
        },
        SimRing { state },
    )
}

impl SimRing {
    /// The `user_data` of every request the simulated kernel owns, oldest first.
    pub(crate) fn in_flight(&self) -> Vec<u64> {
        lock(&self.state).in_flight.clone()
    }

    /// Requests the driver still counts as in flight: submitted, or completed but not reaped.
    #[cfg(not(loom))]
    pub(crate) fn unreaped_requests(&self) -> usize {
        let state = lock(&self.state);
        let reaped_later = state
            .cq
            .iter()
            .filter(|c| matches!(key::decode(c.user_data), Tagged::Request(_)))
            .count();
        state.in_flight.len() + reaped_later
    }

    /// Submits `op` (one poll, one turn), then drops its future and turns again, so the drop's
    /// cancel has been sent; returns the operation's user data, still in flight.
    #[cfg(not(loom))]
    pub(crate) fn submit_then_drop<F>(&self, driver: &crate::driver::Driver, mut op: F) -> u64
    where
        F: std::future::Future + Unpin,
    {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(std::pin::Pin::new(&mut op).poll(&mut cx).is_pending());
        let _ = driver.turn(crate::driver::Park::Poll);
        let target = self.in_flight()[0];
        drop(op);
        let _ = driver.turn(crate::driver::Park::Poll);
        target
    }

    /// The targets of submitted, unresolved async cancels.
    pub(crate) fn pending_cancels(&self) -> Vec<u64> {
        lock(&self.state)
            .cancels
            .iter()
            .map(|&c| c & !(0b11 << 62))
            .collect()
    }

    /// Completes the in-flight request `user_data` with `result`; false if it is not in flight.
    pub(crate) fn complete(&self, user_data: u64, result: i32) -> bool {
        let mut state = lock(&self.state);
        let Some(pos) = state.in_flight.iter().position(|&u| u == user_data) else {
            return false;
        };
        state.in_flight.remove(pos);
        state.cq.push_back(Cqe { user_data, result });
        true
    }

    /// Resolves the pending cancel aimed at `target`: if the target is still in flight it
    /// completes with `-ECANCELED` and the cancel with 0; otherwise the cancel reports `-ENOENT`.
    /// The target's CQE is posted first.
    pub(crate) fn resolve_cancel(&self, target: u64) -> bool {
        self.resolve_cancel_ordered(target, false)
    }

    /// [`resolve_cancel`](Self::resolve_cancel), posting the cancel's own CQE before the
    /// target's when `cancel_first` (the kernel gives no order between the two).
    pub(crate) fn resolve_cancel_ordered(&self, target: u64, cancel_first: bool) -> bool {
        let mut state = lock(&self.state);
        let Some(pos) = state
            .cancels
            .iter()
            .position(|&c| c & !(0b11 << 62) == target)
        else {
            return false;
        };
        let cancel = state.cancels.remove(pos);
        let (result, target_cqe) = match state.in_flight.iter().position(|&u| u == target) {
            Some(p) => {
                state.in_flight.remove(p);
                let cqe = Cqe {
                    user_data: target,
                    result: -libc::ECANCELED,
                };
                (0, Some(cqe))
            }
            None => (-libc::ENOENT, None),
        };
        let cancel_cqe = Cqe {
            user_data: cancel,
            result,
        };
        if cancel_first {
            state.cq.push_back(cancel_cqe);
            state.cq.extend(target_cqe);
        } else {
            state.cq.extend(target_cqe);
            state.cq.push_back(cancel_cqe);
        }
        true
    }
}

impl SimRing {
    /// While `stalled`, submits leave every pushed SQE in the SQ.
    #[cfg(not(loom))]
    pub(crate) fn stall(&self, stalled: bool) {
        lock(&self.state).stalled = stalled;
    }

    /// While `Some(errno)`, every submit fails with it and consumes nothing.
    #[cfg(not(loom))]
    pub(crate) fn fail_submits(&self, errno: Option<i32>) {
        lock(&self.state).failing = errno;
    }

    /// While `Some(result)`, every request completes with `result` as it is submitted.
    #[cfg(not(loom))]
    pub(crate) fn complete_on_submit(&self, result: Option<i32>) {
        lock(&self.state).completing = result;
    }
}

impl SimBackend {
    /// Makes the simulated kernel report `opcode` as unsupported.
    #[cfg(not(loom))]
    pub(crate) fn without(mut self, opcode: u8) -> SimBackend {
        self.unsupported.push(opcode);
        self
    }
}

impl Backend for SimBackend {
    fn push(&mut self, entry: &squeue::Entry) -> Result<(), SqFull> {
        let mut state = lock(&self.state);
        if state.sq.len() >= self.sq_capacity {
            return Err(SqFull);
        }
        state.sq.push(entry.get_user_data());
        Ok(())
    }

    fn submit(&mut self, _wait: Wait) -> io::Result<()> {
        let mut state = lock(&self.state);
        if let Some(errno) = state.failing {
            return Err(io::Error::from_raw_os_error(errno));
        }
        if state.stalled {
            return Ok(());
        }
        let pushed = std::mem::take(&mut state.sq);
        for user_data in pushed {
            match key::decode(user_data) {
                Tagged::Cancel(_) => state.cancels.push(user_data),
                Tagged::Request(_) => match state.completing {
                    Some(result) => state.cq.push_back(Cqe { user_data, result }),
                    None => state.in_flight.push(user_data),
                },
                Tagged::Wake => state.in_flight.push(user_data),
            }
        }
        Ok(())
    }

    fn reap(&mut self, out: &mut Vec<Cqe>) {
        out.extend(lock(&self.state).cq.drain(..));
    }

    fn completions_ready(&mut self) -> bool {
        !lock(&self.state).cq.is_empty()
    }

    fn supports(&self, opcode: u8) -> bool {
        !self.unsupported.contains(&opcode)
    }

    /// The simulated kernel completes what it is told to; the flag changes nothing it models.
    fn polls_first(&self) -> bool {
        true
    }

    fn flags(&self) -> RingFlags {
        RingFlags::default()
    }
}

/// A read buffer of length 0 whose spare capacity is already initialized (zeroes): the simulated
/// kernel reports read counts without writing, so a decode that extends the buffer over the
/// "read" bytes must find them initialized.
pub(crate) fn zeroed_spare(capacity: usize) -> Vec<u8> {
    let mut buf = vec![0; capacity];
    buf.clear();
    buf
}
