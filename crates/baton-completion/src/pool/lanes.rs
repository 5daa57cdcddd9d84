//! The pool's shared state: two lanes (interruptible, quarantine), their bounded queues, their
//! threads and the counters, all under one lock (pool rules P1–P6 in `pool/mod.rs`).

use super::outcomes::{Attach, Enqueue, FailedSpawn, Next, Recovery, SpawnConfirmed, Submitted};
use super::spin;
use crate::completion::DeliveryOutcome;
use crate::dispatch::{Dispatch, RunReport, Submission, TerminalClass};
use crate::executor::{ExecutorSnapshot, RejectReason, ShutdownReport};
use crate::identity::RuntimeId;
use crate::sync::{AtomicUsize, Condvar, Mutex, MutexGuard, Ordering};
use std::collections::{HashSet, VecDeque};
use std::time::Duration;
use web_time::Instant;

/// How often the lane's sentinel looks at the queue while other threads run jobs (rule P7):
/// the longest a job queued behind running jobs, without a wake of its own, waits for a
/// thread.
const SENTINEL_TICK: Duration = Duration::from_millis(1);

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
///
/// Waking (rule P7): `idle` threads wait on the lane's condvar, at most one thread is
/// `spinning` (between jobs, watching the lane's queue length without the lock), at most one
/// idle thread is the `sentinel` (its wait times out every [`SENTINEL_TICK`] while jobs run),
/// and `notified <= idle` counts `notify_one` calls no woken thread has accounted for yet. A
/// job is queued only while the lock is held, and every thread that stops spinning, wakes or
/// finishes a job re-checks the queue under the lock, so a job left without a notification
/// always has a spinning thread, a running one or a notified one that will find it; the
/// sentinel only bounds how long a job waits behind long-running ones.
#[derive(Debug)]
struct Lane {
    limits: LaneLimits,
    queue: VecDeque<Dispatch>,
    queued: u64,
    spawning: u64,
    running: u64,
    threads: usize,
    idle: usize,
    spinning: usize,
    notified: usize,
    sentinel: bool,
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
/// outstanding jobs; `queue_len[lane]` mirrors the length of that lane's queue (written under
/// the lock) for a spinning thread to watch without taking it. It is a hint only: a spinner
/// acts on nothing it reads there before re-checking under the lock.
#[derive(Debug)]
pub(crate) struct Lanes {
    synced: Mutex<Synced>,
    work: [Condvar; 2],
    progress: Condvar,
    queue_len: [AtomicUsize; 2],
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
            spinning: 0,
            notified: 0,
            sentinel: false,
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
            queue_len: [AtomicUsize::new(0), AtomicUsize::new(0)],
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

    /// Reserves one unit of `lane` capacity for `runtime`, then arms and queues the submission,
    /// all under one lock (rule P1: reserve, arm, enqueue; rule P2: the job counts as accepted
    /// and queued from here on, or once its thread started). Arming runs no user code.
    pub(crate) fn submit(
        &self,
        lane: LaneId,
        runtime: RuntimeId,
        submission: Submission,
    ) -> Submitted {
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
            return Submitted::Refused(reason, submission);
        }
        let lane_state = &mut state.lanes[lane as usize];
        lane_state.queued += 1;
        // Rule P4: make sure a thread exists for every reserved job, up to the lane's maximum.
        if lane_state.lacks_thread() {
            lane_state.threads += 1;
            lane_state.spawning += 1;
            return Submitted::SpawnFirst(submission);
        }
        // Rule P2: count at acceptance, not at dequeue.
        state.accepted += 1;
        match self.push(state, lane, submission.arm()) {
            Enqueue::Queued => Submitted::Queued,
            Enqueue::Closed(dispatch) | Enqueue::Stranded(dispatch) => {
                Submitted::Stranded(dispatch)
            }
        }
    }

    /// The thread a [`Submitted::SpawnFirst`] asked for started: accept the job, unless the
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
        self.queue_len[lane as usize].store(lane_state.queue.len(), Ordering::Relaxed);
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
        self.queue_len[lane as usize].store(lane_state.queue.len(), Ordering::Relaxed);
        // Rule P7: jobs queued without a wake relied on this thread coming back for them.
        let wake = !lane_state.queue.is_empty() && lane_state.idle > lane_state.notified;
        if wake {
            lane_state.notified += 1;
        }
        drop(state);
        if wake {
            self.work[lane as usize].notify_one();
        }
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
        let state = self.lock();
        self.push(state, lane, dispatch)
    }

    /// Queues `dispatch` under the held lock and wakes a thread if none will find it (P7).
    fn push(&self, mut state: MutexGuard<'_, Synced>, lane: LaneId, dispatch: Dispatch) -> Enqueue {
        if state.closed {
            return Enqueue::Closed(dispatch);
        }
        let index = lane as usize;
        let lane_state = &mut state.lanes[index];
        if lane_state.threads == 0 {
            // Rule P4: the lane lost its last thread and none could start; never orphan a job.
            return Enqueue::Stranded(dispatch);
        }
        lane_state.queue.push_back(dispatch);
        self.queue_len[index].store(lane_state.queue.len(), Ordering::Relaxed);
        let wake = lane_state.take_wake();
        drop(state);
        if wake {
            self.work[index].notify_one();
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

    /// Counts the job the lane thread just `finished` (P6), if any, then blocks it until there
    /// is a job to run or it should exit (P3, P4, P7), all under one lock where it can.
    pub(crate) fn next(&self, lane: LaneId, finished: Option<RunReport>) -> Next {
        let index = lane as usize;
        let mut state = self.lock();
        if let Some(report) = finished {
            state.lanes[index].running -= 1;
            state.count(report);
            // Only a shutdown waits on `progress`, and it closes the pool before it waits: a
            // job finishing before the close is seen by the shutdown's first check under the
            // lock.
            if state.closed {
                self.progress.notify_all();
            }
        }
        let mut spun = false;
        // When this thread last found nothing to do, for the keep-alive of a sentinel (P4).
        let mut idle_since: Option<Instant> = None;
        loop {
            let lane_state = &mut state.lanes[index];
            if let Some(dispatch) = lane_state.queue.pop_front() {
                self.queue_len[index].store(lane_state.queue.len(), Ordering::Relaxed);
                lane_state.queued -= 1;
                lane_state.running += 1;
                // Rule P7: more work is queued than this thread takes; hand it on unless a
                // sentinel will look.
                let wake = !lane_state.queue.is_empty() && lane_state.take_wake();
                drop(state);
                if wake {
                    self.work[index].notify_one();
                }
                return Next::Run(dispatch);
            }
            if state.closed {
                return self.exit(state, index);
            }
            let lane_state = &mut state.lanes[index];
            if !spun && lane_state.spinning == 0 {
                // Rule P7: watch the queue a little before sleeping.
                lane_state.spinning += 1;
                drop(state);
                spin::watch(&self.queue_len[index]);
                state = self.lock();
                state.lanes[index].spinning -= 1;
                spun = true;
                continue;
            }
            lane_state.idle += 1;
            let idle_since = *idle_since.get_or_insert_with(Instant::now);
            // Rule P7: while other threads run jobs, one idle thread looks at the queue every
            // `SENTINEL_TICK`, so a job queued behind them without a wake waits that long at
            // most; it leaves the role at a tick that finds no job running.
            let sentinel = !lane_state.sentinel && lane_state.running > 0;
            lane_state.sentinel |= sentinel;
            let elastic = lane_state.threads > lane_state.limits.min_threads;
            let keep_alive = lane_state.limits.keep_alive;
            let timed_out = if sentinel {
                let (guard, _) = self.work[index]
                    .wait_timeout(state, SENTINEL_TICK)
                    .expect("pool lock is never poisoned");
                state = guard;
                state.lanes[index].sentinel = false;
                // Rule P4: the keep-alive counts from when this thread went idle, ticks
                // included, so a sentinel leaves like any idle elastic thread.
                elastic && idle_since.elapsed() >= keep_alive
            } else if elastic {
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
            lane_state.notified = lane_state.notified.saturating_sub(1);
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
        for queue_len in &self.queue_len {
            queue_len.store(0, Ordering::Relaxed);
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
    /// Rule P7: whether a newly visible job needs a `notify_one` — no thread is spinning and
    /// some idle thread is not notified yet — counting the notification if so.
    fn take_wake(&mut self) -> bool {
        if self.spinning > 0 || (self.sentinel && self.running > 0) {
            // A spinner sees the job within its watch, a sentinel within a tick; and with a
            // job running, its thread re-checks the queue when the job ends.
            return false;
        }
        let wake = self.idle > self.notified;
        if wake {
            self.notified += 1;
        }
        wake
    }

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
