//! The runtimes under test, all behind one trait.
//!
//! Each contender owns its runtime (built once, reused by every run, as an application would) and
//! turns a job description into one timed [`Sample`](crate::sample::Sample). The contract every
//! implementation follows:
//!
//! K1. Set-up (opening the file, binding the listener, allocating buffers, spawning the client)
//!    happens before [`Meter::start`](crate::sample::Meter::start); exactly the job's operation
//!    count happens inside the window; the method returns only after every operation finished.
//!
//! K2. Every transfer is checked (a short read or write is a failure, never a silent success).
//!
//! K3. A workload the runtime cannot express is `NoSample::Unsupported` with the reason, never a
//!    substitute workload.
//!
//! K4. File workloads open their own descriptor per run (with the runtime's own `open` on
//!    [`FileFixture::path`], or [`FileFixture::open`] where it has none) and keep
//!    `job.depth` operations in flight: the raw loop as SQEs, runtimes as `job.depth` concurrent
//!    tasks each doing `job.lane_ops(lane)` operations on `job.lane_offsets(lane)`.
//!
//! K5. The echo server binds `127.0.0.1:0`, calls `job.spawn_client(addr)`, accepts exactly
//!    `job.connections` connections, echoes each until end-of-stream, and returns
//!    `client.join()`: the client's timing is the sample.
//!
//! K6. The HTTP server binds `127.0.0.1:0`, calls `job.spawn_client(addr)`, accepts exactly
//!    `job.connections` connections and serves each with hyper's http1 connection at its
//!    defaults and the one shared service ([`hyper_service::Responder`]), through the
//!    runtime's own hyper glue; it counts every connection that ends in an error and returns
//!    `client.join(errors)`. Only the glue differs between contenders (`hyper_http!`).
//!
//! Adding a contender (the Baton column was added this way): write one module implementing
//! [`Contender`] by these rules, add its crate to `bench/Cargo.toml`, add one [`roster`] line
//! in column order, drop its [`NOT_BUILT`] entry if it has one, and run this module's smoke test
//! (`cargo test --release --manifest-path bench/Cargo.toml`), which drives every contender
//! through every workload with a small operation count.
//!
//! [`FileFixture::open`]: crate::fixture::FileFixture::open
//! [`FileFixture::path`]: crate::fixture::FileFixture::path

use std::io;

use crate::jobs::{CountJob, EchoJob, FileJob, ForeignJob, HttpJob};
use crate::sample::Outcome;

#[macro_use]
mod recipes;

mod baton;
mod baton_workers;
mod compio_rt;
mod hyper_service;
mod monoio_rt;
mod monoio_threads;
mod raw_uring;
mod tokio_ct;
mod tokio_uring_rt;

/// Column name of the raw io_uring loop (the reference for file workloads).
pub(crate) const RAW: &str = "raw io_uring";
/// Column name of tokio's current-thread runtime (the reference for everything else).
pub(crate) const TOKIO: &str = "tokio";
/// Column name of Baton with its native owned-buffer I/O.
pub(crate) const BATON: &str = "Baton";
/// Column name of Baton serving the echo rows through `baton_compat::Compat` and tokio's I/O
/// traits, to show what the adapter costs against [`BATON`].
pub(crate) const BATON_COMPAT: &str = "Baton Compat";
/// Column name of Baton with two workers (`Builder::workers(2)`) on the echo and HTTP rows.
pub(crate) const BATON_WORKERS: &str = "Baton 2 workers";
/// Column name of tokio's multi-thread runtime with two workers.
pub(crate) const TOKIO_MULTI_THREAD: &str = "tokio mt 2 workers";
/// Column name of monoio on two threads (one runtime and listener each) on the echo and HTTP rows.
pub(crate) const MONOIO_THREADS: &str = "monoio 2 threads";

/// Pairs of columns the report also compares with each other, (column, baseline): the same
/// rows in the same rounds, so the ratio is the cost of what differs between them.
pub(crate) const PAIRS: &[(&str, &str)] = &[
    (BATON_COMPAT, BATON),
    (BATON_WORKERS, BATON),
    (BATON_WORKERS, TOKIO_MULTI_THREAD),
    (BATON_WORKERS, MONOIO_THREADS),
];

/// Contenders not compiled into this build, with the reason; the report lists them so a missing
/// column is never silent.
pub(crate) const NOT_BUILT: &[(&str, &str)] = &[];

/// One runtime under test.
pub(crate) trait Contender {
    /// The column name in the report.
    fn name(&self) -> &'static str;

    /// One line on how this runtime is configured (crate, driver, ring size, pool size), printed
    /// in the report's preamble.
    fn setup(&self) -> String;

    /// 4 KiB random reads or writes on the page-cached file at `job.depth` (K4).
    fn file_io(&mut self, job: &FileJob<'_>) -> Outcome;

    /// Serve the TCP echo job as its server (K5).
    fn tcp_echo(&mut self, job: &EchoJob) -> Outcome;

    /// Spawn `job.count` tasks that each return a number, joining them batch by batch
    /// (`job.batches()`); the sample counts tasks.
    fn spawn_join(&mut self, job: &CountJob) -> Outcome;

    /// [`spawn_join`](Contender::spawn_join) with the runtime's thread-local spawn (`!Send`
    /// tasks that never leave this thread: Baton's `spawn_local`, tokio's `spawn_local` in a
    /// `LocalSet`, monoio's and tokio-uring's `spawn`, which are local already).
    fn spawn_local_join(&mut self, job: &CountJob) -> Outcome;

    /// Call `block_on` on a trivially ready future `job.count` times from the runtime's owner
    /// thread; the sample counts calls.
    fn block_on_round_trip(&mut self, job: &CountJob) -> Outcome;

    /// Run `job.count` tiny closures on the runtime's blocking pool from inside the runtime,
    /// batch by batch, awaiting each; the sample counts jobs.
    fn blocking_jobs(&mut self, job: &CountJob) -> Outcome;

    /// While the runtime is being driven on this thread, a second thread polls `job.ops`
    /// sequential 4 KiB read futures to completion with [`park::block_on`]; that thread's timing
    /// is the sample.
    ///
    /// [`park::block_on`]: crate::park::block_on
    fn foreign_poll(&mut self, job: &ForeignJob<'_>) -> Outcome;

    /// Serve the HTTP/1.1 job through hyper as its server (K6).
    fn http(&mut self, job: &HttpJob) -> Outcome;
}

/// A contender slot in the report: the runtime, or why it could not be started here.
#[derive(Debug)]
pub(crate) struct Entry {
    /// The column name.
    pub(crate) name: &'static str,
    /// The runtime, or the start-up error.
    pub(crate) runtime: Result<Box<dyn Contender>, String>,
}

impl std::fmt::Debug for dyn Contender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Contender")
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}

fn entry<C: Contender + 'static>(name: &'static str, built: io::Result<C>) -> Entry {
    Entry {
        name,
        runtime: built
            .map(|c| Box::new(c) as Box<dyn Contender>)
            .map_err(|e| e.to_string()),
    }
}

/// Every contender in column order. A runtime that fails to start (io_uring disabled, memlock
/// limit) is kept as an entry with its error, so the report says which did not run and why.
pub(crate) fn roster() -> Vec<Entry> {
    vec![
        entry(RAW, raw_uring::RawUring::new()),
        entry(BATON, self::baton::Baton::new()),
        entry(BATON_COMPAT, self::baton::BatonCompat::new()),
        entry(TOKIO, tokio_ct::Tokio::current_thread()),
        entry(BATON_WORKERS, self::baton_workers::BatonWorkers::new()),
        entry(
            TOKIO_MULTI_THREAD,
            tokio_ct::Tokio::multi_thread(TOKIO_MULTI_THREAD, self::baton_workers::WORKERS),
        ),
        entry("tokio-uring", tokio_uring_rt::TokioUring::new()),
        entry("monoio", monoio_rt::Monoio::new()),
        entry(MONOIO_THREADS, monoio_threads::MonoioThreads::new()),
        entry("compio", compio_rt::Compio::new()),
    ]
}

#[cfg(test)]
mod tests {
    use super::{BATON_COMPAT, BATON_WORKERS, MONOIO_THREADS, RAW, roster};
    use crate::fixture::FileFixture;
    use crate::sample::NoSample;
    use crate::workloads::{Workload, catalog};

    /// Small but whole: 128 is a multiple of every echo row's connection count.
    const SMOKE_OPS: u64 = 128;

    /// Which cells may be `n/a`: task and pool rows (no task system in the raw loop, none
    /// polled from a foreign thread on thread-bound runtimes), HTTP where a runtime has no
    /// hyper glue (the raw loop, tokio-uring), every row but echo in the Compat column, and
    /// every row but echo and HTTP in the two-worker Baton and two-thread monoio columns. Baton,
    /// tokio and monoio (with one worker and with two) must run every HTTP row; everyone must
    /// run every echo row.
    fn may_be_unsupported(name: &str, workload: Workload) -> bool {
        match workload {
            Workload::Echo { .. } => false,
            Workload::Http { .. } => matches!(name, RAW | "tokio-uring" | "compio" | BATON_COMPAT),
            Workload::File { .. } => matches!(name, BATON_COMPAT | BATON_WORKERS | MONOIO_THREADS),
            Workload::SpawnJoin
            | Workload::SpawnLocalJoin
            | Workload::BlockOn
            | Workload::Blocking
            | Workload::ForeignPoll => true,
        }
    }

    /// Every contender that starts on this kernel completes every workload it supports with
    /// exactly the requested operation count, and says why for the ones it does not.
    #[test]
    fn every_contender_runs_every_workload_it_supports() {
        let file = FileFixture::create_sized(1024 * 1024).expect("a 1 MiB data file in temp_dir");
        for entry in roster() {
            let mut contender = match entry.runtime {
                Ok(contender) => contender,
                Err(why) => {
                    eprintln!("SKIPPED: {} cannot start here: {why}", entry.name);
                    continue;
                }
            };
            assert_eq!(contender.name(), entry.name);
            assert!(!contender.setup().is_empty());
            for workload in catalog() {
                match workload.run(contender.as_mut(), SMOKE_OPS, 7, &file) {
                    Ok(sample) => assert_eq!(
                        sample.ops,
                        SMOKE_OPS,
                        "{} / {}",
                        entry.name,
                        workload.label()
                    ),
                    Err(NoSample::Unsupported(why)) => {
                        assert!(!why.is_empty());
                        assert!(
                            may_be_unsupported(entry.name, workload),
                            "{} must support {}",
                            entry.name,
                            workload.label()
                        );
                    }
                    Err(NoSample::Failed(why)) => {
                        panic!("{} failed {}: {why}", entry.name, workload.label())
                    }
                }
            }
        }
    }
}
