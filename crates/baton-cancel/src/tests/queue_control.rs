//! Unit and property tests of queue control (crate rules C1–C3).

#![cfg(not(loom))]

use super::support::assert_one_winner;
use crate::sync::thread;
use crate::{
    CancelBeforeStart, ClaimForRun, QueueCell, QueueHost, QueueState, hosted_queue_control,
    queue_control,
};
use CancelBeforeStart::{AlreadyCancelled, AlreadyRunning, CancelledQueued};
use proptest::prelude::*;

#[test]
fn cancel_then_claim() {
    let (cancel, start) = queue_control();
    assert_eq!(cancel.cancel_before_start(), CancelledQueued);
    assert_eq!(start.claim_for_run(), ClaimForRun::CompleteCancelled);
    assert_eq!(start.state(), QueueState::Cancelled);
}

#[test]
fn claim_then_cancel() {
    let (cancel, start) = queue_control();
    assert_eq!(start.claim_for_run(), ClaimForRun::Run);
    assert_eq!(cancel.cancel_before_start(), AlreadyRunning);
    assert_eq!(cancel.state(), QueueState::Running);
}

struct Host(QueueCell);

impl QueueHost for Host {
    fn queue_cell(&self) -> &QueueCell {
        &self.0
    }
}

#[test]
fn hosted_sides_share_the_host_cell_and_see_an_earlier_cancel() {
    let host = std::sync::Arc::new(Host(QueueCell::new()));
    assert_eq!(host.0.cancel_before_start(), CancelledQueued);
    let (cancel, start) = hosted_queue_control(host.clone());
    assert_eq!(cancel.state(), QueueState::Cancelled);
    assert_eq!(start.claim_for_run(), ClaimForRun::CompleteCancelled);
    assert_eq!(cancel.cancel_before_start(), AlreadyCancelled);

    let host = std::sync::Arc::new(Host(QueueCell::default()));
    let (cancel, start) = hosted_queue_control(host.clone());
    assert_eq!(start.claim_for_run(), ClaimForRun::Run);
    assert_eq!(host.0.cancel_before_start(), AlreadyRunning);
    assert_eq!(cancel.state(), QueueState::Running);
}

#[test]
fn cancel_twice_reports_already_cancelled() {
    let (cancel, _start) = queue_control();
    assert_eq!(cancel.cancel_before_start(), CancelledQueued);
    assert_eq!(cancel.cancel_before_start(), AlreadyCancelled);
}

#[test]
fn claim_twice_is_run_both_times() {
    let (_cancel, start) = queue_control();
    assert_eq!(start.claim_for_run(), ClaimForRun::Run);
    assert_eq!(start.claim_for_run(), ClaimForRun::Run);
}

#[test]
fn fresh_cell_is_queued() {
    let (cancel, start) = queue_control();
    assert_eq!(cancel.state(), QueueState::Queued);
    assert_eq!(start.state(), QueueState::Queued);
    assert!(format!("{cancel:?}").contains("Queued"));
}

#[test]
fn racing_threads_agree_on_one_winner() {
    for _ in 0..200 {
        let (cancel, start) = queue_control();
        let claimer = thread::spawn(move || start.claim_for_run());
        let cancelled = cancel.cancel_before_start();
        let claimed = claimer.join().expect("claim thread does not panic");
        assert_one_winner(cancelled, claimed);
    }
}

proptest! {
    /// Any sequence of cancels and claims matches the three-state model of rules C1–C3.
    #[test]
    fn prop_queue_control_matches_model(ops in proptest::collection::vec(any::<bool>(), 0..16)) {
        let (cancel, start) = queue_control();
        let mut model = QueueState::Queued;
        for is_cancel in ops {
            if is_cancel {
                let expected = match model {
                    QueueState::Queued => CancelBeforeStart::CancelledQueued,
                    QueueState::Cancelled => CancelBeforeStart::AlreadyCancelled,
                    QueueState::Running => CancelBeforeStart::AlreadyRunning,
                };
                prop_assert_eq!(cancel.cancel_before_start(), expected);
                if model == QueueState::Queued { model = QueueState::Cancelled; }
            } else {
                let expected = match model {
                    QueueState::Cancelled => ClaimForRun::CompleteCancelled,
                    _ => ClaimForRun::Run,
                };
                prop_assert_eq!(start.claim_for_run(), expected);
                if model == QueueState::Queued { model = QueueState::Running; }
            }
            prop_assert_eq!(cancel.state(), model);
        }
    }
}
