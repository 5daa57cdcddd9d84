//! The task state word alone (T1–T6): every transition's outcome, and the reference count
//! each one moves.

#![cfg(not(loom))]

use crate::state::{
    DetachOutcome, IdleOutcome, JoinWakerOutcome, ParkEntry, ReclaimOutcome, RefsLeft,
    ShutdownClaim, ShutdownReach, StartOutcome, State, WakeByValue, WakeOutcome,
};

#[test]
fn first_start_polls_and_consumes_the_notification() {
    let state = State::new(2);
    assert_eq!(state.start(), StartOutcome::Poll);
    assert_eq!(
        state.idle(ParkEntry::Release),
        IdleOutcome::Parked(RefsLeft::Others)
    );
    assert_eq!(state.wake(), WakeOutcome::Submit);
}

#[test]
fn wake_during_poll_requeues() {
    let state = State::new(2);
    assert_eq!(state.start(), StartOutcome::Poll);
    assert_eq!(state.wake(), WakeOutcome::DuringPoll);
    assert_eq!(state.wake(), WakeOutcome::Coalesced);
    assert_eq!(state.idle(ParkEntry::Release), IdleOutcome::Requeue);
    assert_eq!(state.start(), StartOutcome::Poll);
}

#[test]
fn wake_of_queued_task_coalesces() {
    let state = State::new(2);
    assert_eq!(state.start(), StartOutcome::Poll);
    assert_eq!(
        state.idle(ParkEntry::Release),
        IdleOutcome::Parked(RefsLeft::Others)
    );
    assert_eq!(state.wake(), WakeOutcome::Submit);
    assert_eq!(state.wake(), WakeOutcome::Coalesced);
    assert_eq!(state.start(), StartOutcome::Poll);
}

/// Rule T3: a fresh task's first entry holds `RUNNING`, so a wake before its first poll is
/// one during a poll: nobody pushes, and the poller requeues it if the poll ends pending.
#[test]
fn wake_of_fresh_task_is_left_to_its_first_poll() {
    let state = State::new(2);
    assert_eq!(state.wake(), WakeOutcome::DuringPoll);
    assert_eq!(state.start(), StartOutcome::Poll);
    assert_eq!(state.idle(ParkEntry::Release), IdleOutcome::Requeue);
    assert_eq!(
        state.start(),
        StartOutcome::Poll,
        "no longer fresh: a real start"
    );
    assert_eq!(
        state.idle(ParkEntry::Release),
        IdleOutcome::Parked(RefsLeft::Others)
    );
}

#[test]
fn abort_before_start_cancels_without_polling() {
    let state = State::new(2);
    assert_eq!(state.abort(), WakeOutcome::DuringPoll);
    assert_eq!(state.start(), StartOutcome::Cancelled);
}

/// Rule T4 with T3: an abort landing after a fresh task's first start read the word is seen when
/// that poll returns.
#[test]
fn abort_after_fresh_start_cancels_at_idle() {
    let state = State::new(2);
    assert_eq!(state.start(), StartOutcome::Poll);
    assert_eq!(state.abort(), WakeOutcome::DuringPoll);
    assert_eq!(state.idle(ParkEntry::Release), IdleOutcome::Cancel);
}

/// Rule T3: leaving the first poll clears `FRESH` whichever way it goes, so a later start is a
/// transition again and a stale entry of a completed task is recognised.
#[test]
fn first_poll_ends_freshness() {
    let parked = State::new(2);
    assert_eq!(parked.start(), StartOutcome::Poll);
    assert_eq!(
        parked.idle(ParkEntry::Release),
        IdleOutcome::Parked(RefsLeft::Others)
    );
    assert_eq!(
        parked.claim_for_shutdown(ShutdownReach::Registry),
        ShutdownClaim::Claimed,
        "a parked task is claimed through the registry"
    );
    let completed = State::new(3);
    assert_eq!(completed.start(), StartOutcome::Poll);
    let _ = completed.complete_releasing(1);
    assert_eq!(completed.start(), StartOutcome::Stale);
    assert_eq!(
        completed.claim_for_shutdown(ShutdownReach::QueueEntry),
        ShutdownClaim::Complete
    );
}

#[test]
fn abort_during_poll_cancels_at_idle() {
    let state = State::new(2);
    assert_eq!(state.start(), StartOutcome::Poll);
    assert_eq!(state.abort(), WakeOutcome::DuringPoll);
    assert_eq!(state.idle(ParkEntry::Release), IdleOutcome::Cancel);
}

#[test]
fn abort_of_idle_task_submits_it() {
    let state = State::new(2);
    assert_eq!(state.start(), StartOutcome::Poll);
    assert_eq!(
        state.idle(ParkEntry::Release),
        IdleOutcome::Parked(RefsLeft::Others)
    );
    assert_eq!(state.abort(), WakeOutcome::Submit);
    assert_eq!(state.start(), StartOutcome::Cancelled);
}

#[test]
fn wakes_and_aborts_after_completion_are_ignored() {
    let state = State::new(2);
    assert_eq!(state.start(), StartOutcome::Poll);
    let completed = state.complete(false);
    assert!(completed.join_interest);
    assert!(!completed.join_waker);
    assert_eq!(state.wake(), WakeOutcome::Complete);
    assert_eq!(state.abort(), WakeOutcome::Complete);
    assert_eq!(state.start(), StartOutcome::Stale);
    assert_eq!(
        state.start(),
        StartOutcome::Stale,
        "a completed fresh word is stale too"
    );
    assert_eq!(
        state.claim_for_shutdown(ShutdownReach::Registry),
        ShutdownClaim::Complete
    );
}

#[test]
fn join_waker_then_complete_reports_the_waker() {
    let state = State::new(2);
    assert_eq!(state.set_join_waker(), JoinWakerOutcome::Registered);
    assert_eq!(state.start(), StartOutcome::Poll);
    assert!(state.complete(false).join_waker);
}

#[test]
fn complete_then_join_waker_reads_the_output() {
    let state = State::new(2);
    assert_eq!(state.start(), StartOutcome::Poll);
    let _ = state.complete(false);
    assert_eq!(state.set_join_waker(), JoinWakerOutcome::Complete);
}

#[test]
fn reclaimed_join_waker_is_not_reported_to_the_completer() {
    let state = State::new(2);
    assert_eq!(state.set_join_waker(), JoinWakerOutcome::Registered);
    assert_eq!(state.reclaim_join_waker(), ReclaimOutcome::Reclaimed);
    assert_eq!(state.start(), StartOutcome::Poll);
    assert!(!state.complete(false).join_waker);
}

#[test]
fn reclaim_after_completion_leaves_the_slot_to_the_completer() {
    let state = State::new(2);
    assert_eq!(state.set_join_waker(), JoinWakerOutcome::Registered);
    assert_eq!(state.start(), StartOutcome::Poll);
    assert!(state.complete(false).join_waker);
    assert_eq!(state.reclaim_join_waker(), ReclaimOutcome::Complete);
}

#[test]
fn two_references_go_in_one_release() {
    let state = State::new(3);
    assert_eq!(state.ref_dec_twice(), RefsLeft::Others);
    assert_eq!(state.load().refs(), 1);
    state.ref_inc();
    assert_eq!(state.ref_dec_twice(), RefsLeft::Zero);
}

#[test]
fn detach_before_completion_leaves_output_to_completer() {
    let state = State::new(2);
    assert_eq!(state.detach(), DetachOutcome::Detached);
    assert_eq!(state.start(), StartOutcome::Poll);
    assert!(!state.complete(false).join_interest);
}

#[test]
fn detach_after_completion_owns_output() {
    let state = State::new(2);
    assert_eq!(state.start(), StartOutcome::Poll);
    let _ = state.complete(false);
    assert_eq!(state.detach(), DetachOutcome::OutputIsOurs);
}

#[test]
fn shutdown_claims_idle_task_but_not_running_one() {
    let idle = State::new(2);
    assert_eq!(idle.start(), StartOutcome::Poll);
    assert_eq!(
        idle.idle(ParkEntry::Release),
        IdleOutcome::Parked(RefsLeft::Others)
    );
    assert_eq!(
        idle.claim_for_shutdown(ShutdownReach::Registry),
        ShutdownClaim::Claimed
    );
    let _ = idle.complete(true);
    assert!(idle.load().is_leaked());
    let running = State::new(2);
    assert_eq!(running.start(), StartOutcome::Poll);
    assert_eq!(
        running.claim_for_shutdown(ShutdownReach::Registry),
        ShutdownClaim::Running
    );
    assert_eq!(running.idle(ParkEntry::Release), IdleOutcome::Cancel);
}

/// Rule T8 with T3: a fresh task is claimed through its queue entry, which holds its `RUNNING`;
/// reached through the registry it is the task in its first poll, so it is left to that poll.
#[test]
fn shutdown_claims_a_fresh_task_only_through_its_queue_entry() {
    let queued = State::new(2);
    assert_eq!(
        queued.claim_for_shutdown(ShutdownReach::QueueEntry),
        ShutdownClaim::Claimed
    );
    let _ = queued.complete(false);
    assert!(queued.load().is_complete());
    let polling = State::new(2);
    assert_eq!(polling.start(), StartOutcome::Poll);
    assert_eq!(
        polling.claim_for_shutdown(ShutdownReach::Registry),
        ShutdownClaim::Running
    );
    assert_eq!(polling.idle(ParkEntry::Release), IdleOutcome::Cancel);
}

/// Rule T1: the registry's reference (the queue entry's kept at the task's first park) on top
/// of the queue entry's and the handle's.
fn registered() -> State {
    let state = State::new(2);
    state.ref_inc();
    state
}

#[test]
fn going_idle_releases_the_queue_entry_reference() {
    let state = registered();
    assert_eq!(state.start(), StartOutcome::Poll);
    assert_eq!(
        state.idle(ParkEntry::Release),
        IdleOutcome::Parked(RefsLeft::Others)
    );
    assert_eq!(state.load().refs(), 2, "registry and handle remain");
}

/// Rule T1: a task that parks for the first time keeps its queue entry's reference, which
/// becomes the registry's; it is idle all the same, so the next wake queues it with a new one.
#[test]
fn first_park_keeps_the_queue_entry_reference_for_the_registry() {
    let state = State::new(2);
    assert_eq!(state.start(), StartOutcome::Poll);
    assert_eq!(
        state.idle(ParkEntry::Keep),
        IdleOutcome::Parked(RefsLeft::Others)
    );
    assert_eq!(
        state.load().refs(),
        2,
        "the kept entry (now the registry's) and the handle"
    );
    assert_eq!(state.wake(), WakeOutcome::Submit);
    assert_eq!(state.load().refs(), 3);
    assert_eq!(state.start(), StartOutcome::Poll);
    assert_eq!(
        state.idle(ParkEntry::Release),
        IdleOutcome::Parked(RefsLeft::Others)
    );
    assert_eq!(state.load().refs(), 2);
}

#[test]
fn requeue_keeps_the_queue_entry_reference() {
    let state = registered();
    assert_eq!(state.start(), StartOutcome::Poll);
    assert_eq!(state.wake(), WakeOutcome::DuringPoll);
    assert_eq!(state.idle(ParkEntry::Release), IdleOutcome::Requeue);
    assert_eq!(state.load().refs(), 3);
}

#[test]
fn wake_by_value_of_idle_task_hands_the_waker_reference_to_the_queue() {
    let state = registered();
    assert_eq!(state.start(), StartOutcome::Poll);
    state.ref_inc(); // the waker's clone
    assert_eq!(
        state.idle(ParkEntry::Release),
        IdleOutcome::Parked(RefsLeft::Others)
    );
    assert_eq!(state.wake_by_value(), WakeByValue::Submit);
    assert_eq!(
        state.load().refs(),
        3,
        "registry, handle and the queue entry"
    );
    assert_eq!(state.start(), StartOutcome::Poll);
}

#[test]
fn wake_by_value_that_merges_releases_the_waker_reference() {
    let state = registered();
    state.ref_inc();
    assert_eq!(
        state.wake_by_value(),
        WakeByValue::Released(RefsLeft::Others),
        "already queued"
    );
    assert_eq!(state.load().refs(), 3);
    assert_eq!(state.start(), StartOutcome::Poll);
    state.ref_inc();
    assert_eq!(
        state.wake_by_value(),
        WakeByValue::Released(RefsLeft::Others),
        "during the poll"
    );
    assert_eq!(
        state.idle(ParkEntry::Release),
        IdleOutcome::Requeue,
        "the merged wake still requeues"
    );
}

#[test]
fn wake_by_reference_of_idle_task_takes_a_reference_for_the_queue() {
    let state = registered();
    assert_eq!(state.start(), StartOutcome::Poll);
    assert_eq!(
        state.idle(ParkEntry::Release),
        IdleOutcome::Parked(RefsLeft::Others)
    );
    assert_eq!(state.wake(), WakeOutcome::Submit);
    assert_eq!(state.load().refs(), 3);
    assert_eq!(state.wake(), WakeOutcome::Coalesced);
    assert_eq!(state.abort(), WakeOutcome::Coalesced);
    assert_eq!(state.load().refs(), 3, "merged wakes take no reference");
}

#[test]
fn last_waker_of_a_finished_task_frees_it() {
    let state = State::new(1);
    assert_eq!(state.start(), StartOutcome::Poll);
    let _ = state.complete(false);
    state.ref_inc(); // a waker outlives the queue entry
    assert_eq!(state.ref_dec(), RefsLeft::Others);
    assert_eq!(state.wake_by_value(), WakeByValue::Released(RefsLeft::Zero));
    assert!(
        state.load().is_complete(),
        "a finished task is not re-notified"
    );
}

#[test]
fn releasing_references_reports_only_the_last() {
    let state = State::new(2);
    state.ref_inc();
    assert_eq!(state.ref_dec(), RefsLeft::Others);
    assert_eq!(state.ref_dec(), RefsLeft::Others);
    assert_eq!(state.ref_dec(), RefsLeft::Zero);
    // The sole holder frees without writing the word: nobody can reach it any more.
    assert_eq!(state.load().refs(), 1);
}
