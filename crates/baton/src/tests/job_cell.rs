//! Unit tests of the job cell (job-cell rules J1–J6): each state transition and what a handle
//! that got no value resolves to. Included by `blocking/job_cell.rs` as its `tests` module, so
//! it reaches the cell's private items while living outside the production file.

use super::{BlockingCancel, JobCell, NoValue};
use crate::error::BlockingError;
use baton_cancel::{ClaimForRun, WithdrawBeforeStart};

#[test]
fn cancel_then_claim() {
    let cell = JobCell::<()>::new();
    let (_cancel, start) = cell.control();
    assert_eq!(cell.cancel(), BlockingCancel::CancelledBeforeStart);
    assert_eq!(cell.cancel(), BlockingCancel::AlreadyCancelled);
    assert_eq!(start.claim_for_run(), ClaimForRun::CompleteCancelled);
    assert!(cell.is_finished());
}

#[test]
fn claim_then_cancel_then_finish() {
    let cell = JobCell::new();
    let (cancel, start) = cell.control();
    assert_eq!(start.claim_for_run(), ClaimForRun::Run);
    assert_eq!(cell.cancel(), BlockingCancel::AlreadyStarted);
    assert_eq!(
        cancel.cancel_before_start(),
        baton_cancel::CancelBeforeStart::AlreadyRunning
    );
    assert!(!cell.is_finished());
    cell.put_output(7_u8);
    drop(cell.finish_on_drop());
    assert_eq!(cell.cancel(), BlockingCancel::AlreadyFinished);
    assert!(cell.is_finished());
    assert_eq!(cell.take_output(), Some(7));
    assert_eq!(cell.take_output(), None, "taken once");
}

#[test]
fn withdraw_then_claim_then_cancel_reports_closed() {
    let cell = JobCell::<()>::new();
    let (_cancel, start) = cell.control();
    assert!(!cell.is_finished());
    assert_eq!(
        start.withdraw_before_start(),
        WithdrawBeforeStart::Withdrawn
    );
    assert!(cell.is_finished(), "a withdrawn job never starts");
    assert_eq!(start.claim_for_run(), ClaimForRun::CompleteCancelled);
    assert_eq!(cell.cancel(), BlockingCancel::Closed);
    assert_eq!(cell.cancel(), BlockingCancel::Closed);
    for why in [NoValue::SettledCancelled, NoValue::Lost] {
        assert_eq!(cell.no_value(why), BlockingError::Closed);
    }
}

#[test]
fn a_relay_withdrawal_after_the_handle_cancelled_changes_nothing() {
    let cell = JobCell::<()>::new();
    assert_eq!(cell.cancel(), BlockingCancel::CancelledBeforeStart);
    assert_eq!(cell.withdraw(), WithdrawBeforeStart::AlreadyCancelled);
    assert_eq!(cell.cancel(), BlockingCancel::AlreadyCancelled);
    for why in [NoValue::SettledCancelled, NoValue::Lost] {
        assert_eq!(cell.no_value(why), BlockingError::Cancelled);
    }
}

#[test]
fn no_value_of_a_queued_or_running_job() {
    let cell = JobCell::<()>::new();
    // Settled cancelled with nobody cancelling: a pool that gave it up (pool rule P4).
    assert_eq!(
        cell.no_value(NoValue::SettledCancelled),
        BlockingError::Cancelled
    );
    assert_eq!(cell.no_value(NoValue::Lost), BlockingError::Closed);
    let (_cancel, start) = cell.control();
    assert_eq!(start.claim_for_run(), ClaimForRun::Run);
    assert_eq!(cell.withdraw(), WithdrawBeforeStart::AlreadyRunning);
    assert_eq!(cell.no_value(NoValue::Lost), BlockingError::Closed);
}
