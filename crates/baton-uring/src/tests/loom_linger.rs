//! Loom models of the linger (forward rule F8) against unparks from other threads: the
//! shipped token and mailbox, through the crate's `sync` shim. The driver side is the sequence
//! a turn runs at an idle point (take the token; if nothing was pending, mark the idle point and
//! linger; block in the ring if the linger expired), with the ring's blocking wait replaced by
//! what ends it: an eventfd write, which only an unpark that found the token clear makes.

use crate::linger::{Budget, Linger, TokenWas};
use crate::mailbox::Mailbox;
use crate::sync::{Arc, AtomicBool, Ordering};

/// How the driver's side of one idle point ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Idle {
    /// The token was pending before the idle point: taken, no linger.
    Taken,
    /// The linger saw an unpark: the token is pending, no block.
    Answered,
    /// The linger saw a completion in the ring first: the token is clear again, no block.
    Ready,
    /// The linger expired: the driver blocks in the ring.
    Blocked,
}

fn idle_point(shared: &Mailbox, budget: Budget) -> Idle {
    idle_point_watching(shared, budget, || false)
}

/// As [`idle_point`], with `ready` standing for the ring's completion queue the linger watches.
fn idle_point_watching(shared: &Mailbox, budget: Budget, ready: impl FnMut() -> bool) -> Idle {
    if shared.take_notified() {
        return Idle::Taken;
    }
    shared.reach_idle_point();
    match shared.linger(budget, ready) {
        Linger::Answered => Idle::Answered,
        Linger::Ready => Idle::Ready,
        Linger::Expired => Idle::Blocked,
    }
}

/// Proves F8's no-lost-wake-up rule: whether one unpark lands before the idle point, while the
/// driver lingers, as the linger's budget runs out, or after it, a driver that goes on to block
/// has an eventfd write to end the block (the unpark found the token clear), and the unpark is
/// never lost: its token is taken before the idle point or pending after it. Run with a budget
/// of no yield and of one, since loom runs the other threads at every yield.
#[test]
fn loom_linger_expiry_races_an_unpark() {
    for steps in [0, 1] {
        linger_expiry_races_an_unpark(Budget::steps(steps));
    }
}

fn linger_expiry_races_an_unpark(budget: Budget) {
    loom::model(move || {
        let shared = Mailbox::new(1, None);
        let remote = Arc::clone(&shared);
        let unparker = loom::thread::spawn(move || remote.unpark_noting());
        let idle = idle_point(&shared, budget);
        let unparked = unparker.join().expect("unparking thread");
        if idle == Idle::Blocked {
            assert_eq!(
                unparked,
                TokenWas::Clear,
                "lost wake-up: the driver blocked after its linger, and the unpark wrote no eventfd"
            );
        }
        let pending = shared.take_notified();
        assert_eq!(
            pending,
            idle != Idle::Taken,
            "the unpark must be taken exactly once ({idle:?}, {unparked:?})"
        );
    });
}

/// Proves F8 with two unparkers (a foreign message and a root wake, say) racing one idle point:
/// an unpark that found the driver lingering (and so wrote no eventfd) is always seen by that
/// linger, and a driver that blocks has an unpark that wrote the eventfd and left the token for
/// the turn after the block.
#[test]
fn loom_two_unparks_race_a_linger() {
    loom::model(|| {
        let shared = Mailbox::new(1, None);
        let unparkers: Vec<_> = (0..2)
            .map(|_| {
                let remote = Arc::clone(&shared);
                loom::thread::spawn(move || remote.unpark_noting())
            })
            .collect();
        let idle = idle_point(&shared, Budget::steps(0));
        let unparked: Vec<TokenWas> = unparkers
            .into_iter()
            .map(|t| t.join().expect("unparking thread"))
            .collect();
        if idle == Idle::Blocked {
            assert!(
                !unparked.contains(&TokenWas::Lingering),
                "lost wake-up: an unpark found the linger, which expired without seeing it"
            );
            assert!(
                unparked.contains(&TokenWas::Clear),
                "lost wake-up: the driver blocked and no unpark wrote the eventfd ({unparked:?})"
            );
            assert!(
                shared.take_notified(),
                "the unparks that ended the block left no token for the turn after it"
            );
        }
    });
}

/// Proves F8 when a completion in the ring ends the linger (a busy driver lingers for its own
/// I/O, not only for replies to forward): whether the unpark lands before the idle point, while
/// the driver lingers, just as the completion ends the linger, or after it, the unpark is never
/// lost. One that found the driver lingering (and so wrote no eventfd) leaves the token pending
/// for the driver's next idle point; any other either was taken at this one or wrote the
/// eventfd that ends a later block.
#[test]
fn loom_a_linger_ended_by_a_completion_races_an_unpark() {
    loom::model(|| {
        let shared = Mailbox::new(1, None);
        let completed = Arc::new(AtomicBool::new(false));
        let remote = Arc::clone(&shared);
        let unparker = loom::thread::spawn(move || remote.unpark_noting());
        let ring = Arc::clone(&completed);
        let kernel = loom::thread::spawn(move || ring.store(true, Ordering::Release));
        let idle = idle_point_watching(&shared, Budget::steps(1), || {
            completed.load(Ordering::Acquire)
        });
        let unparked = unparker.join().expect("unparking thread");
        kernel.join().expect("completing thread");
        let pending = shared.take_notified();
        if unparked == TokenWas::Lingering {
            assert!(
                pending,
                "lost wake-up: an unpark found the linger, which ended without leaving its token ({idle:?})"
            );
        }
        assert!(
            idle == Idle::Taken || pending || unparked == TokenWas::Clear,
            "lost wake-up: the unpark was neither taken, nor pending, nor an eventfd write ({idle:?}, {unparked:?})"
        );
    });
}
