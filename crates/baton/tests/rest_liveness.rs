//! The idle worker's rest in the loan slot (loan rule L7) never strands work announced from
//! other threads: foreign operations and late blocking outputs are driven while other threads
//! keep borrowing the worker.
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// How long a wait may take before the test fails it as stranded or hung: a liveness bound,
/// never a speed claim (a stranded sleep waits until the spinner stops, which it does only
/// after this).
const HANG_GUARD: Duration = Duration::from_secs(60);

/// A foreign-thread operation (a sleep polled by a `block_on` that fell back because another
/// thread holds the worker) must be driven while another thread runs ready `block_on`s back to
/// back.
#[test]
fn foreign_sleep_is_not_starved_by_back_to_back_block_ons() {
    let rt = baton::Runtime::new().expect("runtime");
    let stop = Arc::new(AtomicBool::new(false));
    let spinner = {
        let handle = rt.handle();
        let stop = Arc::clone(&stop);
        thread::spawn(move || {
            let mut n = 0_u64;
            while !stop.load(Ordering::Relaxed) {
                handle.block_on(async {});
                n += 1;
            }
            n
        })
    };
    thread::sleep(Duration::from_millis(20));
    let (tx, rx) = mpsc::channel();
    let handle = rt.handle();
    let sleeper = thread::spawn(move || {
        for _ in 0..20 {
            let start = Instant::now();
            handle.block_on(baton::time::sleep(Duration::from_millis(1)));
            if tx.send(start.elapsed()).is_err() {
                return;
            }
        }
    });
    let mut worst = Duration::ZERO;
    let mut failure = None;
    for i in 0..20 {
        match rx.recv_timeout(HANG_GUARD) {
            Ok(d) => worst = worst.max(d),
            Err(_) => {
                failure = Some(format!("sleep #{i} (1 ms) not done after {HANG_GUARD:?}"));
                break;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let spins = spinner.join().expect("spinner");
    if failure.is_none() {
        sleeper.join().expect("sleeper");
    }
    eprintln!("spinner ran {spins} block_ons; worst sleep {worst:?}");
    assert!(failure.is_none(), "{failure:?}");
    assert!(worst < HANG_GUARD, "worst {worst:?}");
}

struct Noisy(std::sync::mpsc::Sender<Instant>);
impl Drop for Noisy {
    fn drop(&mut self) {
        let _ = self.0.send(Instant::now());
    }
}

/// A blocking job's output, whose handle was dropped after the job started, reaches a resting
/// worker's inbox and is dropped there (by the worker), not kept forever.
#[test]
fn stale_blocking_output_reaching_a_resting_worker() {
    let rt = baton::Runtime::new().expect("runtime");
    let (started_tx, started_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<Instant>();
    let (dropped_tx, dropped_rx) = mpsc::channel();
    let handle = rt.handle();
    rt.block_on(async move {
        let job = handle.spawn_blocking(move || {
            started_tx.send(()).expect("started");
            thread::sleep(Duration::from_millis(20));
            let noisy = Noisy(dropped_tx);
            done_tx.send(Instant::now()).expect("done");
            noisy
        });
        started_rx.recv().expect("the job started");
        drop(job);
    });
    let done = done_rx.recv_timeout(HANG_GUARD).expect("job finished");
    let dropped = dropped_rx.recv_timeout(HANG_GUARD).expect("output dropped");
    assert!(
        dropped >= done,
        "the output is dropped after the job returned it"
    );
}
