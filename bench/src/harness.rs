//! Runs every (workload, contender) pair side by side.
//!
//! Rules:
//!
//! H1. Work is bounded by operation counts, never durations, so every run stops by itself.
//!
//! H2. For each workload, round 0 is an untimed warm-up; rounds 1..=runs are recorded.
//!
//! H3. Within a round the contenders run one after another in column order (A B C, A B C, ...),
//!    so slow drifts of machine noise hit every column alike.
//!
//! H4. Every contender in a round gets the same seed, so file workloads touch the same offsets.
//!
//! H5. A failed run (an error or a panic) stops that cell (reported as failed with the error);
//!    an unsupported workload is reported as not applicable with the contender's reason;
//!    neither invents a number.

use std::io::Write;
use std::panic::{self, AssertUnwindSafe};

use crate::contenders::Contender;
use crate::fixture::FileFixture;
use crate::sample::{NoSample, Outcome, Sample};
use crate::workloads::{Size, Workload};

/// Recorded runs of one contender on one workload.
#[derive(Debug, Default)]
pub(crate) struct Cell {
    /// The recorded runs, in order.
    pub(crate) samples: Vec<Sample>,
    /// Why the cell has no (more) samples, if so.
    pub(crate) missing: Option<NoSample>,
}

/// One workload's cells, one per contender in column order.
#[derive(Debug)]
pub(crate) struct Row {
    /// The workload measured.
    pub(crate) workload: Workload,
    /// One cell per contender.
    pub(crate) cells: Vec<Cell>,
}

/// How to run the benchmark.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    /// Recorded runs per cell (at least five).
    pub(crate) runs: usize,
    /// Work per run.
    pub(crate) size: Size,
}

/// Measures every workload on every contender; prints progress to stderr.
pub(crate) fn run_all(
    workloads: &[Workload],
    contenders: &mut [Box<dyn Contender>],
    settings: Settings,
    file: &FileFixture,
) -> Vec<Row> {
    workloads
        .iter()
        .map(|workload| run_row(*workload, contenders, settings, file))
        .collect()
}

fn run_row(
    workload: Workload,
    contenders: &mut [Box<dyn Contender>],
    settings: Settings,
    file: &FileFixture,
) -> Row {
    let mut cells: Vec<Cell> = contenders.iter().map(|_| Cell::default()).collect();
    eprint!("{:<34}", workload.label());
    // Rule H2: round 0 warms up.
    for round in 0..=settings.runs {
        // Rule H4: one seed per round.
        let seed = 0x5EED_0000_u64 ^ (round as u64).wrapping_mul(0x1000_0000_01B3);
        // Rule H3: every contender once per round, in column order.
        for (contender, cell) in contenders.iter_mut().zip(cells.iter_mut()) {
            if cell.missing.is_some() {
                continue;
            }
            match run_contained(workload, contender.as_mut(), settings.size, seed, file) {
                Ok(sample) if round > 0 => cell.samples.push(sample),
                Ok(_) => {}
                // Rule H5: stop this cell and keep the reason; a cell that failed part-way
                // reports the failure, not a median of fewer runs.
                Err(why) => {
                    if let NoSample::Failed(error) = &why {
                        eprint!("\n  {} failed: {error}\n  ", contender.name());
                    }
                    cell.samples.clear();
                    cell.missing = Some(why);
                }
            }
        }
        eprint!(".");
        // Progress dots only; a closed stderr must not stop the benchmark.
        let _ = std::io::stderr().flush();
    }
    eprintln!();
    Row { workload, cells }
}

/// Runs one sample, turning a panic inside the contender into a failed cell (H5) so one
/// broken runtime cannot take the whole table down. The contender is not used again for this
/// workload after a failure.
fn run_contained(
    workload: Workload,
    contender: &mut dyn Contender,
    size: Size,
    seed: u64,
    file: &FileFixture,
) -> Outcome {
    let ops = workload.ops(size);
    panic::catch_unwind(AssertUnwindSafe(|| {
        workload.run(contender, ops, seed, file)
    }))
    .unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a non-string payload".into());
        Err(NoSample::Failed(format!("panicked: {message}")))
    })
}
