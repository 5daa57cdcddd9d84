//! Unit and property tests of queue control (crate rules C1–C3 and C7).

#![cfg(not(loom))]

use super::support::assert_one_winner;
use crate::sync::thread;
use crate::{
    CancelBeforeStart, ClaimForRun, QueueCell, QueueHost, QueueState, WithdrawBeforeStart,
    hosted_queue_control, queue_control,
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

#[test]
fn withdraw_then_claim_then_cancel() {
    let (cancel, start) = queue_control();
    assert_eq!(
        start.withdraw_before_start(),
        WithdrawBeforeStart::Withdrawn
    );
    assert_eq!(start.claim_for_run(), ClaimForRun::CompleteCancelled);
    assert_eq!(cancel.cancel_before_start(), AlreadyCancelled);
    assert_eq!(
        start.withdraw_before_start(),
        WithdrawBeforeStart::AlreadyWithdrawn
    );
    assert_eq!(cancel.state(), QueueState::Cancelled);
    assert!(
        cancel.was_withdrawn(),
        "the cell remembers the executor withdrew it"
    );
}

#[test]
fn cancel_then_withdraw_stays_cancelled() {
    let (cancel, start) = queue_control();
    assert_eq!(cancel.cancel_before_start(), CancelledQueued);
    assert_eq!(
        start.withdraw_before_start(),
        WithdrawBeforeStart::AlreadyCancelled
    );
    assert_eq!(start.state(), QueueState::Cancelled);
}

#[test]
fn claim_then_withdraw_keeps_running() {
    let (cancel, start) = queue_control();
    assert_eq!(start.claim_for_run(), ClaimForRun::Run);
    assert_eq!(
        start.withdraw_before_start(),
        WithdrawBeforeStart::AlreadyRunning
    );
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

/// One step of the property test's operation sequences.
#[derive(Clone, Copy, Debug)]
enum Op {
    Cancel,
    Claim,
    Withdraw,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![Just(Op::Cancel), Just(Op::Claim), Just(Op::Withdraw)]
}

/// The property test's model of a cell: which operation moved it out of *queued*.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Model {
    Queued,
    Cancelled,
    Running,
    Withdrawn,
}

proptest! {
    /// Any sequence of cancels, claims and withdrawals matches the model of rules C1–C3 and
    /// C7: three observable states, a withdrawal observed as a cancel that remembers it.
    #[test]
    fn prop_queue_control_matches_model(ops in proptest::collection::vec(op(), 0..16)) {
        let (cancel, start) = queue_control();
        let mut model = Model::Queued;
        for op in ops {
            let (next, outcome) = match op {
                Op::Cancel => (Model::Cancelled, format!("{:?}", cancel.cancel_before_start())),
                Op::Claim => (Model::Running, format!("{:?}", start.claim_for_run())),
                Op::Withdraw => {
                    (Model::Withdrawn, format!("{:?}", start.withdraw_before_start()))
                }
            };
            let expected = match (op, model) {
                (Op::Cancel, Model::Queued) => "CancelledQueued",
                (Op::Claim, Model::Queued | Model::Running) => "Run",
                (Op::Claim, _) => "CompleteCancelled",
                (Op::Withdraw, Model::Queued) => "Withdrawn",
                (Op::Withdraw, Model::Withdrawn) => "AlreadyWithdrawn",
                (_, Model::Cancelled | Model::Withdrawn) => "AlreadyCancelled",
                (_, Model::Running) => "AlreadyRunning",
            };
            prop_assert_eq!(outcome, expected);
            if model == Model::Queued { model = next; }
            let observed = match model {
                Model::Queued => QueueState::Queued,
                Model::Cancelled | Model::Withdrawn => QueueState::Cancelled,
                Model::Running => QueueState::Running,
            };
            prop_assert_eq!(cancel.state(), observed);
            prop_assert_eq!(cancel.was_withdrawn(), model == Model::Withdrawn);
        }
    }
}
