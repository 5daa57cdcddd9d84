//! [`Builder`]: a runtime's settings, with documented defaults.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use baton_completion::{BlockingPool, InterruptibleThreads, IoExecutor, RuntimeId};
use baton_loan::{DEFAULT_DRAIN_TURNS, Loan, LoanConfig};
use baton_uring::{DriverConfig, SetupError, Worker, WorkerConfig, WorkerSetupError};

use crate::error::Error;
use crate::handle::Handle;
use crate::net::Resolver;
use crate::runtime::Runtime;
use crate::runtime_worker::{RuntimeWorker, allowed_cpus, pin_to};
use crate::shared::Shared;
use crate::worker_adapter::{WakeWorker, WorkerAdapter};

/// Builds a [`Runtime`].
///
/// Defaults (what [`Runtime::new`] uses):
///
/// | setting | default | why |
/// | --- | --- | --- |
/// | `ring_entries` | 256 | the driver's default: room for a deep queue of 4 KiB I/O without a large locked-memory footprint; more requests queue in userspace, never fail |
/// | `max_in_flight` | the ring's completion queue size (2 × `ring_entries`) | bounds only requests that complete on their own (file I/O, syncs), so their completion bursts fit the completion queue; receives, sends, accepts and connects wait on a peer and are never held back, so idle connections cannot stall other work |
/// | `blocking_threads` | 64, started on demand | blocking jobs are mostly waiting (DNS, `unlink`, slow disks); idle threads leave after `blocking_keep_alive`. While the jobs run shorter than a thread takes to wake (about 50 µs), no more threads than CPUs are woken for them (pool rule P7) |
/// | `blocking_keep_alive` | 10 s | |
/// | `quarantine_threads` | 4, started on demand | a separate lane, so runaway uninterruptible jobs cannot starve the others |
/// | `blocking_queue_capacity` | 4096 per lane | a full queue rejects new jobs instead of growing without bound |
/// | `tasks_per_turn` | 61 | task polls between two looks at I/O, timers and the inbox |
/// | `drain_turns` | 16 | turns `block_on` may run after its root completed |
/// | `thread_name` | `"baton"` | worker 0's background thread; the prefix of the other workers' threads (`baton-worker-1`, ...) and the pool's |
/// | `workers` | 1 | one worker (one ring, one task queue, one core) is today's thread-per-core unit; add workers for more cores |
/// | `pin_workers` | off | the kernel places threads; pinning pays off on a machine the runtime has to itself |
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let rt = baton::Builder::new().ring_entries(256).blocking_threads(4).build()?;
/// assert_eq!(rt.block_on(async { 1 + 1 }), 2);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    ring_entries: u32,
    max_in_flight: Option<u32>,
    blocking_threads: usize,
    blocking_keep_alive: Duration,
    quarantine_threads: usize,
    blocking_queue_capacity: usize,
    tasks_per_turn: usize,
    drain_turns: usize,
    thread_name: String,
    workers: usize,
    pin_workers: bool,
    executor: Option<Arc<dyn IoExecutor>>,
    resolver: Resolver,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    /// The defaults listed in the type's documentation.
    pub fn new() -> Builder {
        Builder {
            ring_entries: 256,
            max_in_flight: None,
            blocking_threads: 64,
            blocking_keep_alive: Duration::from_secs(10),
            quarantine_threads: 4,
            blocking_queue_capacity: 4096,
            tasks_per_turn: 61,
            drain_turns: DEFAULT_DRAIN_TURNS,
            thread_name: "baton".to_owned(),
            workers: 1,
            pin_workers: false,
            executor: None,
            resolver: Resolver::default(),
        }
    }

    /// Submission-queue entries of the ring (1..=32768; the kernel rounds up to a power of
    /// two). Zero is refused by [`build`](Builder::build).
    pub fn ring_entries(mut self, entries: u32) -> Builder {
        self.ring_entries = entries;
        self
    }

    /// How many requests that complete on their own (file reads and writes, syncs, opens) the
    /// kernel may own at once; more wait in a userspace queue and go out as earlier ones
    /// complete. Socket receives, sends, accepts and connects wait on a peer and are never
    /// held back by this limit, however many connections sit idle.
    pub fn max_in_flight(mut self, limit: u32) -> Builder {
        self.max_in_flight = Some(limit);
        self
    }

    /// The most threads running interruptible blocking jobs (started on demand).
    pub fn blocking_threads(mut self, threads: usize) -> Builder {
        self.blocking_threads = threads;
        self
    }

    /// How long an idle blocking thread waits for work before it exits.
    pub fn blocking_keep_alive(mut self, keep_alive: Duration) -> Builder {
        self.blocking_keep_alive = keep_alive;
        self
    }

    /// The most threads running quarantined jobs (started on demand).
    pub fn quarantine_threads(mut self, threads: usize) -> Builder {
        self.quarantine_threads = threads;
        self
    }

    /// Accepted-but-not-started blocking jobs each lane holds before rejecting new ones.
    pub fn blocking_queue_capacity(mut self, capacity: usize) -> Builder {
        self.blocking_queue_capacity = capacity;
        self
    }

    /// Task polls per worker turn before I/O, timers and the inbox get another look.
    pub fn tasks_per_turn(mut self, polls: usize) -> Builder {
        self.tasks_per_turn = polls;
        self
    }

    /// Turns `block_on` may run after its root completed (only while work is runnable).
    pub fn drain_turns(mut self, turns: usize) -> Builder {
        self.drain_turns = turns;
        self
    }

    /// The prefix of the runtime's thread names.
    pub fn thread_name(mut self, name: impl Into<String>) -> Builder {
        self.thread_name = name.into();
        self
    }

    /// How many workers the runtime has (at least 1; zero is refused by
    /// [`build`](Builder::build) with `InvalidInput`).
    ///
    /// Each worker is a thread with its own ring, request slab, timers, task queues and
    /// completion inbox (the thread-per-core model). Worker 0 is the one
    /// [`Runtime::block_on`] borrows, exactly as with one worker; the others run on threads of
    /// their own for the runtime's life. [`ring_entries`](Builder::ring_entries) and
    /// [`max_in_flight`](Builder::max_in_flight) are per worker; the blocking pool and its
    /// limits are shared by all. A task never moves between workers: an outside spawn
    /// ([`Handle::spawn`](crate::Handle::spawn)) goes to the worker with the fewest live tasks,
    /// [`baton::spawn`](crate::spawn) inside a task stays on the task's worker, and
    /// [`Handle::spawn_on`](crate::Handle::spawn_on) picks one. Files, sockets and timers
    /// submit to the ring of the worker they were made on, and may still be used from any
    /// task or thread.
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// let rt = baton::Builder::new().workers(2).build()?;
    /// assert_eq!(rt.handle().worker_count(), 2);
    /// let err = baton::Builder::new().workers(0).build().expect_err("zero workers");
    /// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    /// # Ok(())
    /// # }
    /// ```
    pub fn workers(mut self, workers: usize) -> Builder {
        self.workers = workers;
        self
    }

    /// Pins each worker's own thread (worker 0's background thread and workers 1..n) to one
    /// CPU of those this process may use, in order, wrapping around when there are more
    /// workers than CPUs. A `block_on` caller borrowing worker 0 is never pinned. A thread the
    /// kernel refuses to pin runs unpinned and says so on stderr;
    /// [`WorkerMetrics::cpu`](crate::WorkerMetrics::cpu) shows where each one is.
    pub fn pin_workers(mut self, pin: bool) -> Builder {
        self.pin_workers = pin;
        self
    }

    /// Runs blocking jobs on `executor` instead of a pool of the runtime's own. A shared
    /// executor is detached from, not shut down, when the runtime shuts down.
    pub fn blocking_executor(mut self, executor: Arc<dyn IoExecutor>) -> Builder {
        self.executor = Some(executor);
        self
    }

    /// Resolves host names with `resolve` instead of the system's `getaddrinfo(3)`: `net`'s
    /// `connect` and [`lookup_host`](crate::net::lookup_host) call it, on the blocking pool,
    /// with a host name that is not an IP literal and the port, and try the addresses it
    /// returns in order. For tests, service discovery, or a name table of your own.
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// use std::net::SocketAddr;
    /// let rt = baton::Builder::new()
    ///     .resolver(|host, port| match host {
    ///         "db.internal" => Ok(vec![SocketAddr::from(([127, 0, 0, 1], port))]),
    ///         _ => Err(std::io::Error::new(std::io::ErrorKind::NotFound, "unknown host")),
    ///     })
    ///     .build()?;
    /// let addrs: Vec<_> = rt.block_on(baton::net::lookup_host("db.internal:5432"))?.collect();
    /// assert_eq!(addrs, [SocketAddr::from(([127, 0, 0, 1], 5432))]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn resolver<F>(mut self, resolve: F) -> Builder
    where
        F: Fn(&str, u16) -> io::Result<Vec<SocketAddr>> + Send + Sync + 'static,
    {
        self.resolver = Resolver::custom(Arc::new(resolve));
        self
    }

    /// Sets up the ring, the worker, the blocking pool and the background thread.
    ///
    /// # Errors
    ///
    /// An `io::Error` whose inner error is [`Error::Setup`] naming the cause: a setting out of
    /// range (`InvalidInput`, e.g. zero `ring_entries`), io_uring disabled or out of locked
    /// memory, or a thread the OS refused to start.
    pub fn build(self) -> io::Result<Runtime> {
        if self.workers == 0 {
            return Err(setup(
                io::ErrorKind::InvalidInput,
                "workers(0): a runtime needs at least one worker (the default is 1)",
            ));
        }
        let cpus = if self.pin_workers {
            let cpus = allowed_cpus().map_err(|err| {
                setup(
                    io::ErrorKind::Other,
                    format!("pin_workers: this process's CPU set cannot be read ({err})"),
                )
            })?;
            Some(cpus).filter(|cpus| !cpus.is_empty())
        } else {
            None
        };
        let mut driver = DriverConfig::new().ring_entries(self.ring_entries);
        if let Some(limit) = self.max_in_flight {
            driver = driver.max_in_flight(limit);
        }
        let config = WorkerConfig::new()
            .driver(driver)
            .tasks_per_turn(self.tasks_per_turn);
        let (executor, owns_executor) = match self.executor {
            Some(executor) => (executor, false),
            None => {
                let pool = BlockingPool::builder()
                    .interruptible_threads(InterruptibleThreads::Elastic {
                        max: self.blocking_threads,
                        keep_alive: self.blocking_keep_alive,
                    })
                    .quarantine_threads(self.quarantine_threads)
                    .quarantine_keep_alive(self.blocking_keep_alive)
                    .queue_capacity(self.blocking_queue_capacity)
                    .thread_name(format!("{}-pool", self.thread_name))
                    .build()
                    .map_err(|err| setup(io::ErrorKind::InvalidInput, err))?;
                (Arc::new(pool) as Arc<dyn IoExecutor>, true)
            }
        };
        let mut workers = Vec::with_capacity(self.workers);
        let mut shared_workers: Vec<RuntimeWorker> = Vec::with_capacity(self.workers);
        for index in 0..self.workers {
            let made = make_worker(config, &executor, index);
            let (worker, shared_worker) = match made {
                Ok(made) => made,
                Err(err) => {
                    for shared_worker in &shared_workers {
                        shared_worker.lease().detach();
                    }
                    return Err(err);
                }
            };
            workers.push(worker);
            shared_workers.push(shared_worker);
        }
        let shared = Arc::new(Shared::new(
            shared_workers,
            executor,
            owns_executor,
            self.resolver,
        ));
        for (index, worker) in workers.into_iter().enumerate() {
            let loan = LoanConfig {
                thread_name: if index == 0 {
                    self.thread_name.clone()
                } else {
                    format!("{}-worker-{index}", self.thread_name)
                },
                drain_turns: self.drain_turns,
                on_background_start: cpus
                    .as_ref()
                    .map(|cpus| pin_hook(&shared, index, cpus[index % cpus.len()])),
            };
            if let Err(err) = start_loan(&shared, index, worker, loan) {
                abandon(&shared);
                return Err(err);
            }
        }
        Ok(Runtime::from_handle(Handle { shared, worker: 0 }))
    }
}

/// Sets up worker `index`: its own runtime id (workers rule Q5), ring and scheduler, and its
/// lease on the blocking executor.
fn make_worker(
    config: WorkerConfig,
    executor: &Arc<dyn IoExecutor>,
    index: usize,
) -> io::Result<(Worker, RuntimeWorker)> {
    let runtime_id = RuntimeId::allocate().map_err(|err| setup(io::ErrorKind::Other, err))?;
    let worker = Worker::new(config, runtime_id).map_err(worker_error)?;
    let lease = executor
        .attach_runtime(runtime_id)
        .map_err(|err| setup(io::ErrorKind::Other, err))?;
    let shared_worker = RuntimeWorker::new(index, worker.handle(), lease);
    Ok((worker, shared_worker))
}

/// Hands worker `index` to a loan of its own, which starts the thread that runs it.
fn start_loan(
    shared: &Arc<Shared>,
    index: usize,
    worker: Worker,
    config: LoanConfig,
) -> io::Result<()> {
    let handle = Handle {
        shared: Arc::clone(shared),
        worker: index,
    };
    let worker_handle = worker.handle();
    let adapter = WorkerAdapter::new(worker, handle);
    let loan = Loan::with_config(
        Box::new(adapter),
        Arc::new(WakeWorker(worker_handle)),
        config,
    )
    .map_err(|err| setup(io::ErrorKind::Other, err))?;
    shared.workers()[index]
        .set_loan(loan)
        .expect("each worker's loan is set exactly once, here");
    Ok(())
}

/// A build that failed after some loans started: they are shut down (which breaks their
/// handle cycles and joins their threads), and an owned pool with them.
fn abandon(shared: &Shared) {
    let _first = shared.begin_shutdown();
    for worker in shared.workers() {
        if let Some(loan) = worker.try_loan() {
            let _closed = loan.shutdown();
        }
    }
    let _stopped = shared.stop_executor();
}

/// Pins worker `index`'s own thread to `cpu` when that thread starts.
fn pin_hook(shared: &Arc<Shared>, index: usize, cpu: usize) -> Arc<dyn Fn() + Send + Sync> {
    let shared = Arc::downgrade(shared);
    Arc::new(move || match pin_to(cpu) {
        Ok(()) => {
            if let Some(shared) = shared.upgrade() {
                shared.workers()[index].note_pinned(cpu);
            }
        }
        Err(err) => eprintln!("baton: worker {index} could not be pinned to CPU {cpu} ({err})"),
    })
}

fn setup(kind: io::ErrorKind, err: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        kind,
        Error::Setup {
            reason: err.to_string(),
        },
    )
}

fn worker_error(err: WorkerSetupError) -> io::Error {
    let kind = match &err {
        WorkerSetupError::Ring(
            SetupError::ZeroEntries | SetupError::TooManyEntries { .. } | SetupError::ZeroInFlight,
        )
        | WorkerSetupError::ZeroTasksPerTurn
        | WorkerSetupError::ZeroInboxPerTurn => io::ErrorKind::InvalidInput,
        WorkerSetupError::Ring(SetupError::Memlock { .. }) => io::ErrorKind::OutOfMemory,
        WorkerSetupError::Ring(SetupError::Disabled { .. }) => io::ErrorKind::PermissionDenied,
        _ => io::ErrorKind::Other,
    };
    setup(kind, err)
}
