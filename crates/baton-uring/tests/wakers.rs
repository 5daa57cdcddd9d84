//! Waker hygiene with a re-entrant counting waker.

mod support;

use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Poll, Waker};

use baton_uring::{Park, WakerPanics, ops};
use support::{
    Probe, assert_only_ours, entered_driver, pair, pending_recv, per_waker_policy, poll_once,
    turn_until,
};

/// Registers a nop, polls it once and drops it: touches the driver's internal state, so it
/// panics ("driver state is never borrowed while user code runs") if called under a borrow.
fn reenter_driver() {
    let mut nop = ops::nop();
    let _ = poll_once(&mut nop, Waker::noop());
    drop(nop);
}

#[test]
fn equivalent_wakers_are_never_recloned() {
    entered_driver!(driver = support::driver(2));
    let (sock, mut peer) = pair();
    let (probe, waker) = Probe::with_waker();
    let mut recv = ops::recv(sock.clone(), Vec::with_capacity(4));
    for _ in 0..3 {
        assert!(poll_once(&mut recv, &waker).is_pending());
    }
    assert_eq!(
        probe.clones(),
        1,
        "one clone installs the waker; equivalent polls clone nothing"
    );
    let (other, other_waker) = Probe::with_waker();
    assert!(poll_once(&mut recv, &other_waker).is_pending());
    assert_eq!(other.clones(), 1, "a different waker is installed");
    assert_eq!(
        probe.drops.load(Ordering::SeqCst),
        1,
        "the replaced waker was dropped"
    );
    peer.write_all(b"x").expect("write");
    turn_until(&driver, || other.wakes() == 1);
    let clones = other.clones();
    assert!(matches!(poll_once(&mut recv, &other_waker), Poll::Ready(_)));
    assert_eq!(other.clones(), clones, "consuming a result clones nothing");
    drop((waker, other_waker));
    assert_only_ours(&probe, &other);
    assert_eq!(Arc::strong_count(&sock), 1);
}

#[test]
fn no_clone_wake_or_drop_runs_under_the_internal_borrow() {
    entered_driver!(driver = support::driver(4));
    let (sock, mut peer) = pair();
    let probe = Probe::new();
    probe.set_hook(reenter_driver);
    let waker = Probe::waker(&probe);
    let mut recv = pending_recv(&sock, 4, &waker); // clone re-enters
    peer.write_all(b"x").expect("write");
    turn_until(&driver, || probe.wakes() == 1); // wake re-enters
    assert!(matches!(poll_once(&mut recv, &waker), Poll::Ready(_))); // stored waker dropped
    let other = pending_recv(&sock, 4, &waker);
    drop(other); // detach drops the stored waker outside the borrow
    turn_until(&driver, || driver.metrics().slots == 0);
    assert!(probe.drops.load(Ordering::SeqCst) >= 2);
    Probe::assert_released(&probe, waker);
    assert_eq!(Arc::strong_count(&sock), 1);
}

#[test]
fn a_clone_that_registers_and_cancels_other_work_stays_consistent() {
    entered_driver!(driver = support::driver(4));
    let (sock, mut peer) = pair();
    let (side, _side_peer) = pair();
    let probe = Probe::new();
    let side_for_hook = side.clone();
    probe.set_hook(move || {
        let mut other = ops::recv(side_for_hook.clone(), Vec::with_capacity(4));
        let _ = poll_once(&mut other, Waker::noop());
        drop(other); // cancels work registered from inside the clone
    });
    let waker = Probe::waker(&probe);
    let mut recv = pending_recv(&sock, 4, &waker);
    peer.write_all(b"ok").expect("write");
    turn_until(&driver, || probe.wakes() >= 1);
    let Poll::Ready((n, buf)) = poll_once(&mut recv, &waker) else {
        panic!("complete")
    };
    assert_eq!(&buf[..n.expect("recv")], b"ok");
    turn_until(&driver, || driver.metrics().slots == 0);
    drop(waker);
    drop(probe.hook.lock().expect("hook").take());
    assert_eq!(Arc::strong_count(&probe), 1);
    assert_only_ours(&sock, &side);
}

#[test]
fn a_clone_panic_keeps_the_operation_cancellable() {
    entered_driver!(driver = support::driver(2));
    let (sock, _peer) = pair();
    let bad = Probe::new();
    bad.panic_on_clone.store(true, Ordering::SeqCst);
    let bad_waker = Probe::waker(&bad);
    // A clone panic at the first poll happens before registration: nothing is submitted.
    let mut unregistered = ops::recv(sock.clone(), Vec::with_capacity(4));
    let polled = catch_unwind(AssertUnwindSafe(|| {
        poll_once(&mut unregistered, &bad_waker)
    }));
    assert!(polled.is_err(), "the clone panicked");
    assert!(unregistered.key().is_none());
    assert_eq!(driver.metrics().slots, 0);
    drop(unregistered);
    // A clone panic while refreshing the waker of a registered op keeps its identity.
    let (good, good_waker) = Probe::with_waker();
    let mut recv = pending_recv(&sock, 4, &good_waker);
    let polled = catch_unwind(AssertUnwindSafe(|| poll_once(&mut recv, &bad_waker)));
    assert!(polled.is_err(), "the clone panicked");
    assert!(recv.key().is_some(), "the operation kept its identity");
    let _ = driver.turn(Park::Poll);
    assert_eq!(driver.metrics().in_flight, 1);
    drop(recv);
    turn_until(&driver, || driver.metrics().slots == 0);
    assert_eq!(
        driver.metrics().cancelled,
        1,
        "the dropped op was cancelled"
    );
    drop((bad_waker, good_waker));
    assert_only_ours(&bad, &good);
    assert_eq!(Arc::strong_count(&sock), 1);
}

/// Turns `driver` until `good` was woken once, catching any panic a turn raises; says whether
/// one did.
fn turn_until_woken_catching_panics(driver: &baton_uring::Driver, good: &Probe) -> bool {
    let mut panicked = false;
    turn_until(driver, || {
        if good.wakes() == 1 {
            return true;
        }
        panicked |= catch_unwind(AssertUnwindSafe(|| driver.turn(Park::Poll))).is_err();
        false
    });
    panicked
}

per_waker_policy!(
    wake_panic_during_a_turn =>
    a_wake_panic_fails_the_turn_only_after_cleanup_when_asked_to_propagate,
    a_wake_panic_during_a_turn_is_contained_after_cleanup_and_counted
);

/// A waker panicking when its operation completes: every other wake of the turn still runs,
/// the operation retires, and the panic reaches the runner only under `Propagate`.
fn wake_panic_during_a_turn(policy: WakerPanics) {
    entered_driver!(driver = support::driver_with_policy(4, policy));
    let bad = Probe::new();
    bad.panic_on_wake.store(true, Ordering::SeqCst);
    let good = Probe::new();
    let (bad_waker, good_waker) = (Probe::waker(&bad), Probe::waker(&good));
    let mut first = ops::nop();
    let mut second = ops::nop();
    assert!(poll_once(&mut first, &bad_waker).is_pending());
    assert!(poll_once(&mut second, &good_waker).is_pending());
    let panicked = turn_until_woken_catching_panics(&driver, &good);
    assert_eq!(
        panicked,
        policy == WakerPanics::Propagate,
        "the wake panic reached the runner only when asked to"
    );
    assert_eq!(bad.wakes(), 1);
    let m = driver.metrics();
    assert_eq!((m.in_flight, m.queued), (0, 0), "cleanup finished: {m:?}");
    assert_eq!(m.waker_panics, 1, "{m:?}");
    let outcome = poll_once(&mut first, &bad_waker);
    assert!(matches!(outcome, Poll::Ready(Ok(()))));
    let outcome = poll_once(&mut second, &good_waker);
    assert!(matches!(outcome, Poll::Ready(Ok(()))));
    drop((bad_waker, good_waker));
    assert_only_ours(&bad, &good);
}

per_waker_policy!(
    drop_panic_during_a_turn =>
    a_drop_panic_during_a_turn_fails_it_only_after_cleanup_when_asked_to_propagate,
    a_drop_panic_during_a_turn_is_contained_after_cleanup_and_counted
);

/// A stored waker panicking when a forward makes the turn drop it: the forwarded result is
/// still delivered, and the panic reaches the runner only under `Propagate`.
fn drop_panic_during_a_turn(policy: WakerPanics) {
    entered_driver!(driver = support::driver_with_policy(4, policy));
    let (sock, mut peer) = pair();
    let bad = Probe::new();
    let good = Probe::new();
    let bad_waker = Probe::waker(&bad);
    let mut recv = pending_recv(&sock, 4, &bad_waker);
    bad.panic_on_drop.store(true, Ordering::SeqCst);
    // Forwarding from another thread makes the turn drop the stored local waker.
    let good_clone = good.clone();
    let mut recv = std::thread::spawn(move || {
        let waker = Probe::waker(&good_clone);
        assert!(poll_once(&mut recv, &waker).is_pending());
        recv
    })
    .join()
    .expect("poller");
    peer.write_all(b"fw").expect("write");
    let panicked = turn_until_woken_catching_panics(&driver, &good);
    assert_eq!(
        panicked,
        policy == WakerPanics::Propagate,
        "the drop panic reached the runner only when asked to"
    );
    assert_eq!(driver.metrics().waker_panics, 1);
    let good_waker = Probe::waker(&good);
    let Poll::Ready((n, buf)) = poll_once(&mut recv, &good_waker) else {
        panic!("the forwarded result was delivered despite the panic")
    };
    assert_eq!(&buf[..n.expect("recv")], b"fw");
    bad.panic_on_drop.store(false, Ordering::SeqCst);
    drop((bad_waker, good_waker));
    assert_only_ours(&bad, &good);
    assert_eq!(Arc::strong_count(&sock), 1);
}

#[test]
fn a_registration_refused_for_an_expired_deadline_or_a_closed_driver_clones_no_waker() {
    entered_driver!(driver = support::driver(4));
    let (probe, waker) = Probe::with_waker();
    let past = web_time::Instant::now() - std::time::Duration::from_millis(1);
    let mut expired = ops::nop().with_deadline(past);
    let Poll::Ready(out) = poll_once(&mut expired, &waker) else {
        panic!("an expired deadline is refused at once")
    };
    assert!(baton_uring::Error::is_timeout(&out.expect_err("timeout")));
    assert_eq!(
        probe.clones(),
        0,
        "the expired registration cloned the waker"
    );
    driver.close();
    let mut refused = ops::nop();
    let Poll::Ready(out) = poll_once(&mut refused, &waker) else {
        panic!("a closed driver refuses at once")
    };
    assert!(baton_uring::Error::is_closed(&out.expect_err("closed")));
    assert_eq!(
        probe.clones(),
        0,
        "the refused registration cloned the waker"
    );
    Probe::assert_released(&probe, waker);
}
