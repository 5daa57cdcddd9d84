//! One measured run of one workload by one contender, and how a run is timed.
//!
//! A contender times only the steady-state loop: it sets up (opens the file, binds the socket,
//! builds buffers), then starts a [`Meter`], does exactly the job's operation count, and stops
//! the meter. The meter reads the wall clock, the process's CPU time and the process-wide
//! allocation counter at both ends, so every sample carries its own CPU-time-per-operation and
//! allocations-per-operation figures.

use std::fmt;
use std::time::{Duration, Instant};

use crate::alloc_count;

/// What one run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Sample {
    /// Operations completed inside the timed window.
    pub(crate) ops: u64,
    /// Wall-clock length of the timed window.
    pub(crate) elapsed: Duration,
    /// Allocation requests made by the whole process inside the timed window.
    pub(crate) allocations: u64,
    /// CPU time (user plus system) the whole process used inside the timed window: every
    /// thread of it, including a runtime's helper threads, the kernel's io_uring workers and
    /// the echo client.
    pub(crate) cpu: Duration,
    /// The part of `cpu` the load generator's own threads used, where it measures it (the HTTP
    /// rows); `None` elsewhere.
    pub(crate) load_cpu: Option<Duration>,
}

impl Sample {
    /// Throughput of this run in operations per second.
    pub(crate) fn ops_per_sec(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        self.ops as f64 / secs
    }

    /// Allocation requests per completed operation.
    pub(crate) fn allocations_per_op(&self) -> f64 {
        self.allocations as f64 / (self.ops.max(1) as f64)
    }

    /// CPU time per completed operation, in microseconds.
    pub(crate) fn cpu_micros_per_op(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / (self.ops.max(1) as f64)
    }

    /// The load generator's CPU time per completed operation, in microseconds, where measured.
    pub(crate) fn load_cpu_micros_per_op(&self) -> Option<f64> {
        self.load_cpu
            .map(|cpu| cpu.as_secs_f64() * 1e6 / (self.ops.max(1) as f64))
    }
}

/// CPU time (user plus system) used so far by every thread of this process, living or exited.
fn process_cpu() -> Duration {
    rusage_cpu(libc::RUSAGE_SELF)
}

/// CPU time (user plus system) used so far by the calling thread.
pub(crate) fn thread_cpu() -> Duration {
    rusage_cpu(libc::RUSAGE_THREAD)
}

fn rusage_cpu(who: libc::c_int) -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a valid, writable `rusage`; `getrusage` only writes it.
    let rc = unsafe { libc::getrusage(who, usage.as_mut_ptr()) };
    if rc != 0 {
        // getrusage fails only for an invalid pointer or `who`, neither possible here.
        return Duration::ZERO;
    }
    // SAFETY: getrusage succeeded, so it initialised the struct (and it started zeroed).
    let usage = unsafe { usage.assume_init() };
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime))
}

/// A started timing window: the wall clock and allocation count at its start.
#[derive(Debug)]
pub(crate) struct Meter {
    started: Instant,
    cpu_at_start: Duration,
    allocations_at_start: u64,
}

impl Meter {
    /// Starts timing now.
    pub(crate) fn start() -> Self {
        Self {
            allocations_at_start: alloc_count::allocations(),
            cpu_at_start: process_cpu(),
            started: Instant::now(),
        }
    }

    /// Stops timing and records that `ops` operations completed in the window.
    pub(crate) fn finish(self, ops: u64) -> Sample {
        let elapsed = self.started.elapsed();
        let cpu = process_cpu().saturating_sub(self.cpu_at_start);
        let allocations = alloc_count::allocations().saturating_sub(self.allocations_at_start);
        Sample {
            ops,
            elapsed,
            allocations,
            cpu,
            load_cpu: None,
        }
    }
}

/// Why a contender produced no sample for a workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NoSample {
    /// The contender has no way to express this workload (reported as "n/a" with the reason).
    Unsupported(&'static str),
    /// The run was attempted and failed; the harness stops measuring this cell.
    Failed(String),
}

impl fmt::Display for NoSample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unsupported(why) => write!(f, "not applicable: {why}"),
            Self::Failed(why) => write!(f, "failed: {why}"),
        }
    }
}

impl From<std::io::Error> for NoSample {
    fn from(error: std::io::Error) -> Self {
        Self::Failed(error.to_string())
    }
}

/// The result of asking a contender for one run.
pub(crate) type Outcome = Result<Sample, NoSample>;

/// Joins a measuring thread and turns its result (or its panic) into an [`Outcome`].
pub(crate) fn join_sample(
    thread: std::thread::JoinHandle<std::io::Result<Sample>>,
    what: &str,
) -> Outcome {
    match thread.join() {
        Ok(Ok(sample)) => Ok(sample),
        Ok(Err(e)) => Err(NoSample::Failed(format!("{what}: {e}"))),
        Err(_) => Err(NoSample::Failed(format!("{what} thread panicked"))),
    }
}

/// Turns a transfer's byte count into an error unless it moved exactly `expected` bytes.
pub(crate) fn expect_len(what: &str, got: usize, expected: usize) -> std::io::Result<()> {
    if got == expected {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "{what} moved {got} bytes, expected {expected}"
        )))
    }
}

/// Turns a count into an error unless it is exactly `expected` (joined tasks, checksums).
pub(crate) fn expect_count(what: &str, got: u64, expected: u64) -> std::io::Result<()> {
    if got == expected {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "{what}: got {got}, expected {expected}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughput_divides_ops_by_seconds() {
        let sample = Sample {
            ops: 500,
            elapsed: Duration::from_millis(250),
            allocations: 1000,
            cpu: Duration::from_millis(5),
            load_cpu: Some(Duration::from_millis(1)),
        };
        assert!((sample.ops_per_sec() - 2000.0).abs() < 1e-6);
        assert!((sample.allocations_per_op() - 2.0).abs() < 1e-9);
        assert!((sample.cpu_micros_per_op() - 10.0).abs() < 1e-9);
        assert!(
            sample
                .load_cpu_micros_per_op()
                .is_some_and(|l| (l - 2.0).abs() < 1e-9)
        );
    }

    #[test]
    fn meter_counts_cpu_spent_inside_its_window() {
        let meter = Meter::start();
        // Burn at least 30 ms of CPU on this thread (bounded by the clock, not by a count).
        let spin_until = Instant::now() + Duration::from_millis(30);
        let mut x = 0_u64;
        while Instant::now() < spin_until {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let sample = meter.finish(1);
        assert!(x > 0);
        // getrusage has tick granularity; 30 ms of spinning shows as at least 10 ms even
        // when the thread is preempted for part of it.
        assert!(
            sample.cpu >= Duration::from_millis(10),
            "30 ms of spinning measured as {:?} of CPU",
            sample.cpu
        );
    }

    #[test]
    fn meter_counts_allocations_inside_its_window() {
        let meter = Meter::start();
        let kept: Vec<Box<u32>> = (0..10).map(Box::new).collect();
        let sample = meter.finish(10);
        assert_eq!(kept.len(), 10);
        assert!(
            sample.allocations >= 11,
            "ten boxes and one vector were allocated"
        );
    }

    #[test]
    fn short_transfer_is_an_error() {
        assert!(expect_len("read", 4096, 4096).is_ok());
        let err = expect_len("read", 100, 4096).expect_err("a short read must be refused");
        assert!(err.to_string().contains("100"));
    }
}
