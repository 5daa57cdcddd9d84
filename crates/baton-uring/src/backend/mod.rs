//! The backend seam: the driver's state machine talks to a ring only through [`Backend`], so
//! the same code runs over the real kernel ring ([`ring::RingBackend`]) and over a deterministic
//! simulated ring ([`sim::SimBackend`]) that property tests and loom models drive.

use std::io;
use std::time::Duration;

use io_uring::squeue;

pub(crate) mod ring;

/// One completion as the driver sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cqe {
    pub(crate) user_data: u64,
    pub(crate) result: i32,
}

/// The submission queue has no free entry; submit first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SqFull;

/// How long a submission may block for completions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Submit only.
    No,
    /// Block until at least one completion or the timeout (`None`: no timeout).
    ForOne(Option<Duration>),
}

/// The io_uring set-up flags that took effect.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RingFlags {
    /// `IORING_SETUP_SINGLE_ISSUER` (only when the driver is pinned).
    pub single_issuer: bool,
    /// `IORING_SETUP_DEFER_TASKRUN` (only when the driver is pinned).
    pub defer_taskrun: bool,
    /// `IORING_SETUP_COOP_TASKRUN`.
    pub coop_taskrun: bool,
    /// `IORING_SETUP_TASKRUN_FLAG`.
    pub taskrun_flag: bool,
}

/// What the driver needs from a ring.
pub(crate) trait Backend: Send {
    /// Queues one SQE; fails when the submission queue is full.
    fn push(&mut self, entry: &squeue::Entry) -> Result<(), SqFull>;
    /// Submits queued SQEs, optionally waiting for a completion. A timeout or an interrupted
    /// wait is not an error.
    fn submit(&mut self, wait: Wait) -> io::Result<()>;
    /// Moves every available completion into `out`.
    fn reap(&mut self, out: &mut Vec<Cqe>);
    /// Whether a non-waiting submit and a reap would find a completion: one is in the
    /// completion queue, overflowed, or held back as task work until the next enter. Answered
    /// from the shared ring memory, without a syscall.
    fn completions_ready(&mut self) -> bool;
    /// Whether the kernel supports `opcode`.
    fn supports(&self, opcode: u8) -> bool;
    /// Whether receives may carry `IORING_RECVSEND_POLL_FIRST` (Linux 5.19).
    fn polls_first(&self) -> bool;
    /// The set-up flags in effect.
    fn flags(&self) -> RingFlags;
}
