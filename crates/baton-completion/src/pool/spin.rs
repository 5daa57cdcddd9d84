//! How a lane thread that found its queue empty watches it before it sleeps (pool rule P7),
//! and the CPU count that decides whether watching pays.

use crate::sync::{AtomicUsize, Ordering};

/// How long the watch lasts: about the time a runtime takes to submit its next job, so a
/// stream of short jobs is handed over without a futex wake per job.
#[cfg(not(loom))]
const SPIN: std::time::Duration = std::time::Duration::from_micros(20);

/// Watches `queue_len` (the lane's queue-length hint), without the pool lock, until a job
/// shows up or [`SPIN`] passed. The caller re-checks the queue under the lock either way, so
/// a stale read costs time, never a job; a closing pool notifies, and the caller sees the
/// close there. With one CPU it returns at once (see [`worth_watching`]).
#[cfg(not(loom))]
pub(super) fn watch(queue_len: &AtomicUsize) {
    if !worth_watching() {
        return;
    }
    let start = web_time::Instant::now();
    loop {
        for _ in 0..64 {
            if queue_len.load(Ordering::Relaxed) > 0 {
                return;
            }
            std::hint::spin_loop();
        }
        if start.elapsed() >= SPIN {
            return;
        }
    }
}

/// Whether watching can pay: with a single CPU the watching thread only keeps the thread that
/// would queue the next job off the CPU until its time slice ends (on one CPU, 100 000 tiny
/// jobs ran 6× slower with the watch than the pool's own two-CPU rate).
#[cfg(not(loom))]
fn worth_watching() -> bool {
    cpus() > 1
}

/// The CPUs this process may run on, read once per process (1 if unknown).
pub(super) fn cpus() -> usize {
    // `std` on purpose: a process-wide fact, read once; no protocol depends on it.
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
}

/// Under loom one look stands for the watch: the protocol (the spinner is counted, and the
/// caller re-checks under the lock) is what the models check, not how long it lasts.
#[cfg(loom)]
pub(super) fn watch(queue_len: &AtomicUsize) {
    let _ = queue_len.load(Ordering::Relaxed);
}
