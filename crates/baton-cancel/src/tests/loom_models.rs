//! The loom model of queue control (crate rules C1–C3).

use super::support::assert_one_winner;
use crate::sync::thread;
use crate::{QueueState, queue_control};

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
