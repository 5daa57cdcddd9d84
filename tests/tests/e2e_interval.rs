//! End to end: `baton::time::interval` keeps its schedule, handles late ticks as its
//! `MissedTickBehavior` says, refuses a zero period, and loses no tick to a dropped `tick()`.
//! Every assertion is on the deadlines the ticks return or on "not before its deadline", never
//! on how quickly a tick came.

use std::io;
use std::time::Duration;

use baton::time::{Instant, Interval, MissedTickBehavior, interval, interval_at, timeout};

fn rt() -> baton::Runtime {
    baton::Runtime::new().expect("a runtime with default settings builds")
}

/// A period long enough that a tick after the first is never due during a test.
const NEVER: Duration = Duration::from_secs(600);

#[test]
fn a_zero_period_is_invalid_input_like_std_and_no_panic() {
    // Outside any runtime, too: the check is made before anything needs one.
    let err = interval(Duration::ZERO).expect_err("a zero period is refused");
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("period"), "{err}");
    let err = interval_at(Instant::now(), Duration::ZERO).expect_err("refused at a start too");
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    let std_err = std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|socket| socket.set_read_timeout(Some(Duration::ZERO)))
        .expect_err("std refuses a zero timeout");
    assert_eq!(
        err.kind(),
        std_err.kind(),
        "the same kind as std's zero duration"
    );
}

#[test]
fn ticks_return_their_schedule_and_never_come_early() {
    let period = Duration::from_millis(3);
    rt().block_on(async {
        let start = Instant::now() + Duration::from_millis(2);
        let mut every = interval_at(start, period).expect("a valid period");
        for n in 0..5u32 {
            let due = every.tick().await;
            assert_eq!(due, start + period * n, "tick {n} is on the schedule");
            assert!(Instant::now() >= due, "tick {n} came before it was due");
        }
        assert_eq!(every.next_tick(), start + period * 5);
        assert_eq!(every.period(), period);
        assert_eq!(every.missed_tick_behavior(), MissedTickBehavior::Burst);
    });
}

/// Blocks the thread (and so the tick loop) until the interval's next tick is `periods`
/// periods late, and returns the instant after that.
fn fall_behind(every: &Interval, periods: u32) -> Instant {
    let until = every.next_tick() + every.period() * periods;
    while Instant::now() < until {
        std::thread::sleep(until.saturating_duration_since(Instant::now()));
    }
    Instant::now()
}

#[test]
fn late_ticks_burst_by_default() {
    let period = Duration::from_millis(10);
    rt().block_on(async {
        let mut every = interval(period).expect("a valid period");
        let start = every.tick().await;
        fall_behind(&every, 3);
        // The three missed ticks and the late one come back in order, on the old schedule.
        for n in 1..=4u32 {
            assert_eq!(every.tick().await, start + period * n);
        }
        assert_eq!(every.next_tick(), start + period * 5);
    });
}

/// What [`one_late_tick`] saw: the schedule's start, when the thread caught up, when the late
/// tick was taken, and the next tick the behavior chose.
struct LateTick {
    start: Instant,
    behind: Instant,
    taken: Instant,
    next: Instant,
}

/// Ticks once on time, falls three periods behind, takes the late tick (which must be the one
/// due on the old schedule) and reports what `behavior` made of the schedule.
async fn one_late_tick(every: &mut Interval, behavior: MissedTickBehavior) -> LateTick {
    every.set_missed_tick_behavior(behavior);
    let start = every.tick().await;
    let behind = fall_behind(every, 3);
    assert_eq!(
        every.tick().await,
        start + every.period(),
        "the late tick itself is delivered"
    );
    LateTick {
        start,
        behind,
        taken: Instant::now(),
        next: every.next_tick(),
    }
}

#[test]
fn late_ticks_delay_restarts_the_schedule_from_the_late_tick() {
    let period = Duration::from_millis(10);
    rt().block_on(async {
        let mut every = interval(period).expect("a valid period");
        let late = one_late_tick(&mut every, MissedTickBehavior::Delay).await;
        let next = late.next;
        assert!(
            next >= late.behind + period && next <= late.taken + period,
            "{next:?}"
        );
        assert_eq!(every.tick().await, next);
        assert!(Instant::now() >= next);
    });
}

#[test]
fn late_ticks_skip_keeps_the_phase() {
    let period = Duration::from_millis(10);
    rt().block_on(async {
        let mut every = interval(period).expect("a valid period");
        let late = one_late_tick(&mut every, MissedTickBehavior::Skip).await;
        let next = late.next;
        assert_eq!(
            (next - late.start).as_nanos() % period.as_nanos(),
            0,
            "on the old phase"
        );
        assert!(
            next > late.behind && next - period <= late.taken,
            "the first tick still ahead"
        );
        assert_eq!(every.tick().await, next);
    });
}

#[test]
fn a_tick_dropped_before_it_came_is_not_lost() {
    rt().block_on(async {
        let mut every = interval(NEVER).expect("a valid period");
        let start = every.tick().await;
        let cut = timeout(Duration::from_millis(1), every.tick()).await;
        assert!(cut.is_err(), "the second tick is ten minutes away");
        assert_eq!(
            every.next_tick(),
            start + NEVER,
            "the dropped tick took nothing"
        );
        let soon = Instant::now() + Duration::from_millis(2);
        every.reset_at(soon);
        assert_eq!(every.tick().await, soon);
        assert_eq!(
            every.next_tick(),
            soon + NEVER,
            "the schedule follows the reset"
        );
    });
}

#[test]
fn reset_moves_the_next_tick_a_period_out_and_reset_immediately_makes_it_due() {
    rt().block_on(async {
        let mut every = interval(NEVER).expect("a valid period");
        every.tick().await;
        let before = Instant::now();
        every.reset();
        assert!(every.next_tick() >= before + NEVER);
        every.reset_immediately();
        let due = every.tick().await;
        assert!(due >= before && due <= Instant::now());
    });
}

#[test]
fn an_interval_is_send_sync_and_unpin_and_ticks_on_another_thread() {
    fn check<T: Send + Sync + Unpin>() {}
    check::<Interval>();
    let rt = rt();
    let mut every = rt
        .block_on(async { interval(Duration::from_millis(1)) })
        .expect("a valid period");
    let handle = rt.handle();
    let ticks = std::thread::spawn(move || {
        handle.block_on(async move {
            let first = every.tick().await;
            let second = every.tick().await;
            second - first
        })
    });
    assert_eq!(
        ticks.join().expect("the ticking thread"),
        Duration::from_millis(1)
    );
}
