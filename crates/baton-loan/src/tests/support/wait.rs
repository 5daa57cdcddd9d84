//! Waiting from outside the runtime without ever hanging a test: every wait fails the test once
//! the hang guard passes. Timing bounds only guard against hangs; they never decide a test.

use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use crate::Loan;
use crate::tests::support::TestJoin;

/// How long any wait may take before the test fails as hung.
pub(crate) const HANG_GUARD: Duration = Duration::from_secs(30);

/// Runs `f` on its own thread and fails the test if it does not finish within the hang guard.
pub(crate) fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _sent = tx.send(f());
    });
    rx.recv_timeout(HANG_GUARD)
        .expect("finished without hanging (or its thread panicked)")
}

/// [`within`] with a clone of `loan`: runs `f` on it on another thread, bounded.
pub(crate) fn within_on<T: Send + 'static>(
    loan: &Arc<Loan>,
    f: impl FnOnce(&Loan) -> T + Send + 'static,
) -> T {
    let loan = Arc::clone(loan);
    within(move || f(&loan))
}

/// Waits (from outside the runtime) until `join` yields its output.
pub(crate) fn wait_join<T>(join: &TestJoin<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(value) = join.try_take() {
            return value;
        }
        assert!(started.elapsed() < HANG_GUARD, "task never finished");
        thread::sleep(Duration::from_millis(1));
    }
}

/// Waits until `cond` holds, failing the test past the hang guard.
pub(crate) fn wait_until(mut cond: impl FnMut() -> bool) {
    let started = Instant::now();
    while !cond() {
        assert!(started.elapsed() < HANG_GUARD, "condition never held");
        thread::sleep(Duration::from_millis(1));
    }
}
