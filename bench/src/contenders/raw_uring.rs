//! The limit: hand-written io_uring loops with no runtime at all.
//!
//! One ring, created once on the benchmark's main thread and only ever entered from it. Where the
//! kernel has them, the ring is set up with `SINGLE_ISSUER | DEFER_TASKRUN` (the cheapest
//! completion path), falling back to a default ring. The loops keep exactly the job's depth of
//! requests in flight, reuse one preallocated buffer per slot, and never allocate per operation.
//!
//! Rules the loops follow:
//!
//! R1. A buffer or descriptor handed to the kernel is neither moved, freed nor closed until its
//!    completion has been reaped; on any error the loop stops issuing but still reaps every
//!    request in flight before returning.
//!
//! R2. `user_data` names the slot (file loops) or the connection and operation (echo loop), so a
//!    completion always finds the buffer it belongs to.
//!
//! R3. The ring is drained completely at the end of every run, so no run sees another's
//!    completions.

use std::io;
use std::os::fd::AsRawFd;
use std::sync::mpsc;
use std::thread;

use io_uring::{IoUring, opcode, squeue, types};

use super::{Contender, RAW};
use crate::fixture::BLOCK;
use crate::jobs::{EchoJob, FileJob, FileOp, ForeignJob, HttpJob};
use crate::sample::{Meter, NoSample, Outcome, Sample, expect_len};

mod echo;

/// Submission queue size; file loops keep at most [`MAX_DEPTH`] requests in flight.
const RING_ENTRIES: u32 = 256;

/// The deepest queue a file loop accepts (half the ring, leaving room for a refill batch).
const MAX_DEPTH: usize = 128;

/// Why the raw loop has no column in task-system rows.
const NO_TASKS: &str = "a bare ring has no task system, executor or blocking pool";

/// The raw ring and how it was set up.
pub(crate) struct RawUring {
    ring: IoUring,
    /// The set-up flags the kernel accepted.
    flags: &'static str,
    /// The foreign-poll loop's read buffer (owned here so a failed ring can leak it).
    scratch: Vec<u8>,
}

impl std::fmt::Debug for RawUring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawUring")
            .field("entries", &self.ring.params().sq_entries())
            .finish_non_exhaustive()
    }
}

impl RawUring {
    /// Sets up the ring, preferring `SINGLE_ISSUER | DEFER_TASKRUN`.
    pub(crate) fn new() -> io::Result<Self> {
        let (ring, flags) = match IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(RING_ENTRIES)
        {
            Ok(ring) => (ring, "SINGLE_ISSUER | DEFER_TASKRUN"),
            Err(_) => (
                IoUring::new(RING_ENTRIES)?,
                "default flags (DEFER_TASKRUN refused)",
            ),
        };
        Ok(Self {
            ring,
            flags,
            scratch: vec![0; BLOCK],
        })
    }
}

/// Enters the kernel to submit what is queued and wait for at least `want` completions,
/// retrying when a signal interrupts the wait.
fn submit_and_wait(submitter: &io_uring::Submitter<'_>, want: usize) -> io::Result<()> {
    loop {
        match submitter.submit_and_wait(want) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// The SQE for one 4 KiB file operation on `buf` at `offset`, tagged with `slot` (R2).
fn file_entry(
    op: FileOp,
    fd: types::Fd,
    buf: &mut [u8],
    offset: u64,
    slot: usize,
) -> squeue::Entry {
    let len = buf.len() as u32;
    let entry = match op {
        FileOp::Read => opcode::Read::new(fd, buf.as_mut_ptr(), len)
            .offset(offset)
            .build(),
        FileOp::Write => opcode::Write::new(fd, buf.as_ptr(), len)
            .offset(offset)
            .build(),
    };
    entry.user_data(slot as u64)
}

/// A completion's result as a byte count or the kernel's error.
fn completion_result(result: i32) -> io::Result<usize> {
    if result < 0 {
        Err(io::Error::from_raw_os_error(-result))
    } else {
        Ok(result as usize)
    }
}

impl RawUring {
    /// Keeps `job.depth` file operations in flight until `job.ops` have completed (R1–R3).
    fn file_loop(&mut self, job: &FileJob<'_>) -> io::Result<Sample> {
        if job.depth == 0 || job.depth > MAX_DEPTH {
            return Err(io::Error::other(format!(
                "queue depth {} is outside 1..={MAX_DEPTH}",
                job.depth
            )));
        }
        let file = job.file.open()?;
        let fd = types::Fd(file.as_raw_fd());
        let mut buffers: Vec<Vec<u8>> = (0..job.depth).map(|_| job.buffer()).collect();
        let mut offsets = job.offsets();
        let (submitter, mut sq, mut cq) = self.ring.split();
        let mut issued = 0_u64;
        let mut in_flight = 0_usize;
        let mut failure: Option<io::Error> = None;
        // Queues the next operation into `slot` unless the job is done or has failed.
        let mut refill = |sq: &mut squeue::SubmissionQueue<'_>,
                          buf: &mut Vec<u8>,
                          slot: usize,
                          failure: &mut Option<io::Error>,
                          in_flight: &mut usize| {
            if failure.is_some() || issued == job.ops {
                return;
            }
            let entry = file_entry(job.op, fd, buf, offsets.next_offset(), slot);
            // SAFETY: rule R1 — `buffers` and `file` outlive this function, and it does not
            // return until every request pushed here has been reaped (or it leaks `buffers`),
            // so the buffer and fd this SQE points at stay valid and unmoved for the kernel;
            // rule R2 — `slot` is free: it was never used or its completion was just reaped.
            match unsafe { sq.push(&entry) } {
                Ok(()) => {
                    issued += 1;
                    *in_flight += 1;
                }
                Err(_) => *failure = Some(io::Error::other("submission queue full")),
            }
        };

        let meter = Meter::start();
        for (slot, buf) in buffers.iter_mut().enumerate() {
            refill(&mut sq, buf, slot, &mut failure, &mut in_flight);
        }
        while in_flight > 0 {
            sq.sync();
            if let Err(e) = submit_and_wait(&submitter, 1) {
                // The kernel may still use the buffers and nothing more can be reaped: leak
                // them rather than free them under the kernel (R1).
                std::mem::forget(buffers);
                return Err(e);
            }
            cq.sync();
            for cqe in &mut cq {
                in_flight -= 1;
                let slot = cqe.user_data() as usize;
                let checked = completion_result(cqe.result())
                    .and_then(|n| expect_len("raw ring file op", n, BLOCK));
                if let Err(e) = checked {
                    failure.get_or_insert(e);
                }
                refill(
                    &mut sq,
                    &mut buffers[slot],
                    slot,
                    &mut failure,
                    &mut in_flight,
                );
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(meter.finish(job.ops)),
        }
    }

    /// Submits one 4 KiB read into the ring's scratch buffer at `offset` and waits for it.
    fn read_one(&mut self, fd: types::Fd, offset: u64) -> io::Result<usize> {
        let entry = file_entry(FileOp::Read, fd, &mut self.scratch, offset, 0);
        let (submitter, mut sq, mut cq) = self.ring.split();
        // SAFETY: rule R1 — `scratch` is owned by `self` and is not touched again until this
        // request's completion is reaped below; if the kernel cannot be entered, `scratch` is
        // leaked instead of freed.
        unsafe { sq.push(&entry) }.map_err(|_| io::Error::other("submission queue full"))?;
        sq.sync();
        loop {
            if let Err(e) = submit_and_wait(&submitter, 1) {
                std::mem::forget(std::mem::take(&mut self.scratch));
                return Err(e);
            }
            cq.sync();
            if let Some(cqe) = cq.next() {
                return completion_result(cqe.result());
            }
        }
    }
}

impl Contender for RawUring {
    fn name(&self) -> &'static str {
        RAW
    }

    fn setup(&self) -> String {
        format!(
            "io-uring crate, one {RING_ENTRIES}-entry ring with {}, hand-written loops",
            self.flags
        )
    }

    unsupported!(NO_TASKS => spawn_join, spawn_local_join, block_on_round_trip, blocking_jobs);

    fn file_io(&mut self, job: &FileJob<'_>) -> Outcome {
        Ok(self.file_loop(job)?)
    }

    fn tcp_echo(&mut self, job: &EchoJob) -> Outcome {
        echo::serve(&mut self.ring, job)
    }

    /// The foreign thread sends each offset over a channel to this thread, which owns the ring,
    /// submits the read, and sends the result back: the cheapest hand-off a ring owner can offer.
    fn http(&mut self, _job: &HttpJob) -> Outcome {
        Err(NoSample::Unsupported("a bare ring has no HTTP stack"))
    }

    fn foreign_poll(&mut self, job: &ForeignJob<'_>) -> Outcome {
        let file = job.file.open()?;
        let fd = types::Fd(file.as_raw_fd());
        let (request_tx, request_rx) = mpsc::sync_channel::<u64>(1);
        let (reply_tx, reply_rx) = mpsc::sync_channel::<io::Result<usize>>(1);
        let ops = job.ops;
        let mut offsets = job.offsets();
        let foreign = thread::Builder::new().name("foreign-poller".into()).spawn(
            move || -> io::Result<Sample> {
                let meter = Meter::start();
                for _ in 0..ops {
                    request_tx
                        .send(offsets.next_offset())
                        .map_err(|_| io::Error::other("the ring thread stopped serving"))?;
                    let n = reply_rx
                        .recv()
                        .map_err(|_| io::Error::other("the ring thread stopped replying"))??;
                    expect_len("forwarded read", n, BLOCK)?;
                }
                Ok(meter.finish(ops))
            },
        )?;
        if self.scratch.len() != BLOCK {
            return Err(NoSample::Failed(
                "the ring failed earlier; its buffer was leaked".into(),
            ));
        }
        // Ends when the foreign thread drops its sender (done or failed).
        for offset in request_rx.iter() {
            let result = self.read_one(fd, offset);
            if reply_tx.send(result).is_err() {
                break;
            }
        }
        drop(reply_tx);
        crate::sample::join_sample(foreign, "foreign poller")
    }
}
