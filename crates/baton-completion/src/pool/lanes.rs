//! The pool's shared state: two lanes (interruptible, quarantine), their bounded queues, their
//! threads and the counters, all under one lock (pool rules P1–P6 in `pool/mod.rs`).

use crate::completion::DeliveryOutcome;
use crate::dispatch::{Dispatch, RunReport, TerminalClass};
use crate::executor::{ExecutorSnapshot, RejectReason, ShutdownReport};
use crate::identity::RuntimeId;
use crate::sync::{Condvar, Mutex, MutexGuard};
use std::collections::{HashSet, VecDeque};
use std::time::Duration;
use web_time::Instant;

/// Which lane a job runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LaneId {
    Interruptible = 0,
    Quarantine = 1,
}

/// How many threads a lane may run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LaneLimits {
    pub(crate) capacity: usize,
    pub(crate) min_threads: usize,
    pub(crate) max_threads: usize,
    pub(crate) keep_alive: Duration,
}

/// One lane. Invariants (under the pool lock): `queue.len() + spawning <= queued <= capacity`
/// (the difference is accepted reservations not yet enqueued); `spawning` reservations wait
/// for the thread their submitter is starting and are not accepted yet, so the snapshot's
/// `queued` leaves them out; `running <= threads <= max_threads`, where `threads` counts
/// threads being spawned too; `threads == 0` implies no accepted job waits in this lane
/// (P4), which [`Lanes::enqueue`] and [`Lanes::spawn_failed`] uphold.
#[derive(Debug)]
struct Lane {
    limits: LaneLimits,
    queue: VecDeque<Dispatch>,
    queued: u64,
    spawning: u64,
    running: u64,
    threads: usize,
    idle: usize,
}

/// Everything the pool lock guards: whether the pool is closed, both lanes, the attached
/// runtimes and the counters.
#[derive(Debug)]
struct Synced {
    closed: bool,
    lanes: [Lane; 2],
    runtimes: HashSet<RuntimeId>,
    accepted: u64,
    completed: u64,
    cancelled: u64,
    panicked: u64,
    undeliverable: u64,
    rejected: u64,
}

/// The pool's two lanes, their threads and counters, behind one lock (the [`Synced`] part).
/// `work[lane]` wakes that lane's idle threads; `progress` wakes a shutdown waiting for
/// outstanding jobs.
#[derive(Debug)]
pub(crate) struct Lanes {
    synced: Mutex<Synced>,
    work: [Condvar; 2],
    progress: Condvar,
}

/// The outcome of [`Lanes::reserve`].
#[must_use = "a reservation must be enqueued or released"]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Reservation {
    /// Capacity is held and the job is accepted: arm and enqueue it.
    Accepted,
    /// Capacity is held for a job that needs a new lane thread first: spawn it, then call
    /// [`Lanes::spawn_confirmed`] or, if the OS refused, [`Lanes::spawn_failed`]. The job is not
    /// accepted (nor counted) until then.
    SpawnFirst,
    /// Refused; nothing was counted.
    Refused(RejectReason),
}

/// The outcome of [`Lanes::spawn_confirmed`].
#[must_use = "a refused reservation must be rejected"]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SpawnConfirmed {
    /// The job is accepted: arm and enqueue it.
    Accepted,
    /// The pool closed while the thread was spawned: the reservation is released and the
    /// submission must be rejected with this reason.
    Refused(RejectReason),
}

/// Which spawn failed, for [`Lanes::spawn_failed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FailedSpawn {
    /// The spawn a [`Reservation::SpawnFirst`] asked for: its reservation is released.
    ForReservation,
    /// A replacement spawn asked for by a [`Recovery::Respawn`].
    Replacement,
}

/// What to do after a lane lost a thread or a thread could not start (P4).
#[must_use = "queued work without a thread must get one or be cancelled"]
#[derive(Debug)]
pub(crate) enum Recovery {
    /// Every accepted job of the lane has a thread that will run it.
    Covered,
    /// Queued work lacks a thread and one more is counted: spawn it; if that fails report
    /// [`FailedSpawn::Replacement`].
    Respawn,
    /// The lane has no thread left and none could be started: cancel these dispatches and
    /// report each through [`Lanes::cancelled_queued`].
    Stranded(Vec<Dispatch>),
}

/// The outcome of [`Lanes::enqueue`].
#[must_use = "a dispatch refused by a closed pool must be cancelled and counted"]
#[derive(Debug)]
pub(crate) enum Enqueue {
    /// In the queue; a lane thread will run it.
    Queued,
    /// The pool closed after the reservation: cancel it and report through
    /// [`Lanes::cancelled_queued`].
    Closed(Dispatch),
    /// The lane lost its last thread and could not start another after the reservation
    /// (P4): cancel it and report through [`Lanes::cancelled_queued`].
    Stranded(Dispatch),
}

/// What a lane thread should do next.
#[must_use = "a worker must run the dispatch it was handed"]
#[derive(Debug)]
pub(crate) enum Next {
    Run(Dispatch),
    Exit,
}

/// The outcome of attaching a runtime.
#[must_use = "a refused attach must be reported"]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Attach {
    Attached,
    Duplicate,
    ShuttingDown,
}

impl Lanes {
    pub(crate) fn new(interruptible: LaneLimits, quarantine: LaneLimits) -> Self {
        let lane = |limits| Lane {
            limits,
            queue: VecDeque::new(),
            queued: 0,
            spawning: 0,
            running: 0,
            threads: 0,
            idle: 0,
        };
        Self {
            synced: Mutex::new(Synced {
                closed: false,
                lanes: [lane(interruptible), lane(quarantine)],
                runtimes: HashSet::new(),
                accepted: 0,
                completed: 0,
                cancelled: 0,
                panicked: 0,
                undeliverable: 0,
                rejected: 0,
            }),
            work: [Condvar::new(), Condvar::new()],
            progress: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Synced> {
        // No user code ever runs under this lock, so it cannot be poisoned.
        self.synced.lock().expect("pool lock is never poisoned")
    }

    pub(crate) fn attach(&self, runtime: RuntimeId) -> Attach {
        let mut state = self.lock();
        if state.closed {
            Attach::ShuttingDown
        } else if state.runtimes.insert(runtime) {
            Attach::Attached
        } else {
            Attach::Duplicate
        }
    }

    pub(crate) fn detach(&self, runtime: RuntimeId) {
        self.lock().runtimes.remove(&runtime);
    }

    /// Counts a rejected submission. Every rejection is counted here, once, by the lease that
    /// hands the submission back.
    pub(crate) fn rejected(&self) {
        self.lock().rejected += 1;
    }

    /// Reserves one unit of `lane` capacity for `runtime` (rule P1: reserve first; rule P2: the
    /// job counts as accepted and queued from here on, or once its thread started).
    pub(crate) fn reserve(&self, lane: LaneId, runtime: RuntimeId) -> Reservation {
        let mut state = self.lock();
        let refusal = if state.closed {
            Some(RejectReason::ShuttingDown)
        } else if !state.runtimes.contains(&runtime) {
            Some(RejectReason::Detached)
        } else {
            let lane = &state.lanes[lane as usize];
            (lane.queued >= lane.limits.capacity as u64).then_some(RejectReason::Capacity {
                capacity: lane.limits.capacity,
            })
        };
        if let Some(reason) = refusal {
            return Reservation::Refused(reason);
        }
        let lane_state = &mut state.lanes[lane as usize];
        lane_state.queued += 1;
        // Rule P4: make sure a thread exists for every reserved job, up to the lane's maximum.
        if lane_state.lacks_thread() {
            lane_state.threads += 1;
            lane_state.spawning += 1;
            return Reservation::SpawnFirst;
        }
        // Rule P2: count at acceptance, not at dequeue.
        state.accepted += 1;
        Reservation::Accepted
    }

    /// The thread a [`Reservation::SpawnFirst`] asked for started: accept the job, unless the
    /// pool closed meanwhile (rule P5: the new thread sees the close and leaves).
    pub(crate) fn spawn_confirmed(&self, lane: LaneId) -> SpawnConfirmed {
        let mut state = self.lock();
        let closed = state.closed;
        let lane_state = &mut state.lanes[lane as usize];
        lane_state.spawning -= 1;
        if closed {
            lane_state.queued -= 1;
            return SpawnConfirmed::Refused(RejectReason::ShuttingDown);
        }
        state.accepted += 1;
        SpawnConfirmed::Accepted
    }

    /// A lane thread could not start (P4). The failed thread is uncounted (and for
    /// [`FailedSpawn::ForReservation`] its reservation released: that submission is
    /// rejected). Other jobs may have been accepted relying on that thread, so if queued work
    /// now lacks a thread one more is counted for the caller to spawn; after a failed
    /// replacement, a lane left without any thread hands its queued work back to be
    /// cancelled, and later enqueues of the lane are refused as stranded.
    pub(crate) fn spawn_failed(&self, lane: LaneId, failed: FailedSpawn) -> Recovery {
        let mut state = self.lock();
        let closed = state.closed;
        let lane_state = &mut state.lanes[lane as usize];
        lane_state.threads -= 1;
        if failed == FailedSpawn::ForReservation {
            lane_state.spawning -= 1;
            lane_state.queued -= 1;
        }
        let recovery = lane_state.recover(closed, failed == FailedSpawn::ForReservation);
        drop(state);
        self.progress.notify_all();
        recovery
    }

    /// A lane thread is unwinding (a panic escaped a job's containment, see
    /// `worker::LaneThread`): counts the job it ran, if any, uncounts the thread and says how
    /// to cover the lane's queued work (P4).
    pub(crate) fn thread_lost(&self, lane: LaneId, running: Option<RunReport>) -> Recovery {
        let mut state = self.lock();
        if let Some(report) = running {
            state.lanes[lane as usize].running -= 1;
            state.count(report);
        }
        let closed = state.closed;
        let lane_state = &mut state.lanes[lane as usize];
        lane_state.threads -= 1;
        let recovery = lane_state.recover(closed, true);
        drop(state);
        self.progress.notify_all();
        recovery
    }

    /// Registers a thread started outside a submission (fixed threads at build time).
    pub(crate) fn add_thread(&self, lane: LaneId) {
        self.lock().lanes[lane as usize].threads += 1;
    }

    /// Forgets a thread that could not be started.
    pub(crate) fn remove_thread(&self, lane: LaneId) {
        self.lock().lanes[lane as usize].threads -= 1;
    }

    /// Enqueues an armed dispatch under an existing reservation (P1).
    pub(crate) fn enqueue(&self, lane: LaneId, dispatch: Dispatch) -> Enqueue {
        let mut state = self.lock();
        if state.closed {
            return Enqueue::Closed(dispatch);
        }
        let lane_state = &mut state.lanes[lane as usize];
        if lane_state.threads == 0 {
            // Rule P4: the lane lost its last thread and none could start; never orphan a job.
            return Enqueue::Stranded(dispatch);
        }
        lane_state.queue.push_back(dispatch);
        let wake = lane_state.idle > 0;
        drop(state);
        if wake {
            self.work[lane as usize].notify_one();
        }
        Enqueue::Queued
    }

    /// Counts a queued job that was cancelled without running (P5).
    pub(crate) fn cancelled_queued(&self, lane: LaneId, report: RunReport) {
        let mut state = self.lock();
        state.lanes[lane as usize].queued -= 1;
        state.count(report);
        drop(state);
        self.progress.notify_all();
    }

    /// Blocks a lane thread until there is a job to run or it should exit (P3–P4).
    pub(crate) fn next(&self, lane: LaneId) -> Next {
        let index = lane as usize;
        let mut state = self.lock();
        loop {
            let lane_state = &mut state.lanes[index];
            if let Some(dispatch) = lane_state.queue.pop_front() {
                lane_state.queued -= 1;
                lane_state.running += 1;
                return Next::Run(dispatch);
            }
            if state.closed {
                return self.exit(state, index);
            }
            let lane_state = &mut state.lanes[index];
            lane_state.idle += 1;
            let elastic = lane_state.threads > lane_state.limits.min_threads;
            let keep_alive = lane_state.limits.keep_alive;
            let timed_out = if elastic {
                let (guard, result) = self.work[index]
                    .wait_timeout(state, keep_alive)
                    .expect("pool lock is never poisoned");
                state = guard;
                result.timed_out()
            } else {
                state = self.work[index]
                    .wait(state)
                    .expect("pool lock is never poisoned");
                false
            };
            let lane_state = &mut state.lanes[index];
            lane_state.idle -= 1;
            // Rule P4: an idle elastic thread leaves only if the remaining free threads still
            // cover every reserved job.
            let spare = (lane_state.threads as u64 - 1).saturating_sub(lane_state.running);
            if timed_out
                && lane_state.queue.is_empty()
                && lane_state.threads > lane_state.limits.min_threads
                && spare >= lane_state.queued
            {
                return self.exit(state, index);
            }
        }
    }

    fn exit(&self, mut state: MutexGuard<'_, Synced>, index: usize) -> Next {
        state.lanes[index].threads -= 1;
        drop(state);
        self.progress.notify_all();
        Next::Exit
    }

    /// Counts a job a lane thread finished (P6).
    pub(crate) fn finished(&self, lane: LaneId, report: RunReport) {
        let mut state = self.lock();
        state.lanes[lane as usize].running -= 1;
        state.count(report);
        // Only a shutdown waits on `progress`, and it closes the pool before it waits: a job
        // finishing before the close is seen by the shutdown's first check under the lock.
        let closing = state.closed;
        drop(state);
        if closing {
            self.progress.notify_all();
        }
    }

    /// Closes the pool (P5): refuses new work and takes every queued dispatch out for the
    /// caller to cancel. Lane threads exit once their queue is empty.
    pub(crate) fn close(&self) -> Vec<(LaneId, Dispatch)> {
        let mut state = self.lock();
        state.closed = true;
        let mut taken = Vec::new();
        for (lane, id) in state
            .lanes
            .iter_mut()
            .zip([LaneId::Interruptible, LaneId::Quarantine])
        {
            taken.extend(lane.queue.drain(..).map(|dispatch| (id, dispatch)));
        }
        drop(state);
        for work in &self.work {
            work.notify_all();
        }
        taken
    }

    /// Waits until nothing is outstanding or `deadline` passes (P5).
    pub(crate) fn wait_drained(&self, deadline: Instant) -> ShutdownReport {
        let mut state = self.lock();
        loop {
            let snapshot = state.snapshot();
            if snapshot.outstanding() == 0 {
                return ShutdownReport::Drained { snapshot };
            }
            let now = Instant::now();
            if now >= deadline {
                return ShutdownReport::DeadlineExceeded { snapshot };
            }
            let (guard, _) = self
                .progress
                .wait_timeout(state, deadline - now)
                .expect("pool lock is never poisoned");
            state = guard;
        }
    }

    pub(crate) fn snapshot(&self) -> ExecutorSnapshot {
        self.lock().snapshot()
    }

    /// Live lane threads (for tests and diagnostics).
    pub(crate) fn threads(&self, lane: LaneId) -> usize {
        self.lock().lanes[lane as usize].threads
    }
}

impl Lane {
    /// Whether an accepted job would wait without a thread that could start it now, while the
    /// lane may still start one (P4).
    fn lacks_thread(&self) -> bool {
        let free = (self.threads as u64).saturating_sub(self.running);
        self.queued > free && self.threads < self.limits.max_threads
    }

    /// Rule P4 after a lost or failed thread: respawn when queued work lacks a thread (if
    /// `may_respawn`), else hand back the queue of a lane without any thread.
    fn recover(&mut self, closed: bool, may_respawn: bool) -> Recovery {
        if closed {
            // The close takes the queue out and cancels it; nothing new is accepted.
            return Recovery::Covered;
        }
        if may_respawn && self.lacks_thread() {
            self.threads += 1;
            return Recovery::Respawn;
        }
        if self.threads == 0 {
            return Recovery::Stranded(self.queue.drain(..).collect());
        }
        Recovery::Covered
    }
}

impl Synced {
    fn count(&mut self, report: RunReport) {
        match report.class {
            TerminalClass::Completed => self.completed += 1,
            TerminalClass::Cancelled => self.cancelled += 1,
            TerminalClass::WorkerPanic => self.panicked += 1,
        }
        if report.delivery == DeliveryOutcome::InboxClosed {
            self.undeliverable += 1;
        }
    }

    fn snapshot(&self) -> ExecutorSnapshot {
        let [interruptible, quarantine] = &self.lanes;
        ExecutorSnapshot {
            accepted: self.accepted,
            // Rule P2: reservations still waiting for their thread are not accepted yet.
            queued: interruptible.queued - interruptible.spawning + quarantine.queued
                - quarantine.spawning,
            running_interruptible: interruptible.running,
            running_quarantined: quarantine.running,
            completed: self.completed,
            cancelled: self.cancelled,
            panicked: self.panicked,
            undeliverable: self.undeliverable,
            rejected: self.rejected,
        }
    }
}
