//! The loom model of queue control (crate rules C1–C3).

use super::support::assert_one_winner;
use crate::sync::thread;
use crate::{
    CancelBeforeStart, QueueCell, QueueHost, QueueState, hosted_queue_control, queue_control,
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
