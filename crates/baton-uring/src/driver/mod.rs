//! The [`Driver`]: set-up, entering, turns, closure and shutdown; its configuration is in
//! `config.rs`, what it reports in `report.rs`.

use std::cell::{Cell, RefCell};
use std::io;
use std::marker::PhantomData;
use std::os::fd::{FromRawFd, OwnedFd};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64 as StdAtomicU64, AtomicUsize as StdAtomicUsize, Ordering};
use std::time::Duration;

use web_time::Instant;

mod config;
mod idle;
mod report;

pub use config::{DriverConfig, WakerPanics};
pub use report::{DriverMetrics, DriverShutdownReport, TurnReport};

use crate::backend::ring::RingBackend;
use crate::backend::{Backend, RingFlags, Wait};
use crate::context::{self, Entered, Inner, with_core};
use crate::error::SetupError;
use crate::handle::{DriverHandle, Unparker};
use crate::linger::LingerPolicy;
use crate::mailbox::{Mailbox, Msg};
use crate::state::{DriverState, Payload, Undrained, reraise};
use idle::IdlePoint;

/// How a turn may wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Park {
    /// Never block.
    Poll,
    /// Block in the ring's timed wait until a completion, an unpark, a timer or this deadline
    /// (`None`: no deadline). Returns at once if an unpark happened since the last turn.
    Wait(Option<Instant>),
}

/// An io_uring driver: one ring plus the request slab, queues, timers and mailbox.
///
/// Invariants: `Driver` is `Send` (the worker migrates) but not `Sync`; its state is touched
/// only by the thread that holds it. While a [`DriverGuard`] is outstanding the driver is bound
/// to the guard's thread: entering, turning or dropping it on another thread — possible only if
/// a guard was leaked with `mem::forget` — aborts the process, because the leaked context would
/// otherwise point at state another thread now owns.
///
/// Dropping a driver that was not [shut down](Driver::shutdown) shuts it down with a 10 s
/// deadline: in-flight requests are cancelled (retained writes and syncs are awaited), and what
/// the kernel still owns after the deadline is leaked, never freed.
pub struct Driver {
    inner: Box<Inner>,
    id: u64,
    entered_thread: StdAtomicU64,
    depth: StdAtomicUsize,
    flags: RingFlags,
    max_in_flight: usize,
    finished: bool,
    waker_panics: WakerPanics,
    /// Panics caught from wakers woken or dropped during service (see [`WakerPanics`]).
    panics_caught: Cell<u64>,
    /// The buffer a turn takes mailbox messages into: drained, never shrunk, and kept across
    /// turns, so neither it nor the mailbox queue it is swapped with regrows per message. Taken
    /// (left empty) during a turn.
    messages: Cell<Vec<Msg>>,
    /// When idle points linger (forward rule F8).
    linger: Cell<LingerPolicy>,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("id", &self.id)
            .field("flags", &self.flags)
            .field("max_in_flight", &self.max_in_flight)
            .finish_non_exhaustive()
    }
}

/// Proof that the driver is entered on this thread; restores the previous context on drop
/// (also when unwinding).
#[derive(Debug)]
pub struct DriverGuard<'a> {
    driver: &'a Driver,
    /// `None` for a nested enter of the driver that is already the current one: such a guard
    /// changes nothing and restores nothing (the outer guard does).
    previous: Option<Option<Entered>>,
    _not_send: PhantomData<*const ()>,
}

fn next_driver_id() -> u64 {
    static NEXT: StdAtomicU64 = StdAtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn eventfd() -> Result<OwnedFd, SetupError> {
    // SAFETY: eventfd has no memory-safety preconditions; the result is checked below.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if fd < 0 {
        return Err(SetupError::Eventfd {
            source: io::Error::last_os_error(),
        });
    }
    // SAFETY: `fd` was just returned by eventfd and has no other owner.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Driver {
    /// Sets up a ring (see [`DriverConfig`]); the error names the cause.
    pub fn new(config: DriverConfig) -> Result<Driver, SetupError> {
        config.validate()?;
        let (backend, cq_entries) = RingBackend::new(config.ring_entries, config.pinned)?;
        let max_in_flight = config.max_in_flight.unwrap_or(cq_entries) as usize;
        let mut driver = Self::with_backend(Box::new(backend), max_in_flight, Some(eventfd()?));
        driver.waker_panics = config.waker_panics;
        Ok(driver)
    }

    pub(crate) fn with_backend(
        backend: Box<dyn Backend>,
        max_in_flight: usize,
        eventfd: Option<OwnedFd>,
    ) -> Driver {
        let id = next_driver_id();
        let flags = backend.flags();
        let shared = Mailbox::new(id, eventfd);
        let core = DriverState::new(backend, max_in_flight, shared.eventfd());
        Driver {
            inner: Box::new(Inner {
                core: RefCell::new(core),
                shared,
                spare: Cell::new(Some(Box::default())),
            }),
            id,
            entered_thread: StdAtomicU64::new(0),
            depth: StdAtomicUsize::new(0),
            flags,
            max_in_flight,
            finished: false,
            waker_panics: WakerPanics::Contain,
            panics_caught: Cell::new(0),
            messages: Cell::new(Vec::new()),
            linger: Cell::new(LingerPolicy::default()),
        }
    }

    /// [`WakerPanics::Propagate`] for a driver over the simulated ring.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn propagating_waker_panics(mut self) -> Driver {
        self.waker_panics = WakerPanics::Propagate;
        self
    }

    /// Applies the [`WakerPanics`] policy to a panic caught from a waker during service, once
    /// cleanup is done: counted either way; re-raised under `Propagate` (unless the thread is
    /// already unwinding, where a second panic would abort the process); otherwise the first
    /// one is reported on stderr and service goes on.
    pub(crate) fn waker_panicked(&self, payload: Payload) {
        let caught = self.panics_caught.get() + 1;
        self.panics_caught.set(caught);
        match self.waker_panics {
            WakerPanics::Propagate => reraise(payload),
            WakerPanics::Contain => {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a non-string payload".to_owned());
                crate::trace::waker_panic_contained(&message, caught);
                if caught == 1 {
                    eprintln!(
                        "baton-uring: a waker panicked when the driver woke or dropped it ({message}); \
                         the panic was contained and the driver keeps running \
                         (later ones are only counted in DriverMetrics::waker_panics)"
                    );
                }
            }
        }
    }

    fn check_thread(&self) {
        let owner = self.entered_thread.load(Ordering::Acquire);
        if owner != 0 && owner != context::thread_token() {
            eprintln!(
                "baton-uring: a DriverGuard was leaked on another thread; the driver cannot be used here"
            );
            std::process::abort();
        }
    }

    /// This driver's process-unique id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Installs this driver as the current thread's driver until the guard drops. Nestable.
    pub fn enter(&self) -> DriverGuard<'_> {
        self.check_thread();
        if context::current_for(self.id).is_some() {
            // Already the current driver here (check_thread passed, so entered on this thread):
            // a nested enter needs no bookkeeping, which keeps every worker turn free of it.
            return DriverGuard {
                driver: self,
                previous: None,
                _not_send: PhantomData,
            };
        }
        self.entered_thread
            .store(context::thread_token(), Ordering::Release);
        // Only the thread holding the driver changes `depth` (type invariant: `Send`, not
        // `Sync`), so a load and a store count the level.
        let depth = self.depth.load(Ordering::Relaxed);
        self.depth.store(depth + 1, Ordering::Release);
        let previous = context::replace(Some(Entered::new(self.id, &self.inner)));
        DriverGuard {
            driver: self,
            previous: Some(previous),
            _not_send: PhantomData,
        }
    }

    /// One turn: apply mailbox messages, fire timers, submit queued SQEs (cancels first),
    /// optionally wait, reap CQEs, and wake whoever they complete — after releasing the internal
    /// borrow. A panic from a wake or waker drop is caught, and handled after all cleanup as
    /// the [`WakerPanics`] policy says (contained by default).
    pub fn turn(&self, park: Park) -> TurnReport {
        self.check_thread();
        let mut report = TurnReport::default();
        let mut messages = self.messages.take();
        let shared = &self.inner.shared;
        let deferred;
        {
            let mut core = self
                .inner
                .core
                .try_borrow_mut()
                .expect("turn is never called while the driver's state is borrowed");
            let core = &mut *core;
            Self::service(core, shared, &mut messages, &mut report);
            let _ = core.flush();
            let idle_wait = match park {
                Park::Wait(deadline) => {
                    report.unparked = shared.take_notified();
                    if !report.unparked
                        && report.messages == 0
                        && report.timers_fired == 0
                        && core.deferred.wake.is_empty()
                    {
                        Some(deadline)
                    } else {
                        None
                    }
                }
                Park::Poll => None,
            };
            let until = idle_wait.map(|deadline| match (deadline, core.next_timer()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            });
            let idle = until.map(|until| self.idle_point(core, shared, until));
            let lingered = idle == Some(IdlePoint::Lingered);
            let wait = match until {
                Some(_) if lingered => Wait::No,
                Some(until) => match until.map(|t| t.saturating_duration_since(Instant::now())) {
                    Some(Duration::ZERO) => Wait::No,
                    timeout => Wait::ForOne(timeout),
                },
                None => Wait::No,
            };
            core.counts.turns += 1;
            if matches!(wait, Wait::ForOne(_)) {
                core.counts.parks += 1;
            }
            let _ = core.submit(wait);
            let reaped = core.reap();
            report.completions += reaped;
            if lingered || matches!(wait, Wait::ForOne(_)) {
                report.unparked |= shared.take_notified();
                Self::service(core, shared, &mut messages, &mut report);
            }
            if let Some(IdlePoint::Timed(started)) = idle {
                self.timed_wait_ended(started, report.unparked || reaped > 0);
            }
            if core.flush().is_ok() && core.has_unsubmitted() {
                let _ = core.submit(Wait::No);
            }
            deferred = self.inner.take_deferred(core);
        }
        self.messages.set(messages);
        report.woken = deferred.wake.len();
        if let Some(payload) = self.inner.release(deferred) {
            self.waker_panicked(payload);
        }
        report
    }

    fn service(
        core: &mut DriverState,
        shared: &Mailbox,
        messages: &mut Vec<Msg>,
        report: &mut TurnReport,
    ) {
        shared.take_messages(&mut core.messages_taken, messages);
        if !messages.is_empty() {
            report.messages += messages.len();
            for msg in messages.drain(..) {
                core.apply(msg);
            }
        }
        report.timers_fired += core.fire_timers();
    }

    /// Installs the hook told after every mailbox message's unpark (at most once; a second is
    /// handed back), for an owner that may keep the driver idle where nobody waits on the ring.
    pub(crate) fn set_message_hook(
        &self,
        hook: crate::mailbox::MessageHook,
    ) -> Result<(), crate::mailbox::MessageHook> {
        self.inner.shared.set_message_hook(hook)
    }

    /// Wakes the driver from any thread.
    pub fn unparker(&self) -> Unparker {
        Unparker::new(self.inner.shared.clone())
    }

    /// A `Send + Sync` handle: builds operations bound to this driver and starts detached syncs
    /// from any thread. It does not keep the driver alive.
    pub fn handle(&self) -> DriverHandle {
        DriverHandle::new(self.inner.shared.clone())
    }

    /// Starts a detached sync on this driver; see [`DriverHandle::start_sync`].
    pub fn start_sync(
        &self,
        fd: std::sync::Arc<std::os::fd::OwnedFd>,
        datasync: bool,
    ) -> crate::handle::SyncReceiver {
        let _entered = self.enter();
        self.handle().start_sync(fd, datasync)
    }

    /// Whether messages from other threads (operations registered, forwarded, dropped or
    /// cancelled there) wait for a turn to apply them.
    pub fn has_messages(&self) -> bool {
        self.check_thread();
        let taken = with_core(&self.inner, |core| core.messages_taken);
        self.inner.shared.has_messages_beyond(taken)
    }

    /// Nothing queued, in flight, or timed.
    pub fn is_idle(&self) -> bool {
        self.check_thread();
        with_core(&self.inner, |core| core.is_idle())
    }

    /// Closes the driver (lifecycle rule U7): new registrations and messages are refused with
    /// `Closed`, pending polls fail with `Closed`, in-flight non-retained requests are cancelled,
    /// queued non-retained requests are retired, and queued writes and syncs stay queued and are
    /// submitted as slots free (U9).
    /// Turn afterwards (or call [`shutdown`](Self::shutdown)) to drain the kernel's completions.
    pub fn close(&self) {
        self.check_thread();
        let leftovers = self.inner.shared.close();
        with_core(&self.inner, |core| {
            // Messages sent before the mailbox closed are applied first, so a write registered
            // from another thread before closure is retained like a local one (U9).
            for msg in leftovers {
                core.apply(msg);
            }
            core.close();
            let _ = core.flush();
            let _ = core.submit(Wait::No);
        });
    }

    /// Closes, then submits the retained requests still queued and waits for every outstanding
    /// completion until `deadline` (lifecycle rules U8 and U9). Memory the kernel may still write
    /// when the deadline passes is leaked on purpose; the report counts it, and the retained
    /// requests that never reached the kernel, as not drained.
    pub fn shutdown(mut self, deadline: Option<Instant>) -> DriverShutdownReport {
        self.finish(deadline)
    }

    /// Shutdown's steps. A panic from any step (a waker woken by closure or a turn, or dropped
    /// when a slot retires) is contained so the remaining steps still run — the drain, and the
    /// leak of whatever the kernel may still write (lifecycle rule U8) — and the first payload is
    /// re-raised afterwards, unless the thread is already unwinding.
    fn finish(&mut self, deadline: Option<Instant>) -> DriverShutdownReport {
        self.finished = true;
        let mut first_panic = None;
        let mut contain = |step: &mut dyn FnMut()| {
            if let Err(payload) = catch_unwind(AssertUnwindSafe(step)) {
                first_panic.get_or_insert(payload);
            }
        };
        contain(&mut || self.close());
        let completed_before = with_core(&self.inner, |core| core.counts.completed);
        self.inner.shared.kick();
        loop {
            // A ring that refuses submits cannot drain; spinning on it would never end.
            let busy = with_core(&self.inner, |core| core.draining() && !core.submit_failed());
            if !busy {
                break;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            if with_core(&self.inner, |core| core.wake_armed()) {
                self.inner.shared.kick();
            }
            contain(&mut || {
                let _ = self.turn(Park::Wait(deadline));
            });
        }
        // If releasing what this step deferred panics, the report was already written.
        let mut report = DriverShutdownReport {
            drained: false,
            leaked: 0,
            unsubmitted: 0,
            completed_during_shutdown: 0,
            submit_error: None,
            retained_failures: 0,
            waker_panics: 0,
        };
        contain(&mut || {
            with_core(&self.inner, |core| {
                let undrained = if core.draining() {
                    core.abandon_undrained()
                } else {
                    Undrained::default()
                };
                report = DriverShutdownReport {
                    drained: undrained.leaked == 0 && undrained.unsubmitted == 0,
                    leaked: undrained.leaked,
                    unsubmitted: undrained.unsubmitted,
                    completed_during_shutdown: core.counts.completed - completed_before,
                    submit_error: core.submit_error,
                    retained_failures: core.counts.retained_failures,
                    waker_panics: 0,
                };
            });
        });
        if let Some(payload) = first_panic {
            self.waker_panicked(payload);
        }
        report.waker_panics = self.panics_caught.get();
        report
    }

    /// Counters and the ring flags in effect.
    pub fn metrics(&self) -> DriverMetrics {
        self.check_thread();
        with_core(&self.inner, |core| DriverMetrics {
            queued: core.slot_counts().queued,
            in_flight: core.slot_counts().in_flight,
            peer_in_flight: core.slot_counts().peer_in_flight,
            cancels_in_flight: core.counts.cancels_in_flight,
            slots: core.slots(),
            completed: core.counts.completed,
            cancelled: core.counts.cancelled,
            timers: core.slot_counts().timed,
            timers_fired: core.counts.timers_fired,
            timer_entries: core.timer_entries(),
            forwarded: core.counts.forwarded,
            stale_messages: core.counts.stale_messages,
            turns: core.counts.turns,
            parks: core.counts.parks,
            flags: self.flags,
            max_in_flight: self.max_in_flight,
            closed: core.closed,
            last_submit_error: core.submit_error,
            waker_panics: self.panics_caught.get(),
        })
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if self.depth.load(Ordering::Acquire) != 0 {
            eprintln!(
                "baton-uring: a Driver was dropped while a leaked DriverGuard still names it"
            );
            std::process::abort();
        }
        if !self.finished {
            let _ = self.finish(Some(Instant::now() + Duration::from_secs(10)));
        }
    }
}

impl Drop for DriverGuard<'_> {
    fn drop(&mut self) {
        let Some(previous) = self.previous else {
            return;
        };
        context::replace(previous);
        // The guard's thread holds the driver (type invariant): no other writer of `depth`.
        let depth = self.driver.depth.load(Ordering::Relaxed) - 1;
        self.driver.depth.store(depth, Ordering::Release);
        if depth == 0 {
            self.driver.entered_thread.store(0, Ordering::Release);
        }
    }
}
