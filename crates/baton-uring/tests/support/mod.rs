//! Test support: a strict tiny executor over a real driver, a counting (and optionally
//! re-entrant or panicking) waker, fd counting and temp files.

#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};
use std::time::Duration;

use baton_uring::{Driver, DriverConfig, Park};
use web_time::Instant;

/// Overall bound for one test's waits: a bug fails instead of hanging.
pub const BOUND: Duration = Duration::from_secs(20);

/// Serializes the tests of one binary (fd counts are process-wide).
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Open descriptors of this process.
pub fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd is readable")
        .count()
}

/// Whether this kernel lets us set up an io_uring; prints a loud `SKIPPED` line when not.
/// Kernel-dependent tests return early on `false`.
pub fn ring_available() -> bool {
    static PROBE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    match PROBE.get_or_init(|| {
        Driver::new(DriverConfig::new().ring_entries(4))
            .map(drop)
            .map_err(|e| e.to_string())
    }) {
        Ok(()) => true,
        Err(why) => {
            eprintln!("SKIPPED: io_uring is unavailable here: {why}");
            false
        }
    }
}

/// The prologue of a kernel-dependent test: `None` (after [`ring_available`]'s loud `SKIPPED`
/// line) when this kernel has no io_uring, else the [`serial`] guard to hold for the test.
pub fn ring_serial() -> Option<MutexGuard<'static, ()>> {
    if !ring_available() {
        return None;
    }
    Some(serial())
}

/// [`ring_serial`]'s prologue for a test that drives one driver on its own thread: returns from
/// the test (after the loud `SKIPPED` line) when this kernel has no io_uring; else holds the
/// [`serial`] guard for the rest of the test, binds `$driver` to `$build` and enters it there.
#[allow(unused_macros)] // Not every test file drives an entered driver.
macro_rules! entered_driver {
    ($driver:ident = $build:expr) => {
        let Some(_serial) = $crate::support::ring_serial() else {
            return;
        };
        let $driver = $build;
        let _entered = $driver.enter();
    };
}
#[allow(unused_imports)]
pub(crate) use entered_driver;

/// [`ring_file`] as a test's prologue: returns from the test (after the loud `SKIPPED` line)
/// when this kernel has no io_uring; else holds the [`serial`] guard for the rest of the test
/// and binds `$file` and `$driver`.
#[allow(unused_macros)] // Not every test file reads a temporary file.
macro_rules! ring_file_or_skip {
    ($file:ident, $driver:ident = $tag:expr, $contents:expr) => {
        let Some((_serial, $file, $driver)) = $crate::support::ring_file($tag, $contents) else {
            return;
        };
    };
}
#[allow(unused_imports)]
pub(crate) use ring_file_or_skip;

/// The two tests of one waker-panic check: `$propagate` runs `$check` (a
/// `fn(WakerPanics)`) under `WakerPanics::Propagate`, `$contain` under `WakerPanics::Contain`.
#[allow(unused_macros)] // Not every test file checks both policies.
macro_rules! per_waker_policy {
    ($check:ident => $propagate:ident, $contain:ident) => {
        #[test]
        fn $propagate() {
            $check(baton_uring::WakerPanics::Propagate);
        }

        #[test]
        fn $contain() {
            $check(baton_uring::WakerPanics::Contain);
        }
    };
}
#[allow(unused_imports)]
pub(crate) use per_waker_policy;

/// [`ring_serial`] with what most file tests start from: `None` (after the loud `SKIPPED` line)
/// without io_uring, else the guard, a [`TempFile`] tagged `tag` holding `contents`, and a
/// driver of four entries.
pub fn ring_file(
    tag: &str,
    contents: &[u8],
) -> Option<(MutexGuard<'static, ()>, TempFile, Driver)> {
    let serial = ring_serial()?;
    let file = TempFile::new(tag, contents);
    Some((serial, file, driver(4)))
}

/// An empty buffer of `capacity` bytes, then `contents` appended to it.
pub fn prefilled(capacity: usize, contents: &[u8]) -> Vec<u8> {
    let mut buf = Vec::with_capacity(capacity);
    buf.extend_from_slice(contents);
    buf
}

pub fn driver(entries: u32) -> Driver {
    Driver::new(DriverConfig::new().ring_entries(entries)).expect("io_uring set-up")
}

pub fn driver_with_policy(entries: u32, policy: baton_uring::WakerPanics) -> Driver {
    Driver::new(
        DriverConfig::new()
            .ring_entries(entries)
            .waker_panics(policy),
    )
    .expect("io_uring set-up")
}

pub fn driver_limited(entries: u32, max_in_flight: u32) -> Driver {
    Driver::new(
        DriverConfig::new()
            .ring_entries(entries)
            .max_in_flight(max_in_flight),
    )
    .expect("io_uring set-up")
}

/// A unique temp file path.
pub fn temp_path(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    std::env::temp_dir().join(format!(
        "baton-uring-{}-{}-{}",
        std::process::id(),
        tag,
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

/// A temp file opened read-write, removed when the guard drops.
pub struct TempFile {
    pub path: PathBuf,
    pub fd: Arc<OwnedFd>,
}

impl TempFile {
    pub fn new(tag: &str, contents: &[u8]) -> TempFile {
        let path = temp_path(tag);
        std::fs::write(&path, contents).expect("write temp file");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .expect("open temp file");
        TempFile {
            path,
            fd: Arc::new(OwnedFd::from(file)),
        }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A named pipe, removed when the guard drops. Opening it for reading blocks in the kernel
/// until a writer opens it, so [`Fifo::open_reader`] is a request that completes on its own
/// (it counts against the in-flight limit) yet stays in flight until [`Fifo::release`].
pub struct Fifo {
    pub path: PathBuf,
}

impl Fifo {
    pub fn new(tag: &str) -> Fifo {
        let path = temp_path(tag);
        let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
            .expect("temp paths hold no NUL");
        // SAFETY: `c_path` is a valid NUL-terminated string for the duration of the call.
        let rc = unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) };
        assert_eq!(rc, 0, "mkfifo: {}", std::io::Error::last_os_error());
        Fifo { path }
    }

    /// An open for reading, which the kernel holds until a writer appears. `O_CREAT` (a no-op
    /// on the existing fifo) makes io_uring run the open in a blocking worker instead of first
    /// trying it without blocking, which would succeed at once on a fifo.
    pub fn open_reader(&self) -> baton_uring::Op<std::io::Result<OwnedFd>> {
        baton_uring::ops::open(&self.path, libc::O_RDONLY | libc::O_CREAT, 0o600)
    }

    /// [`Fifo::open_reader`] polled once with `waker`: the open is in flight and holds its
    /// in-flight place until [`Fifo::release`].
    #[track_caller]
    pub fn hold_place(&self, waker: &Waker) -> HeldOpen {
        let mut open = self.open_reader();
        assert!(poll_once(&mut open, waker).is_pending());
        open
    }

    /// One attempt to open the write end (ends a reader's open still in flight, if any).
    pub fn try_release(&self) -> std::io::Result<std::fs::File> {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&self.path)
    }

    /// Opens the write end without blocking, which completes a reader's open in flight. The
    /// kernel's worker may not have reached the fifo yet (the open then fails with `ENXIO`), so
    /// this retries until [`BOUND`].
    pub fn release(&self) -> std::io::Result<std::fs::File> {
        let start = Instant::now();
        loop {
            match self.try_release() {
                Err(err) if err.raw_os_error() == Some(libc::ENXIO) && start.elapsed() < BOUND => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                other => return other,
            }
        }
    }
}

/// The FIFO `tag`, a fresh probe and its waker, and the FIFO's open polled with that waker: it
/// holds the entered driver's one in-flight place (see [`Fifo::hold_place`]).
#[track_caller]
pub fn held_place(tag: &str) -> (Fifo, Arc<Probe>, Waker, HeldOpen) {
    let fifo = Fifo::new(tag);
    let (probe, waker) = Probe::with_waker();
    let open = fifo.hold_place(&waker);
    (fifo, probe, waker, open)
}

/// A FIFO's open for reading, in flight until a writer appears.
pub type HeldOpen = baton_uring::Op<std::io::Result<OwnedFd>>;

impl Drop for Fifo {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

type Hook = Box<dyn Fn() + Send + Sync>;

/// Counts clones, wakes and drops of the wakers made from it; can run a hook or panic in each.
#[derive(Default)]
pub struct Probe {
    pub clones: AtomicUsize,
    pub wakes: AtomicUsize,
    pub drops: AtomicUsize,
    pub woken: AtomicBool,
    pub panic_on_clone: AtomicBool,
    pub panic_on_wake: AtomicBool,
    pub panic_on_drop: AtomicBool,
    pub hook: Mutex<Option<Hook>>,
}

impl Probe {
    pub fn new() -> Arc<Probe> {
        let probe = Arc::new(Probe::default());
        probe.woken.store(true, Ordering::SeqCst);
        probe
    }

    pub fn set_hook(&self, hook: impl Fn() + Send + Sync + 'static) {
        *self.hook.lock().expect("hook lock") = Some(Box::new(hook));
    }

    fn run_hook(&self) {
        let hook = self.hook.lock().expect("hook lock").take();
        if let Some(hook) = hook {
            hook();
            *self.hook.lock().expect("hook lock") = Some(hook);
        }
    }

    pub fn clones(&self) -> usize {
        self.clones.load(Ordering::SeqCst)
    }

    pub fn wakes(&self) -> usize {
        self.wakes.load(Ordering::SeqCst)
    }

    /// A fresh probe and a waker made from it.
    pub fn with_waker() -> (Arc<Probe>, Waker) {
        let probe = Probe::new();
        let waker = Probe::waker(&probe);
        (probe, waker)
    }

    /// Drops `waker`, the last waker made from `probe`, and asserts that nothing else holds
    /// `probe`: no request kept a clone.
    #[track_caller]
    pub fn assert_released(probe: &Arc<Probe>, waker: Waker) {
        drop(waker);
        assert_eq!(Arc::strong_count(probe), 1);
    }

    /// A waker owning one strong count of `probe`.
    pub fn waker(probe: &Arc<Probe>) -> Waker {
        let raw = RawWaker::new(Arc::into_raw(probe.clone()).cast(), &VTABLE);
        // SAFETY: VTABLE's functions treat the data pointer as an `Arc<Probe>` created by
        // `Arc::into_raw`, and keep its strong count balanced.
        unsafe { Waker::from_raw(raw) }
    }
}

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone_fn, wake_fn, wake_by_ref_fn, drop_fn);

fn probe_ref<'a>(data: *const ()) -> &'a Probe {
    // SAFETY: `data` came from `Arc::into_raw` and a strong count is held by the waker calling us.
    unsafe { &*data.cast::<Probe>() }
}

unsafe fn clone_fn(data: *const ()) -> RawWaker {
    let probe = probe_ref(data);
    probe.clones.fetch_add(1, Ordering::SeqCst);
    probe.run_hook();
    if probe.panic_on_clone.load(Ordering::SeqCst) {
        panic!("probe waker clone panics");
    }
    // SAFETY: the caller's waker holds a strong count, so the Arc is alive.
    unsafe { Arc::increment_strong_count(data.cast::<Probe>()) };
    RawWaker::new(data, &VTABLE)
}

unsafe fn wake_by_ref_fn(data: *const ()) {
    let probe = probe_ref(data);
    probe.wakes.fetch_add(1, Ordering::SeqCst);
    probe.woken.store(true, Ordering::SeqCst);
    probe.run_hook();
    if probe.panic_on_wake.load(Ordering::SeqCst) {
        panic!("probe waker wake panics");
    }
}

unsafe fn wake_fn(data: *const ()) {
    let result = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: same contract as wake_by_ref.
        unsafe { wake_by_ref_fn(data) }
    }));
    // SAFETY: wake consumes the waker's strong count.
    unsafe { drop_fn(data) };
    if let Err(payload) = result {
        std::panic::resume_unwind(payload);
    }
}

unsafe fn drop_fn(data: *const ()) {
    let probe = probe_ref(data);
    probe.drops.fetch_add(1, Ordering::SeqCst);
    let panic = probe.panic_on_drop.load(Ordering::SeqCst);
    // SAFETY: releases the strong count this waker owned.
    unsafe { Arc::decrement_strong_count(data.cast::<Probe>()) };
    if panic {
        panic!("probe waker drop panics");
    }
}

/// A connected socket pair: our end as a shared descriptor, the peer as a std stream.
pub fn pair() -> (Arc<OwnedFd>, UnixStream) {
    let (a, b) = UnixStream::pair().expect("socketpair");
    (Arc::new(OwnedFd::from(a)), b)
}

/// Asserts that nothing but the test holds `a` or `b` any more (their strong counts are 1).
#[track_caller]
pub fn assert_only_ours<A, B>(a: &Arc<A>, b: &Arc<B>) {
    assert_eq!((Arc::strong_count(a), Arc::strong_count(b)), (1, 1));
}

/// A receive of up to `capacity` bytes on `sock`, polled once with `waker`: in flight until the
/// peer writes.
#[track_caller]
pub fn pending_recv(
    sock: &Arc<OwnedFd>,
    capacity: usize,
    waker: &Waker,
) -> baton_uring::Op<(std::io::Result<usize>, Vec<u8>)> {
    let mut recv = baton_uring::ops::recv(sock.clone(), Vec::with_capacity(capacity));
    assert!(poll_once(&mut recv, waker).is_pending());
    recv
}

/// The end of a test whose operations are all dropped: turns `driver` until it holds no
/// slots, drops `waker`, then asserts that nothing still holds `probe` or either descriptor.
pub fn assert_all_released(
    driver: &Driver,
    waker: Waker,
    probe: &Arc<Probe>,
    (first, second): (&Arc<OwnedFd>, &Arc<OwnedFd>),
) {
    turn_until(driver, || driver.metrics().slots == 0);
    drop(waker);
    assert_eq!(Arc::strong_count(probe), 1);
    assert_only_ours(first, second);
}

/// Runs `fut` to completion on `driver` (entered here), polling only when its waker fired.
pub fn run<F: Future>(driver: &Driver, fut: F) -> F::Output {
    let probe = Probe::new();
    let out = run_with(driver, &probe, fut);
    assert_eq!(Arc::strong_count(&probe), 1, "the driver kept a waker");
    out
}

pub fn run_with<F: Future>(driver: &Driver, probe: &Arc<Probe>, fut: F) -> F::Output {
    let _entered = driver.enter();
    let waker = Probe::waker(probe);
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    let start = Instant::now();
    loop {
        if probe.woken.swap(false, Ordering::SeqCst)
            && let Poll::Ready(out) = fut.as_mut().poll(&mut cx)
        {
            return out;
        }
        assert!(
            start.elapsed() < BOUND,
            "test future did not finish in time"
        );
        let _ = driver.turn(Park::Wait(Some(
            Instant::now() + Duration::from_millis(200),
        )));
    }
}

/// Polls `fut` once with `waker`.
pub fn poll_once<F: Future + Unpin>(fut: &mut F, waker: &Waker) -> Poll<F::Output> {
    std::pin::Pin::new(fut).poll(&mut Context::from_waker(waker))
}

/// Turns until `cond` holds.
pub fn turn_until(driver: &Driver, mut cond: impl FnMut() -> bool) {
    let _entered = driver.enter();
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < BOUND, "condition did not hold in time");
        let _ = driver.turn(Park::Wait(Some(Instant::now() + Duration::from_millis(50))));
    }
}

/// Blocks the current thread on `fut` with a thread-parking waker (another executor).
pub fn block_on_thread<F: Future>(fut: F) -> F::Output {
    struct ThreadWaker(std::thread::Thread);
    impl std::task::Wake for ThreadWaker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    let start = Instant::now();
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
        assert!(
            start.elapsed() < BOUND,
            "foreign future did not finish in time"
        );
        std::thread::park_timeout(Duration::from_millis(50));
    }
}
