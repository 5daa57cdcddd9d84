//! The kernel side of the lifecycle: timers, pushing SQEs (cancels first), submitting and
//! reaping (lifecycle rules 2, 3, 4 and 6 of `core`).

use std::cmp::Reverse;
use std::io;

use io_uring::{opcode, types};
use web_time::Instant;

use super::{CancelState, DriverState, Phase};

/// The two submission queues of lifecycle rule 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Queue {
    /// Requests that wait on a peer: never held back by the in-flight limit.
    Peer,
    /// Requests that complete on their own: submitted under the in-flight limit.
    Bounded,
}
use crate::backend::{Cqe, Wait};
use crate::error::Error;
use crate::key::{self, RequestKey, Tagged};
use crate::request::{Failure, Request};

impl DriverState {
    /// Fires due timers (lifecycle rule 6); returns how many fired.
    pub(crate) fn fire_timers(&mut self) -> usize {
        if self.timers.is_empty() {
            return 0;
        }
        let now = Instant::now();
        let mut fired = 0;
        while let Some(&Reverse((at, index, generation))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            let key = RequestKey { index, generation };
            let Some(slot) = self.slot_mut(key) else {
                continue;
            };
            if slot.deadline != Some(at) {
                continue;
            }
            slot.deadline = None;
            self.counts.live_timers -= 1;
            self.counts.timers_fired += 1;
            fired += 1;
            let slot = self.slot_mut(key).expect("checked live just above");
            match slot.phase {
                Phase::Sleeping => self.settle(key, Ok(0)),
                Phase::Queued | Phase::AwaitingPermit => {
                    self.counts.queued -= 1;
                    self.settle(key, Err(Failure::Runtime(Error::Timeout)));
                }
                Phase::InFlight => {
                    slot.timed_out = true;
                    self.request_cancel(key);
                }
                Phase::Completed(_) => {}
            }
        }
        fired
    }

    /// Entries in the timer heap, live and stale.
    pub(crate) fn timer_entries(&self) -> usize {
        self.timers.len()
    }

    /// Drops stale heap entries (deadlines cleared before they fired) once they outnumber the
    /// live ones by more than 64, so the heap stays within about twice the live timers plus 64;
    /// each prune is paid for by the pushes that made the entries stale.
    pub(super) fn prune_stale_timers(&mut self) {
        let live = self.counts.live_timers;
        let stale = self.timers.len().saturating_sub(live);
        if stale > live + 64 {
            let slab = &self.slab;
            self.timers.retain(|&Reverse((at, index, generation))| {
                slab.get(index as usize)
                    .is_some_and(|s| s.generation == generation && s.deadline == Some(at))
            });
        }
    }

    /// The earliest live timer.
    pub(crate) fn next_timer(&mut self) -> Option<Instant> {
        while let Some(&Reverse((at, index, generation))) = self.timers.peek() {
            let key = RequestKey { index, generation };
            if self.slot(key).is_some_and(|s| s.deadline == Some(at)) {
                return Some(at);
            }
            self.timers.pop();
        }
        None
    }

    fn push(&mut self, entry: &io_uring::squeue::Entry) -> io::Result<bool> {
        if self.backend.push(entry).is_ok() {
            self.unsubmitted += 1;
            return Ok(true);
        }
        self.submit(Wait::No)?;
        let pushed = self.backend.push(entry).is_ok();
        self.unsubmitted += usize::from(pushed);
        Ok(pushed)
    }

    /// Submits pushed SQEs, optionally waiting (a timeout or interruption is not an error).
    /// A failure is recorded for metrics, the shutdown report and [`DriverState::submit_failed`].
    pub(crate) fn submit(&mut self, wait: Wait) -> io::Result<()> {
        self.unsubmitted = 0;
        let result = self.backend.submit(wait);
        if let Err(err) = &result {
            self.submit_error = Some(err.raw_os_error().unwrap_or(libc::EIO));
        }
        result
    }

    /// Whether a submit failed in a way that retrying cannot fix (anything but `ENOMEM`: the
    /// backend already absorbs timeouts, interruptions, `EBUSY` and `EAGAIN`). Shutdown stops
    /// draining then, and leaks what the kernel may still own (lifecycle rule 8).
    pub(crate) fn submit_failed(&self) -> bool {
        self.submit_error.is_some_and(|errno| errno != libc::ENOMEM)
    }

    /// Whether SQEs were pushed since the last submit.
    pub(crate) fn has_unsubmitted(&self) -> bool {
        self.unsubmitted > 0
    }

    /// Moves the wake-up read, cancels and queued requests into the SQ (lifecycle rules 2, 3).
    /// The wake-up read goes first: if the SQ cannot take everything, a following blocking wait
    /// must still be interruptible by an unpark.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        if let Some(fd) = self.wake.fd
            && !self.wake.armed
            && !self.closed
        {
            let entry = opcode::Read::new(types::Fd(fd), (&raw mut *self.wake.buf).cast(), 8)
                .build()
                .user_data(RequestKey::WAKE_USER_DATA);
            if !self.push(&entry)? {
                return Ok(());
            }
            self.wake.armed = true;
        }
        while let Some(&key) = self.cancel_queue.front() {
            let live = self.slot(key).is_some_and(|s| {
                matches!(s.phase, Phase::InFlight) && s.cancel == CancelState::Queued
            });
            if !live {
                self.cancel_queue.pop_front();
                continue;
            }
            let entry = opcode::AsyncCancel::new(key.user_data())
                .build()
                .user_data(key.cancel_user_data());
            if !self.push(&entry)? {
                return Ok(());
            }
            self.cancel_queue.pop_front();
            if let Some(slot) = self.slot_mut(key) {
                slot.cancel = CancelState::Submitted;
            }
            self.counts.cancels_in_flight += 1;
            self.counts.cancelled += 1;
        }
        while self.push_queued_front(Queue::Peer)? {}
        while self.counts.in_flight - self.counts.peer_in_flight < self.max_in_flight
            && self.push_queued_front(Queue::Bounded)?
        {}
        Ok(())
    }

    /// Moves the front request of `queue` into the SQ (skipping retired or re-phased entries);
    /// `false` when the queue is empty or the SQ is full.
    fn push_queued_front(&mut self, queue: Queue) -> io::Result<bool> {
        loop {
            let queued = match queue {
                Queue::Peer => &mut self.peer_queue,
                Queue::Bounded => &mut self.submit_queue,
            };
            let Some(&key) = queued.front() else {
                return Ok(false);
            };
            let Some(slot) = self.slab.get_mut(key.index as usize) else {
                queued.pop_front();
                continue;
            };
            if slot.generation != key.generation || !matches!(slot.phase, Phase::Queued) {
                queued.pop_front();
                continue;
            }
            let entry = slot.data.prepare(key.user_data());
            if !self.push(&entry)? {
                return Ok(false);
            }
            match queue {
                Queue::Peer => self.peer_queue.pop_front(),
                Queue::Bounded => self.submit_queue.pop_front(),
            };
            let slot = &mut self.slab[key.index as usize];
            if let Request::Fsync { fd, start, .. } = &mut slot.data {
                *start = Some(self.durability.started(fd));
            }
            slot.data.mark_submitted();
            slot.phase = Phase::InFlight;
            self.counts.in_flight += 1;
            self.counts.peer_in_flight += usize::from(matches!(queue, Queue::Peer));
            self.counts.queued -= 1;
            return Ok(true);
        }
    }

    /// Reaps every available CQE and settles its request; returns how many.
    pub(crate) fn reap(&mut self) -> usize {
        let mut cqes = std::mem::take(&mut self.cqes);
        self.backend.reap(&mut cqes);
        let n = cqes.len();
        for cqe in cqes.drain(..) {
            self.complete(cqe);
        }
        self.cqes = cqes;
        n
    }

    fn complete(&mut self, cqe: Cqe) {
        let key = match key::decode(cqe.user_data) {
            Tagged::Wake => {
                self.wake.armed = false;
                return;
            }
            Tagged::Cancel(_) => {
                self.counts.cancels_in_flight -= 1;
                return;
            }
            Tagged::Request(key) => key,
        };
        let closed = self.closed;
        let Some(slot) = self.slot_mut(key) else {
            return;
        };
        if !matches!(slot.phase, Phase::InFlight) {
            return;
        }
        let timed_out = slot.timed_out;
        let peer = slot.data.waits_on_peer();
        let res = cqe.result;
        let outcome = if res >= 0 {
            Ok(res)
        } else if res == -libc::ECANCELED && timed_out {
            Err(Failure::Runtime(Error::Timeout))
        } else if res == -libc::ECANCELED && closed {
            Err(Failure::Runtime(Error::Closed))
        } else {
            Err(Failure::Os(-res))
        };
        if let Some(fd) = slot.data.written_file() {
            let fd = fd.clone();
            self.durability.write_completed(&fd);
        }
        self.counts.peer_in_flight -= usize::from(peer);
        self.counts.in_flight -= 1;
        self.counts.completed += 1;
        self.settle(key, outcome);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::sync::Arc;

    use super::super::{DriverState, Waiter};
    use crate::backend::Wait;
    use crate::backend::sim::sim_ring;
    use crate::key::RequestKey;
    use crate::request::Request;

    fn read_of(fd: &Arc<OwnedFd>) -> Request {
        Request::Read {
            fd: fd.clone(),
            buf: crate::backend::sim::zeroed_spare(4),
            offset: 0,
        }
    }

    #[test]
    fn many_sleeps_dropped_early_keep_the_timer_heap_small() {
        let (backend, _sim) = sim_ring(4);
        let driver = crate::driver::Driver::with_backend(Box::new(backend), 4, None);
        let _entered = driver.enter();
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        for _ in 0..10_000 {
            let mut sleep = crate::ops::sleep(std::time::Duration::from_secs(3600));
            assert!(std::pin::Pin::new(&mut sleep).poll(&mut cx).is_pending());
        }
        let metrics = driver.metrics();
        assert_eq!(metrics.timers, 0, "every sleep was dropped");
        assert!(
            metrics.timer_entries <= 200,
            "stale heap entries are pruned: {metrics:?}"
        );
    }

    #[test]
    fn wake_read_is_armed_even_when_cancels_cannot_be_pushed() {
        let (backend, sim) = sim_ring(1);
        let fd = Arc::new(OwnedFd::from(
            std::fs::File::open("/dev/null").expect("open /dev/null"),
        ));
        let mut core = DriverState::new(Box::new(backend), 4, Some(fd.as_raw_fd()));
        let mut keys = Vec::new();
        for _ in 0..2 {
            match core.register(read_of(&fd), None, Waiter::None) {
                Ok(key) => keys.push(key),
                Err(_) => panic!("an open core admits the read"),
            }
        }
        assert!(core.flush().is_ok());
        assert!(core.submit(Wait::No).is_ok());
        assert_eq!(sim.in_flight().len(), 3, "the wake read and both reads");
        assert!(sim.complete(RequestKey::WAKE_USER_DATA, 8));
        let _ = core.reap();
        assert!(!core.wake_armed());
        sim.stall(true);
        for key in keys {
            core.cancel(key);
        }
        assert!(core.flush().is_ok());
        assert!(
            core.wake_armed(),
            "a stalled SQ still leaves the unpark path armed for the next wait"
        );
        sim.stall(false);
        assert!(core.flush().is_ok());
        assert!(core.submit(Wait::No).is_ok());
        assert_eq!(
            sim.pending_cancels().len(),
            2,
            "both cancels went out later"
        );
    }
}
