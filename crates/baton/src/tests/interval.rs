//! The schedule arithmetic of `MissedTickBehavior::next_tick`, on made-up instants: exact, and
//! free of timing.

use std::time::Duration;

use crate::time::{Instant, MissedTickBehavior};

const PERIOD: Duration = Duration::from_millis(10);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn a_tick_taken_less_than_a_period_late_keeps_the_schedule_for_every_behavior() {
    let due = Instant::now();
    for behavior in [
        MissedTickBehavior::Burst,
        MissedTickBehavior::Delay,
        MissedTickBehavior::Skip,
    ] {
        for late in [ms(0), ms(3), ms(9)] {
            assert_eq!(
                behavior.next_tick(due, due + late, PERIOD),
                due + PERIOD,
                "{behavior:?}, {late:?} late"
            );
        }
    }
}

#[test]
fn a_tick_a_period_or_more_late_follows_its_behavior() {
    let due = Instant::now();
    let now = due + ms(25);
    assert_eq!(
        MissedTickBehavior::Burst.next_tick(due, now, PERIOD),
        due + ms(10)
    );
    assert_eq!(
        MissedTickBehavior::Delay.next_tick(due, now, PERIOD),
        now + ms(10)
    );
    assert_eq!(
        MissedTickBehavior::Skip.next_tick(due, now, PERIOD),
        due + ms(30)
    );
    // Exactly on a later tick of the schedule: that one is taken, so the next is after it.
    assert_eq!(
        MissedTickBehavior::Skip.next_tick(due, due + ms(30), PERIOD),
        due + ms(40)
    );
}

#[test]
fn a_period_too_long_for_an_instant_clamps_instead_of_overflowing() {
    let due = Instant::now();
    for behavior in [
        MissedTickBehavior::Burst,
        MissedTickBehavior::Delay,
        MissedTickBehavior::Skip,
    ] {
        let next = behavior.next_tick(due, due + ms(1), Duration::MAX);
        assert!(
            next > due + Duration::from_secs(86_400 * 365),
            "{behavior:?}"
        );
    }
}
