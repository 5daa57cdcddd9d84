//! 4 KiB random reads of a page-cached 64 MiB file at queue depth 1, 32 and 128: the Baton
//! driver (futures polled by a minimal lane executor) against a raw `io-uring` loop, side by
//! side in one process. Run with `cargo run --release -p baton-uring --example random_reads`.
//! Prints the best ops/s of alternating runs and the driver/raw ratio per depth (the machine is
//! shared, so best-of filters out interference). A benchmark, not a test.

use std::future::Future;
use std::os::fd::{AsRawFd, OwnedFd};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use baton_uring::{Driver, DriverConfig, Op, Park, ops};
use io_uring::{IoUring, opcode, types};

const FILE_SIZE: u64 = 64 << 20;
const BLOCK: usize = 4096;
const RUN: Duration = Duration::from_secs(1);
const ROUNDS: usize = 3;

/// CPU time consumed by this thread (user + system). The machine is shared, so throughput is
/// reported per CPU-second of the benchmarking thread as well as per wall-clock second.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the live local `ts`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "CLOCK_THREAD_CPUTIME_ID is available on Linux");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Throughput of one run.
#[derive(Clone, Copy, Default)]
struct Rate {
    wall: f64,
    cpu: f64,
}

impl Rate {
    fn measure(done: u64, wall: Instant, cpu: Duration) -> Rate {
        Rate {
            wall: done as f64 / wall.elapsed().as_secs_f64(),
            cpu: done as f64 / (thread_cpu() - cpu).as_secs_f64(),
        }
    }

    fn best(self, other: Rate) -> Rate {
        Rate {
            wall: self.wall.max(other.wall),
            cpu: self.cpu.max(other.cpu),
        }
    }
}

struct Rng(u64);

impl Rng {
    fn offset(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % (FILE_SIZE / BLOCK as u64)) * BLOCK as u64
    }
}

struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Relaxed);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::Relaxed);
    }
}

type Read = Op<(std::io::Result<usize>, Vec<u8>)>;

struct Lane {
    flag: Arc<Flag>,
    waker: Waker,
    op: Read,
}

fn driver_run(fd: &Arc<OwnedFd>, depth: usize) -> Rate {
    let driver = Driver::new(DriverConfig::new().ring_entries(256)).expect("io_uring set-up");
    let _entered = driver.enter();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut lanes: Vec<Lane> = (0..depth)
        .map(|_| {
            let flag = Arc::new(Flag(AtomicBool::new(true)));
            Lane {
                waker: Waker::from(flag.clone()),
                flag,
                // `read_at` fills the buffer from its beginning: one block of capacity.
                op: ops::read_at(fd.clone(), Vec::with_capacity(BLOCK), rng.offset()),
            }
        })
        .collect();
    let mut done = 0u64;
    let cpu = thread_cpu();
    let start = Instant::now();
    while start.elapsed() < RUN {
        for lane in &mut lanes {
            if !lane.flag.0.swap(false, Ordering::Relaxed) {
                continue;
            }
            let mut cx = Context::from_waker(&lane.waker);
            if let Poll::Ready((n, mut buf)) = Pin::new(&mut lane.op).poll(&mut cx) {
                assert_eq!(n.expect("read"), BLOCK);
                done += 1;
                buf.clear();
                lane.op = ops::read_at(fd.clone(), buf, rng.offset());
                let polled = Pin::new(&mut lane.op).poll(&mut cx);
                assert!(polled.is_pending(), "a read completes only after a turn");
            }
        }
        let _ = driver.turn(Park::Wait(None));
    }
    let rate = Rate::measure(done, start, cpu);
    drop(lanes);
    rate
}

fn raw_run(fd: &Arc<OwnedFd>, depth: usize) -> Rate {
    let mut ring: IoUring = IoUring::builder()
        .setup_coop_taskrun()
        .setup_taskrun_flag()
        .build(256)
        .expect("io_uring set-up");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut bufs: Vec<Vec<u8>> = (0..depth).map(|_| vec![0; BLOCK]).collect();
    let raw = types::Fd(fd.as_raw_fd());
    let push = |ring: &mut IoUring, bufs: &mut [Vec<u8>], lane: usize, offset: u64| {
        let entry = opcode::Read::new(raw, bufs[lane].as_mut_ptr(), BLOCK as u32)
            .offset(offset)
            .build()
            .user_data(lane as u64);
        // SAFETY: each lane's buffer lives in `bufs` until the loop below has reaped every
        // completion, and a lane has at most one read in flight.
        unsafe { ring.submission().push(&entry) }.expect("SQ has room for every lane");
    };
    for lane in 0..depth {
        push(&mut ring, &mut bufs, lane, rng.offset());
    }
    let mut done = 0u64;
    let mut in_flight = depth;
    let cpu = thread_cpu();
    let start = Instant::now();
    let mut finished: Vec<usize> = Vec::with_capacity(depth);
    while in_flight > 0 {
        ring.submit_and_wait(1).expect("submit");
        finished.clear();
        for cqe in ring.completion() {
            assert_eq!(cqe.result(), BLOCK as i32);
            finished.push(cqe.user_data() as usize);
        }
        let stop = start.elapsed() >= RUN;
        for &lane in &finished {
            done += 1;
            if stop {
                in_flight -= 1;
            } else {
                push(&mut ring, &mut bufs, lane, rng.offset());
            }
        }
    }
    Rate::measure(done, start, cpu)
}

fn main() {
    let path = std::env::temp_dir().join(format!("baton-random-reads-{}", std::process::id()));
    let chunk: Vec<u8> = (0..(1 << 20)).map(|i| (i % 251) as u8).collect();
    {
        use std::io::Write;
        let mut file = std::fs::File::create(&path).expect("create the test file");
        for _ in 0..(FILE_SIZE >> 20) {
            file.write_all(&chunk).expect("fill the test file");
        }
    }
    let _ = std::fs::read(&path).expect("warm the page cache");
    let fd = Arc::new(OwnedFd::from(std::fs::File::open(&path).expect("open")));
    if let Ok(which) = std::env::var("RANDOM_READS_PROFILE") {
        // One run at depth 32 for a profiler (valgrind --tool=callgrind), e.g.
        // RANDOM_READS_PROFILE=driver valgrind --tool=callgrind target/release/examples/random_reads
        let rate = if which == "raw" {
            raw_run(&fd, 32)
        } else {
            driver_run(&fd, 32)
        };
        println!("{which}: {:.0} ops/s", rate.wall);
        let _ = std::fs::remove_file(&path);
        return;
    }
    println!(
        "4 KiB random reads, 64 MiB page-cached file, best of {ROUNDS} alternating {}s runs",
        RUN.as_secs()
    );
    println!(
        "{:>5} {:>12} {:>12} {:>6} | {:>14} {:>14} {:>6}",
        "depth", "driver ops/s", "raw ops/s", "ratio", "driver ops/cpu", "raw ops/cpu", "ratio"
    );
    for depth in [1usize, 32, 128] {
        let (mut raw, mut driver) = (Rate::default(), Rate::default());
        for _ in 0..ROUNDS {
            raw = raw.best(raw_run(&fd, depth));
            driver = driver.best(driver_run(&fd, depth));
        }
        println!(
            "{depth:>5} {:>12.0} {:>12.0} {:>6.3} | {:>14.0} {:>14.0} {:>6.3}",
            driver.wall,
            raw.wall,
            driver.wall / raw.wall,
            driver.cpu,
            raw.cpu,
            driver.cpu / raw.cpu
        );
    }
    let _ = std::fs::remove_file(&path);
}
