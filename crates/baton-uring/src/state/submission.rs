//! The kernel side of the lifecycle: pushing SQEs (the wake-up read, then cancels, then queued
//! requests), submitting and reaping (U2, U3, U4).

use std::io;

use io_uring::{opcode, types};

use super::{DriverState, Phase, PhaseKind};
use crate::state::slots::CancelState;

/// The two submission queues of lifecycle rule U2.
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
    /// draining then, and leaks what the kernel may still own (lifecycle rule U8).
    pub(crate) fn submit_failed(&self) -> bool {
        self.submit_error.is_some_and(|errno| errno != libc::ENOMEM)
    }

    /// Whether the ring holds a completion a reap (after a non-waiting submit) would find.
    pub(crate) fn completions_ready(&mut self) -> bool {
        self.backend.completions_ready()
    }

    /// Whether SQEs were pushed since the last submit.
    pub(crate) fn has_unsubmitted(&self) -> bool {
        self.unsubmitted > 0
    }

    /// Moves the wake-up read, cancels and queued requests into the SQ (lifecycle rules U2, U3).
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
            let live = self.slots.get(key).is_some_and(|s| {
                s.kind() == PhaseKind::InFlight && s.cancel == CancelState::Queued
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
            if let Some(slot) = self.slots.get_mut(key) {
                slot.cancel = CancelState::Submitted;
            }
            self.counts.cancels_in_flight += 1;
            self.counts.cancelled += 1;
        }
        // Most flushes find both queues empty (a request is pushed to the ring when it is
        // registered, if it can be): a length check each, no queue pass.
        if !self.peer_queue.is_empty() {
            while self.push_queued_front(Queue::Peer)? {}
        }
        if !self.submit_queue.is_empty() {
            while {
                let counts = self.slots.counts();
                counts.in_flight - counts.peer_in_flight < self.max_in_flight
            } && self.push_queued_front(Queue::Bounded)?
            {}
        }
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
            let Some(slot) = self.slots.get_mut(key) else {
                queued.pop_front();
                continue;
            };
            if slot.kind() != PhaseKind::Queued {
                queued.pop_front();
                continue;
            }
            let entry = slot.data.prepare(key.user_data(), self.polls_first);
            if !self.push(&entry)? {
                return Ok(false);
            }
            match queue {
                Queue::Peer => self.peer_queue.pop_front(),
                Queue::Bounded => self.submit_queue.pop_front(),
            };
            if let Some(slot) = self.slots.get_mut(key) {
                if let Request::Fsync { fd, start, .. } = &mut slot.data {
                    *start = Some(self.durability.started(fd));
                }
                slot.data.mark_submitted();
            }
            let _queued = self.slots.set_phase(key, Phase::InFlight);
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
        let Some(slot) = self.slots.get(key) else {
            return;
        };
        if slot.kind() != PhaseKind::InFlight {
            return;
        }
        let res = cqe.result;
        let outcome = if res >= 0 {
            Ok(res)
        } else if res == -libc::ECANCELED && slot.timed_out {
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
        self.counts.completed += 1;
        // U4: settling moves the slot out of `InFlight`, which releases its place.
        self.settle(key, outcome);
    }
}
