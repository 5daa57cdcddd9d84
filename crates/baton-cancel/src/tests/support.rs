//! Fixtures shared by the crate's tests.

use crate::{CancelBeforeStart, ClaimForRun};

/// A value whose destructor panics.
#[cfg(not(loom))]
pub(super) struct PanicOnDrop;

#[cfg(not(loom))]
impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        panic!("hostile destructor");
    }
}

/// Rules C1–C3 seen from both sides of one race: exactly one of the cancel and the claim won,
/// and each side agrees which (cancel won ⇔ the claim saw `CompleteCancelled`; claim won ⇔
/// the cancel saw `AlreadyRunning`). Only one cancel may have been issued.
pub(super) fn assert_one_winner(cancelled: CancelBeforeStart, claimed: ClaimForRun) {
    match cancelled {
        CancelBeforeStart::CancelledQueued => {
            assert_eq!(claimed, ClaimForRun::CompleteCancelled)
        }
        CancelBeforeStart::AlreadyRunning => assert_eq!(claimed, ClaimForRun::Run),
        CancelBeforeStart::AlreadyCancelled => panic!("only one cancel was issued"),
    }
}
