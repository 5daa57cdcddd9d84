//! One measured run of one workload by one contender, and how a run is timed.
//!
//! A contender times only the steady-state loop: it sets up (opens the file, binds the socket,
//! builds buffers), then starts a [`Meter`], does exactly the job's operation count, and stops
//! the meter. The meter reads the wall clock and the process-wide allocation counter at both
//! ends, so every sample carries its own allocations-per-operation figure.

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
}

/// A started timing window: the wall clock and allocation count at its start.
#[derive(Debug)]
pub(crate) struct Meter {
    started: Instant,
    allocations_at_start: u64,
}

impl Meter {
    /// Starts timing now.
    pub(crate) fn start() -> Self {
        Self {
            allocations_at_start: alloc_count::allocations(),
            started: Instant::now(),
        }
    }

    /// Stops timing and records that `ops` operations completed in the window.
    pub(crate) fn finish(self, ops: u64) -> Sample {
        let elapsed = self.started.elapsed();
        let allocations = alloc_count::allocations().saturating_sub(self.allocations_at_start);
        Sample {
            ops,
            elapsed,
            allocations,
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
        };
        assert!((sample.ops_per_sec() - 2000.0).abs() < 1e-6);
        assert!((sample.allocations_per_op() - 2.0).abs() < 1e-9);
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
