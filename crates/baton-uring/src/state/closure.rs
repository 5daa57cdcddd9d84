//! Closure, idleness and the bounded-shutdown leak (lifecycle rules 7, 8 and 9 of `core`).

use super::{DriverState, Phase, PhaseKind, Waiter};
use crate::key::RequestKey;

/// What a shutdown that ran out of time left undone (lifecycle rule 8).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Undrained {
    /// Requests the kernel may still write, leaked on purpose.
    pub(crate) leaked: usize,
    /// Retained requests that never reached the kernel, released unsubmitted.
    pub(crate) unsubmitted: usize,
}

impl DriverState {
    /// Lifecycle rule 7. Every slot the kernel does not own is retired now (its handle's next
    /// poll finds no slot and resolves to `Closed`) — except retained requests (writes, syncs,
    /// close, shutdown) still queued or awaiting their durability permit: those stay queued,
    /// detached, and are submitted as slots free (rule 9). In-flight slots are detached, so they
    /// retire at their final CQE. Afterwards the driver holds nothing a handle gave it once
    /// drained.
    pub(crate) fn close(&mut self) {
        self.closed = true;
        let keys: Vec<RequestKey> = self
            .slab
            .iter()
            .map(|(index, slot)| RequestKey {
                index: index as u32,
                generation: slot.generation,
            })
            .collect();
        for key in keys {
            let Some(slot) = self.slot_mut(key) else {
                continue;
            };
            let kind = PhaseKind::of(&slot.phase);
            let retained = slot.data.is_retained();
            let waiter = std::mem::replace(&mut slot.waiter, Waiter::None);
            slot.attached = false;
            match waiter {
                Waiter::Local(w) => self.deferred.wake.push(w),
                Waiter::Forward(cell) => {
                    let settled = cell.close();
                    self.settled(settled);
                    self.deferred.drop_cells.push(cell);
                }
                Waiter::None => {}
            }
            match kind {
                PhaseKind::InFlight => {
                    if !retained {
                        self.request_cancel(key);
                    }
                }
                PhaseKind::Queued | PhaseKind::AwaitingPermit if retained => {
                    // Rule 9: durability outlives closure; no deadline may retire it now.
                    let slot = self.slot_mut(key).expect("checked live above");
                    if slot.deadline.take().is_some() {
                        self.counts.live_timers -= 1;
                    }
                }
                _ => {
                    if matches!(kind, PhaseKind::Queued | PhaseKind::AwaitingPermit) {
                        self.counts.queued -= 1;
                    }
                    let mut slot = self.slab.remove(key.index as usize);
                    if slot.deadline.is_some() {
                        self.counts.live_timers -= 1;
                    }
                    let ticket = slot.late.take();
                    match slot.phase {
                        // Rule 4: an unconsumed result is disposed of (a created fd is closed,
                        // or the result goes to its stash).
                        Phase::Completed(outcome) => self.dispose(outcome, Some(slot.data), ticket),
                        _ => {
                            self.deferred.drop_data.push(slot.data);
                            self.deferred.drop_ticket(ticket);
                        }
                    }
                }
            }
        }
        let slab = &self.slab;
        let still_queued = |key: &RequestKey| {
            slab.get(key.index as usize)
                .is_some_and(|s| s.generation == key.generation && matches!(s.phase, Phase::Queued))
        };
        self.submit_queue.retain(still_queued);
        self.peer_queue.retain(still_queued);
        self.timers.clear();
    }

    /// Whether shutdown still has something to wait for: the kernel owns a request, a cancel
    /// or the wake-up read, or a retained request waits for a slot or its permit (rule 9).
    pub(crate) fn draining(&self) -> bool {
        self.kernel_busy() || self.counts.queued > 0
    }

    /// Whether the kernel still owns anything of ours.
    pub(crate) fn kernel_busy(&self) -> bool {
        self.counts.in_flight > 0 || self.counts.cancels_in_flight > 0 || self.wake.armed
    }

    /// Nothing queued, in flight or timed.
    pub(crate) fn is_idle(&self) -> bool {
        self.counts.queued == 0
            && self.counts.in_flight == 0
            && self.counts.cancels_in_flight == 0
            && self.counts.live_timers == 0
            && self.cancel_queue.is_empty()
    }

    /// Lifecycle rule 8: leaks every slot the kernel may still write, and the wake-up buffer.
    /// Retained requests the kernel never saw are released (their memory is safe to free) and
    /// counted as `unsubmitted`: their writes or syncs did not happen.
    pub(crate) fn abandon_undrained(&mut self) -> Undrained {
        let mut undrained = Undrained::default();
        let keys: Vec<(usize, bool)> = self
            .slab
            .iter()
            .filter(|(_, s)| !matches!(s.phase, Phase::Completed(_)))
            .map(|(i, s)| (i, matches!(s.phase, Phase::InFlight)))
            .collect();
        for (index, in_flight) in keys {
            let mut slot = self.slab.remove(index);
            self.deferred.drop_waiter(slot.waiter);
            // Its result will never be read: the stash stops waiting for it.
            self.deferred.drop_ticket(slot.late.take());
            if in_flight {
                std::mem::forget(slot.data);
                undrained.leaked += 1;
            } else {
                self.deferred.drop_data.push(slot.data);
                undrained.unsubmitted += 1;
            }
        }
        if self.wake.armed {
            std::mem::forget(std::mem::replace(&mut self.wake.buf, Box::new(0)));
            self.wake.armed = false;
        }
        self.submit_queue.clear();
        self.peer_queue.clear();
        self.counts.in_flight = 0;
        self.counts.peer_in_flight = 0;
        self.counts.queued = 0;
        undrained
    }

    /// Lifecycle rule 8, last resort: leaks what the kernel may still write when the core is
    /// dropped without a completed shutdown (one that unwound part-way).
    fn leak_if_kernel_busy(&mut self) {
        if self.kernel_busy() {
            let _ = self.abandon_undrained();
        }
    }

    /// The wake-up read's eventfd (for shutdown to complete the read).
    pub(crate) fn wake_armed(&self) -> bool {
        self.wake.armed
    }
}

impl Drop for DriverState {
    /// The ring closes only after the fields drop, and the kernel may write a request's buffers
    /// until its final CQE: rule 8 holds even if shutdown never ran its leak step.
    fn drop(&mut self) {
        self.leak_if_kernel_busy();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::os::fd::OwnedFd;
    use std::sync::Arc;
    use std::task::{Context, Poll, Waker};
    use std::time::Duration;

    use web_time::Instant;

    use crate::backend::sim::sim_ring;
    use crate::driver::{Driver, Park};
    use crate::ops;

    fn dev_null() -> Arc<OwnedFd> {
        Arc::new(OwnedFd::from(
            std::fs::File::open("/dev/null").expect("open /dev/null"),
        ))
    }

    /// Registers `n` writes on `driver` (entered) and drops their futures.
    fn drop_writes(driver: &Driver, fd: &Arc<OwnedFd>, n: usize) {
        let _entered = driver.enter();
        let mut cx = Context::from_waker(Waker::noop());
        for i in 0..n {
            let mut write = ops::write_at(fd.clone(), vec![1; 4], i as u64 * 4);
            assert!(std::pin::Pin::new(&mut write).poll(&mut cx).is_pending());
        }
        let _ = driver.turn(Park::Poll);
    }

    #[test]
    fn core_dropped_without_shutdown_leaks_the_in_flight_read() {
        let (backend, sim) = sim_ring(4);
        let mut core = super::DriverState::new(Box::new(backend), 4, None);
        let fd = dev_null();
        let data = crate::request::Request::Read {
            fd: fd.clone(),
            buf: crate::backend::sim::zeroed_spare(4),
            offset: 0,
        };
        let registered = core.register(data, None, super::Waiter::None);
        assert!(registered.is_ok(), "an open core admits the read");
        assert!(core.flush().is_ok());
        assert!(core.submit(crate::backend::Wait::No).is_ok());
        assert_eq!(sim.in_flight().len(), 1, "the kernel owns the read");
        drop(core);
        assert_eq!(
            Arc::strong_count(&fd),
            2,
            "the read the kernel still owns was leaked, not freed"
        );
    }

    #[test]
    fn shutdown_past_deadline_reports_in_flight_and_unsubmitted_writes_as_not_drained() {
        let (backend, sim) = sim_ring(1);
        let driver = Driver::with_backend(Box::new(backend), 1, None);
        let fd = dev_null();
        drop_writes(&driver, &fd, 3);
        assert_eq!(sim.in_flight().len(), 1, "one write owned by the kernel");
        let report = driver.shutdown(Some(Instant::now() + Duration::from_millis(20)));
        assert!(!report.drained, "{report:?}");
        assert_eq!((report.leaked, report.unsubmitted), (1, 2), "{report:?}");
        assert_eq!(
            Arc::strong_count(&fd),
            2,
            "only the leaked in-flight write keeps the file; unsubmitted ones were released"
        );
    }

    #[test]
    fn closure_submits_queued_writes_as_the_kernel_completes_earlier_ones() {
        let (backend, sim) = sim_ring(1);
        let driver = Driver::with_backend(Box::new(backend), 1, None);
        let fd = dev_null();
        drop_writes(&driver, &fd, 3);
        driver.close();
        let mut completed = Vec::new();
        for _ in 0..3 {
            let in_flight = sim.in_flight();
            assert_eq!(in_flight.len(), 1, "the next queued write was submitted");
            assert!(sim.complete(in_flight[0], 4));
            completed.push(in_flight[0]);
            let _entered = driver.enter();
            let _ = driver.turn(Park::Poll);
        }
        completed.dedup();
        assert_eq!(
            completed.len(),
            3,
            "three distinct writes reached the kernel"
        );
        let report = driver.shutdown(Some(Instant::now() + Duration::from_secs(5)));
        assert!(report.drained && report.unsubmitted == 0, "{report:?}");
        assert_eq!(Arc::strong_count(&fd), 1);
    }

    #[test]
    fn closure_still_retires_queued_reads_with_closed() {
        let (backend, sim) = sim_ring(1);
        let driver = Driver::with_backend(Box::new(backend), 1, None);
        let fd = dev_null();
        let _entered = driver.enter();
        let mut cx = Context::from_waker(Waker::noop());
        let mut first = ops::read_at(fd.clone(), crate::backend::sim::zeroed_spare(4), 0);
        let mut queued = ops::read_at(fd.clone(), crate::backend::sim::zeroed_spare(4), 4);
        assert!(std::pin::Pin::new(&mut first).poll(&mut cx).is_pending());
        assert!(std::pin::Pin::new(&mut queued).poll(&mut cx).is_pending());
        let _ = driver.turn(Park::Poll);
        driver.close();
        assert_eq!(driver.metrics().queued, 0, "the queued read was retired");
        let Poll::Ready((result, _)) = std::pin::Pin::new(&mut queued).poll(&mut cx) else {
            panic!("a queued read resolves at closure")
        };
        assert!(crate::Error::is_closed(&result.expect_err("closed")));
        let cancels = sim.pending_cancels();
        assert_eq!(cancels.len(), 1, "the in-flight read is cancelled");
        assert!(sim.resolve_cancel(cancels[0]));
        let _ = driver.turn(Park::Poll);
        drop((first, queued));
        assert!(driver.is_idle());
        assert_eq!(driver.metrics().slots, 0);
        assert_eq!(Arc::strong_count(&fd), 1);
    }
}
