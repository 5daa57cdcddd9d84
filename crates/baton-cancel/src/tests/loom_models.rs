//! The loom models of queue control (crate rules C1–C3 and C7).

use super::support::assert_one_winner;
use crate::sync::thread;
use crate::{
    CancelBeforeStart, ClaimForRun, QueueCell, QueueHost, QueueState, WithdrawBeforeStart,
    hosted_queue_control, queue_control,
};

/// Proves rules C1–C3 under every interleaving: when a cancel and a claim race on a queued
/// cell, exactly one wins, and both sides agree which (cancel won ⇔ claim sees
/// `CompleteCancelled`; claim won ⇔ cancel sees `AlreadyRunning`).
#[test]
fn loom_cancel_vs_claim() {
    loom::model(|| {
        let (cancel, start) = queue_control();
        let claimer = thread::spawn(move || start.claim_for_run());
        let cancelled = cancel.cancel_before_start();
        let claimed = claimer.join().expect("claim thread does not panic");
        assert_one_winner(cancelled, claimed);
        assert_ne!(cancel.state(), QueueState::Queued);
    });
}

/// A host that embeds its cell, as a job's shared state does.
struct Host(QueueCell);

impl QueueHost for Host {
    fn queue_cell(&self) -> &QueueCell {
        &self.0
    }
}

/// Proves rules C1–C3 for a hosted cell: the handed-out sides race exactly like an owned
/// cell's, and a third party cancelling through the host itself is one of the two possible
/// cancels, never a second winner.
#[test]
fn loom_hosted_cancel_vs_claim_vs_host_cancel() {
    loom::model(|| {
        let host = std::sync::Arc::new(Host(QueueCell::new()));
        let (cancel, start) = hosted_queue_control(host.clone());
        let claimer = thread::spawn(move || start.claim_for_run());
        let by_host = host.0.cancel_before_start();
        let cancelled = cancel.cancel_before_start();
        let claimed = claimer.join().expect("claim thread does not panic");
        let cancel_won = by_host == CancelBeforeStart::CancelledQueued
            || cancelled == CancelBeforeStart::CancelledQueued;
        assert!(
            by_host != CancelBeforeStart::CancelledQueued
                || cancelled != CancelBeforeStart::CancelledQueued,
            "one cancel wins at most"
        );
        assert_one_winner(
            if cancel_won {
                CancelBeforeStart::CancelledQueued
            } else {
                cancelled
            },
            claimed,
        );
        assert_ne!(host.0.state(), QueueState::Queued);
    });
}

/// Proves rules C1–C3 and C7 under every interleaving: when a cancel, a claim and an
/// executor's withdrawal race on a queued cell, exactly one wins, every loser names the winner
/// (the claim sees `CompleteCancelled` unless it won; the cancel and the withdrawal see
/// `AlreadyRunning` or `AlreadyCancelled`), and the cell ends in the winner's state, saying it
/// was withdrawn exactly when the withdrawal won.
#[test]
fn loom_cancel_vs_claim_vs_withdraw() {
    loom::model(|| {
        let host = std::sync::Arc::new(Host(QueueCell::new()));
        let (cancel, start) = hosted_queue_control(host.clone());
        let claimer = thread::spawn(move || start.claim_for_run());
        // A second start token on the same cell: the executor side that withdraws, as a pool's
        // shutdown does with the work its queue still holds.
        let (_, executor) = hosted_queue_control(host.clone());
        let withdrawer = thread::spawn(move || executor.withdraw_before_start());
        let cancelled = cancel.cancel_before_start();
        let claimed = claimer.join().expect("claim thread does not panic");
        let withdrawn = withdrawer.join().expect("withdraw thread does not panic");
        let winner = match (cancelled, claimed, withdrawn) {
            (
                CancelBeforeStart::CancelledQueued,
                ClaimForRun::CompleteCancelled,
                WithdrawBeforeStart::AlreadyCancelled,
            ) => (QueueState::Cancelled, false),
            (
                CancelBeforeStart::AlreadyRunning,
                ClaimForRun::Run,
                WithdrawBeforeStart::AlreadyRunning,
            ) => (QueueState::Running, false),
            (
                CancelBeforeStart::AlreadyCancelled,
                ClaimForRun::CompleteCancelled,
                WithdrawBeforeStart::Withdrawn,
            ) => (QueueState::Cancelled, true),
            other => panic!("the sides disagree on the winner: {other:?}"),
        };
        assert_eq!((host.0.state(), host.0.was_withdrawn()), winner);
    });
}
