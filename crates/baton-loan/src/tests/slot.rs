//! The slot's phase changes in windows the public API cannot reach on its own (L4 and L7).

use std::sync::Arc;

use crate::slot::{Borrow, GiveBack, Phase, Rouse, Slot};
use crate::tests::support::test_worker;
use crate::worker::Pending;

/// An outside event announced while the worker is `Offered` must keep its give-back from
/// resting (rule L7: "during Offered/Loaned it marks the loan").
#[test]
fn rouse_during_the_offer_is_not_forgotten() {
    let (worker, unpark, _handle) = test_worker();
    let slot = Arc::new(Slot::new(unpark));
    let requester = {
        let slot = Arc::clone(&slot);
        std::thread::spawn(move || match slot.borrow() {
            Borrow::Loaned(worker) => worker,
            _ => panic!("the requester did not borrow"),
        })
    };
    while slot.phase() != Phase::Requested(0) {
        std::thread::yield_now();
    }
    // The background thread's answer (answer's Requested arm), and before its notify an outside
    // event (e.g. a mailbox message from a foreign thread) arrives.
    slot.offer_then(0, worker, || assert_eq!(slot.rouse(), Rouse::MarkedAway));
    let worker = requester.join().expect("requester");
    // The worker cannot see the event itself (an unapplied mailbox message).
    let given = slot.give_back(worker, Pending::Nothing);
    assert!(
        matches!(given, GiveBack::Returned),
        "the rouse during the offer was forgotten: {given:?}"
    );
    let _ = slot.close();
}
