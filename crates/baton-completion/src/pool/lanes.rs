//! The pool's shared state: two lanes (interruptible, quarantine), their bounded queues, their
//! threads and the counters, all under one lock (pool rules P1–P7 in `pool/mod.rs`); each
//! lane's own state and decisions are in `lane.rs`.

use super::lane::{Lane, LaneId, LaneLimits};
use super::outcomes::{
    Attach, Enqueue, FailedSpawn, FinishedJob, Next, Recovery, SpawnConfirmed, Submitted,
};
use super::spin;
use crate::completion::DeliveryOutcome;
use crate::dispatch::{Dispatch, RunReport, Submission, TerminalClass};
use crate::executor::{ExecutorSnapshot, RejectReason, ShutdownReport};
use crate::identity::RuntimeId;
use crate::sync::{AtomicUsize, Condvar, Mutex, MutexGuard, Ordering};
use std::collections::HashSet;
use web_time::Instant;

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
        Self {
            synced: Mutex::new(Synced {
                closed: false,
                lanes: [Lane::new(interruptible), Lane::new(quarantine)],
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
            lane_state.wakes += 1;
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
    pub(crate) fn next(&self, lane: LaneId, finished: Option<FinishedJob>) -> Next {
        let index = lane as usize;
        let mut state = self.lock();
        if let Some(FinishedJob { report, ran_for }) = finished {
            let lane_state = &mut state.lanes[index];
            lane_state.running -= 1;
            lane_state.finished += 1;
            lane_state.note_run(ran_for);
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
        // Woken to stand by as the sentinel (P7): look at the queue at the first tick.
        let mut standing_by = false;
        loop {
            let lane_state = &mut state.lanes[index];
            let taken = if standing_by {
                None
            } else {
                lane_state.queue.pop_front()
            };
            if let Some(dispatch) = taken {
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
            if !spun && !standing_by && lane_state.spinning == 0 {
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
            // `sentinel_tick`, so a job queued behind them without a wake waits that long at
            // most; it leaves the role at a tick that finds no job running.
            let sentinel = !lane_state.sentinel && lane_state.running > 0;
            lane_state.sentinel |= sentinel;
            let finished_before = lane_state.finished;
            let elastic = lane_state.threads > lane_state.limits.min_threads;
            let keep_alive = lane_state.limits.keep_alive;
            let tick = lane_state.limits.sentinel_tick;
            let timed_out = if sentinel {
                let (guard, result) = self.work[index]
                    .wait_timeout(state, tick)
                    .expect("pool lock is never poisoned");
                state = guard;
                let lane_state = &mut state.lanes[index];
                lane_state.sentinel = false;
                if result.timed_out()
                    && lane_state.finished == finished_before
                    && !lane_state.queue.is_empty()
                {
                    // Rule P7: jobs waited a whole tick and none finished, so the running ones
                    // last: from here, waking threads for queued jobs pays. A sentinel woken
                    // before its tick has not seen that.
                    lane_state.typical_run = lane_state.typical_run.max(tick);
                }
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
            // Rule P7: the first thread awake after a wake for a sentinel takes the role,
            // unless no job runs any more (then it looks at the queue itself) or a thread
            // became the sentinel meanwhile.
            standing_by = std::mem::take(&mut lane_state.sentinel_wanted)
                && lane_state.running > 0
                && !lane_state.sentinel;
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

    /// Sleeping lane threads woken for queued jobs so far (rule P7; for tests and diagnostics).
    pub(crate) fn wakes(&self, lane: LaneId) -> u64 {
        self.lock().lanes[lane as usize].wakes
    }

    /// Tests only: whether every thread of `lane` that runs no job waits on the lane's condvar
    /// with no wake outstanding (none starting, spinning, or notified and not yet back), so the
    /// next queued job reaches a thread only through the lane's wake decision (rule P7).
    #[cfg(test)]
    pub(crate) fn asleep(&self, lane: LaneId) -> bool {
        let state = self.lock();
        let lane = &state.lanes[lane as usize];
        lane.idle as u64 + lane.running == lane.threads as u64
            && lane.spinning == 0
            && lane.notified == 0
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
