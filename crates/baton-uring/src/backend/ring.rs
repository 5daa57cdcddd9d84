//! The real kernel ring.
//!
//! Set-up flags: a pinned driver tries `SINGLE_ISSUER | DEFER_TASKRUN` (they
//! bind the ring to one submitting thread, so a migrating worker must not use them); every driver
//! tries `COOP_TASKRUN | TASKRUN_FLAG`. Each combination is tried in turn and falls back on
//! `EINVAL`, and [`RingFlags`] records what took effect.

use std::io;
use std::time::Duration;

use io_uring::{IoUring, Probe, squeue, types};

use super::{Backend, Cqe, RingFlags, SqFull, Wait};
use crate::error::SetupError;

/// `IORING_MAX_ENTRIES` in the kernel.
pub(crate) const KERNEL_MAX_ENTRIES: u32 = 32768;

/// The kernel ring plus its probe and wake-up eventfd.
pub(crate) struct RingBackend {
    ring: IoUring,
    probe: Probe,
    flags: RingFlags,
    /// See [`Backend::polls_first`].
    polls_first: bool,
}

impl std::fmt::Debug for RingBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingBackend")
            .field("sq_entries", &self.ring.params().sq_entries())
            .field("flags", &self.flags)
            .finish_non_exhaustive()
    }
}

/// Maps an `io_uring_setup` failure to its cause. A locked-memory shortfall is `ENOMEM`;
/// `EPERM` means policy (seccomp, a container runtime, `kernel.io_uring_disabled`, or not being
/// in `kernel.io_uring_group`), as do `ENOSYS` and `EACCES`.
pub(crate) fn classify(err: io::Error) -> SetupError {
    match err.raw_os_error() {
        Some(libc::ENOMEM) => SetupError::Memlock { source: err },
        Some(libc::EPERM | libc::ENOSYS | libc::EACCES) => SetupError::Disabled { source: err },
        _ => SetupError::Os { source: err },
    }
}

impl RingBackend {
    /// Sets up a ring of `entries`, probing the set-up flags (see the module doc); also returns
    /// the completion queue's size.
    pub(crate) fn new(entries: u32, pinned: bool) -> Result<(RingBackend, u32), SetupError> {
        let mut attempts: Vec<RingFlags> = Vec::new();
        if pinned {
            attempts.push(RingFlags {
                single_issuer: true,
                defer_taskrun: true,
                coop_taskrun: false,
                taskrun_flag: true,
            });
            attempts.push(RingFlags {
                single_issuer: true,
                ..RingFlags::default()
            });
        }
        attempts.push(RingFlags {
            coop_taskrun: true,
            taskrun_flag: true,
            ..RingFlags::default()
        });
        attempts.push(RingFlags::default());
        let mut last = None;
        for flags in attempts {
            let mut builder = IoUring::builder();
            if flags.single_issuer {
                builder.setup_single_issuer();
            }
            if flags.defer_taskrun {
                builder.setup_defer_taskrun();
            }
            if flags.coop_taskrun {
                builder.setup_coop_taskrun();
            }
            if flags.taskrun_flag {
                builder.setup_taskrun_flag();
            }
            match builder.build(entries) {
                Ok(ring) => return Self::finish(ring, flags),
                Err(err) if err.raw_os_error() == Some(libc::EINVAL) => last = Some(err),
                Err(err) => return Err(classify(err)),
            }
        }
        Err(classify(last.unwrap_or_else(|| {
            io::Error::from_raw_os_error(libc::EINVAL)
        })))
    }

    fn finish(ring: IoUring, flags: RingFlags) -> Result<(RingBackend, u32), SetupError> {
        if !ring.params().is_feature_ext_arg() {
            return Err(SetupError::MissingFeature {
                feature: "IORING_FEAT_EXT_ARG (timed waits)",
            });
        }
        // Requests that wait on a peer are not held back by the in-flight limit (lifecycle
        // rule U2), so more of them may complete at once than the completion queue holds: the
        // kernel must keep the overflow rather than drop it.
        if !ring.params().is_feature_nodrop() {
            return Err(SetupError::MissingFeature {
                feature: "IORING_FEAT_NODROP (completions beyond the completion queue are kept)",
            });
        }
        let mut probe = Probe::new();
        ring.submitter()
            .register_probe(&mut probe)
            .map_err(|source| SetupError::Os { source })?;
        let cq_entries = ring.params().cq_entries();
        // No feature bit names `IORING_RECVSEND_POLL_FIRST` (5.19); `RECVSEND_BUNDLE` (6.10)
        // is the earliest bit that implies it. A 5.19–6.9 kernel starts receives with an
        // attempt, as before the flag existed.
        let polls_first = ring.params().is_feature_recvsend_bundle();
        Ok((
            RingBackend {
                ring,
                probe,
                flags,
                polls_first,
            },
            cq_entries,
        ))
    }
}

impl RingBackend {
    /// Whether a non-waiting enter would change nothing: no SQE to submit, no overflowed CQE
    /// to flush, and — known only with `COOP_TASKRUN | TASKRUN_FLAG` (not `DEFER_TASKRUN`,
    /// whose local work we do not assume is flagged) — no completion work the kernel holds back
    /// until the next enter (`IORING_SQ_TASKRUN` clear). Skipping that enter saves a syscall on
    /// every idle poll turn; completions that arrive afterwards set the flag, so the next turn
    /// enters.
    fn nothing_to_enter_for(&mut self) -> bool {
        if !(self.flags.coop_taskrun && self.flags.taskrun_flag) || self.flags.defer_taskrun {
            return false;
        }
        let mut sq = self.ring.submission();
        sq.sync();
        sq.is_empty() && !sq.taskrun() && !sq.cq_overflow()
    }
}

impl Backend for RingBackend {
    fn push(&mut self, entry: &squeue::Entry) -> Result<(), SqFull> {
        // SAFETY: the driver keeps everything the entry points to (buffers, iovecs, addresses,
        // paths, fds) owned by the request's slot until the request's final completion (the
        // ownership rule of the request lifecycle, docs/protocols/uring.md).
        unsafe { self.ring.submission().push(entry) }.map_err(|_| SqFull)
    }

    fn submit(&mut self, wait: Wait) -> io::Result<()> {
        let result = match wait {
            Wait::No if self.nothing_to_enter_for() => return Ok(()),
            Wait::No => self.ring.submit().map(drop),
            Wait::ForOne(None) => self.ring.submit_and_wait(1).map(drop),
            Wait::ForOne(Some(timeout)) => {
                let timeout = timeout.min(Duration::from_secs(3600));
                let ts = types::Timespec::new()
                    .sec(timeout.as_secs())
                    .nsec(timeout.subsec_nanos());
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(1, &args).map(drop)
            }
        };
        match result {
            Err(err)
                if matches!(
                    err.raw_os_error(),
                    Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY) | Some(libc::EAGAIN)
                ) =>
            {
                Ok(())
            }
            other => other,
        }
    }

    fn reap(&mut self, out: &mut Vec<Cqe>) {
        out.extend(self.ring.completion().map(|cqe| Cqe {
            user_data: cqe.user_data(),
            result: cqe.result(),
        }));
    }

    fn completions_ready(&mut self) -> bool {
        if !self.ring.completion().is_empty() {
            return true;
        }
        let mut sq = self.ring.submission();
        sq.sync();
        sq.taskrun() || sq.cq_overflow()
    }

    fn supports(&self, opcode: u8) -> bool {
        self.probe.is_supported(opcode)
    }

    fn polls_first(&self) -> bool {
        self.polls_first
    }

    fn flags(&self) -> RingFlags {
        self.flags
    }
}
